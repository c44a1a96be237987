"""Ranker changes tried for issue 44's agent queries and not kept in mcpstudio, each a subclass of its ToolIndex
here (mcpstudio itself is unchanged by them):

    python3 benchmarks/toolsearch_tried.py LIVEMCPBENCH_WHEEL

Each variant ranks the blind sets (recorded blind, unseen, fresh, LiveMCPBench tasks and agent queries) at
1/5/10. Tuned on: LiveMCPBench's agent queries; kept only if it gains there and on the others. None did.
- feedback: pseudo-relevance feedback (RM3's relevance model: Lavrenko and Croft 2001, Abdul-Jaleel et al.
  2004), the first pass's best D tools, their T most probable words (each tool weighed by its share of the
  scores) added at weight W
- coordination: each tool's score times (query words it matches / query words) ** P (Lucene's classic coord)
- server scale: the server's score put on the tools' scale before its share S is added (the best server's
  score counted as the best tool's: max normalization, as in Fox and Shaw's CombSUM), so that a long query,
  which its server's one long text matches more of than any tool's, does not let the server decide
- clauses: the query split at " or " (and at "+" and ","), each clause scored alone, combined by the p-norm
  OR of the extended Boolean model (Salton, Fox and Wu 1983)
- learned: expansions learned at index time, a word to the words that share its tools (name against
  description, in one direction or both), at least S tools, P(b|a) >= M, weight W, the best K of a word
"""
import argparse
import collections
import heapq
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import toolsearch  # noqa: E402

mcpstudio = toolsearch.mcpstudio


def feedback_words(found, words_of, asked, terms):
    """RM3's expansion words: the `terms` words most probable in the tools `found` ([(tool number, score)]),
    each tool weighed by its share of the scores, the query's own words (`asked`) left out -> {word: weight},
    the most probable 1.0"""
    total = sum(score for _, score in found) or 1.0
    model = {}
    for number, score in found:
        counts = words_of[number]
        size = sum(counts.values()) or 1
        for word, count in counts.items():
            if word not in asked:
                model[word] = model.get(word, 0.0) + score / total * count / size
    best = sorted(model.items(), key=lambda item: (-item[1], item[0]))[:terms]
    return {word: weight / best[0][1] for word, weight in best} if best else {}


def ranked(index, totals, limit):
    return [index.tools[n] for n in heapq.nsmallest(limit, totals, key=lambda n: (-totals[n], n))]


def read(index, query):
    return mcpstudio.read_shapes(mcpstudio.read_shapes(query, index.stages.values), index.stages.phrases)


def first_pass(index, query):
    """mcpstudio's own scores of `query` (already read), its server's share added."""
    totals, context = index.scores(query), index.servers.scores(query) if index.servers else {}
    for number in totals:
        totals[number] += index.stages.server_share * context.get(index.server_of[number], 0.0)
    return totals


def feedback_index(docs, terms, weight):
    class Feedback(mcpstudio.ToolIndex):
        def __init__(self, tools, stages=mcpstudio.SEARCH_STAGES):
            super().__init__(tools, stages)
            self.words_of = [collections.Counter(word for text in self._fields(tool)
                                                 for word in mcpstudio.search_words(text, {}, stages)) for tool in tools]

        def search(self, query, limit):
            query = read(self, query)
            totals = first_pass(self, query)
            top = heapq.nsmallest(docs, totals, key=lambda n: (-totals[n], n))
            asked = set(mcpstudio.search_words(query, {}, self.stages))
            for word, share in feedback_words([(n, totals[n]) for n in top], self.words_of, asked, terms).items():
                for number, score in self.postings.get(word, ()):
                    totals[number] = totals.get(number, 0.0) + weight * share * self.idf[word] * score
            return ranked(self, totals, limit)
    return Feedback


def coordination_index(power):
    class Coordination(mcpstudio.ToolIndex):
        def scores(self, query):
            totals = super().scores(query)
            words = list(dict.fromkeys(mcpstudio.search_words(query, {}, self.stages)))
            if len(words) > 1:
                matched = collections.Counter(number for word in words for number in {
                    number for other in self.expand(word) for number, _ in self.postings[other]})
                for number in totals:
                    totals[number] *= (matched[number] / len(words)) ** power
            return totals
    return Coordination


def server_scale_index(share):
    class ServerScale(mcpstudio.ToolIndex):
        def search(self, query, limit):
            query = read(self, query)
            totals, context = self.scores(query), self.servers.scores(query) if self.servers else {}
            scale = max(totals.values()) / max(context.values()) if totals and context else 0.0
            for number in totals:
                totals[number] += share * scale * context.get(self.server_of[number], 0.0)
            return ranked(self, totals, limit)
    return ServerScale


def clause_search(power, pattern):
    plain = mcpstudio.ToolIndex.search

    def search(self, query, limit):
        query = read(self, query)
        clauses = [clause for clause in re.split(pattern, query) if clause.strip()]
        if len(clauses) < 2:
            return plain(self, query, limit)
        totals = {}
        for clause in clauses:
            for number, score in first_pass(self, clause).items():
                totals[number] = totals.get(number, 0.0) + score ** power
        return ranked(self, {number: total ** (1 / power) for number, total in totals.items()}, limit)
    return search


def learned_index(support, least, weight, best, direction):
    class Learned(mcpstudio.ToolIndex):
        def __init__(self, tools, stages=mcpstudio.SEARCH_STAGES):
            super().__init__(tools, stages)
            pairs, found = collections.Counter(), collections.Counter()
            for tool in tools:
                name, _, server, description, _ = self._fields(tool)
                own = set(mcpstudio.search_words(server, {}, stages))
                named = set(mcpstudio.search_words(name, {}, stages)) - own
                said = set(mcpstudio.search_words(description, {}, stages)) - own
                found.update(named | said)
                for a in named:
                    for b in said - {a}:
                        if direction in ("both", "name"):
                            pairs[a, b] += 1
                        if direction in ("both", "description"):
                            pairs[b, a] += 1
            self.learned = collections.defaultdict(list)
            for (a, b), count in pairs.items():
                if count >= support and count / found[a] >= least:
                    self.learned[a].append((count / found[a], b))

        def expand(self, word):
            found = super().expand(word)
            for share, other in sorted(self.learned.get(word, ()), reverse=True)[:best]:
                found.setdefault(other, weight * share)
            return found
    return Learned


def measure(label, loaded, make=mcpstudio.ToolIndex, stages=mcpstudio.SEARCH_STAGES):
    cells = []
    for _, corpus, sets in loaded:
        index = make(toolsearch.definitions(corpus), stages)
        for set_name, intents, seen in sets:
            if seen == "blind":
                found = toolsearch.scores([[tool["name"] for tool in index.search(i["q"], 10)] for i in intents], intents)
                cells.append("%s %s" % (set_name, toolsearch.cell(found)))
    print("%-34s %s" % (label, " | ".join(cells)), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("livemcpbench")
    loaded = toolsearch.corpora(argparse.Namespace(intents=[], livemcpbench=parser.parse_args().livemcpbench))
    measure("as it is", loaded)
    for docs, terms, weight in ((3, 10, 0.3), (5, 10, 0.3), (3, 10, 0.5), (10, 10, 0.3), (5, 10, 0.1), (10, 5, 0.1),
                                (5, 10, 0.05)):
        measure("feedback D%d T%d W%.2f" % (docs, terms, weight), loaded, make=feedback_index(docs, terms, weight))
    for power in (0.25, 0.5, 1.0, 2.0):
        measure("coordination P%.2f" % power, loaded, make=coordination_index(power))
    for share in (0.1, 0.2, 0.3, 0.5):
        measure("server scale S%.1f" % share, loaded, make=server_scale_index(share))
    plain = mcpstudio.ToolIndex.search
    for power, pattern in ((1, r"\bor\b"), (2, r"\bor\b"), (4, r"\bor\b"), (2, r"\bor\b|\+|,")):
        mcpstudio.ToolIndex.search = clause_search(power, pattern)
        measure("clauses p%d %s" % (power, pattern), loaded)
    mcpstudio.ToolIndex.search = plain
    for setting in ((3, 0.5, 0.5, 3, "both"), (5, 0.5, 0.4, 3, "both"), (2, 0.3, 0.3, 5, "both"),
                    (3, 0.5, 0.5, 3, "description"), (5, 0.5, 0.4, 3, "description"), (3, 0.5, 0.5, 3, "name")):
        measure("learned S%d M%.1f W%.1f K%d %s" % setting, loaded, make=learned_index(*setting))


if __name__ == "__main__":
    main()
