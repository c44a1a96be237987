"""Ranker changes tried for issue 44's agent queries, each a subclass of its ToolIndex (or a stage setting) here:

    python3 benchmarks/toolsearch_tried.py LIVEMCPBENCH_WHEEL

Each variant ranks the blind sets (recorded blind, unseen, fresh, LiveMCPBench tasks and agent queries) at
1/5/10. Tuned on: LiveMCPBench's agent queries; kept only if it gains there and on the others. Of the second
round's variants none did:
- feedback: pseudo-relevance feedback (RM3's relevance model: Lavrenko and Croft 2001, Abdul-Jaleel et al.
  2004), the first pass's best D tools, their T most probable words (each tool weighed by its share of the
  scores) added at weight W
- coordination: each tool's score times (query words it matches / query words) ** P (Lucene's classic coord)
- server scale: the server's score put on the tools' scale before its share S is added (the best server's
  score counted as the best tool's: CombSUM over max-normalized scores, after Lee 1997), so that a long query,
  which its server's one long text matches more of than any tool's, does not let the server decide
- clauses: the query split at " or " (and at "+" and ","), each clause scored alone, combined by the p-norm
  OR of the extended Boolean model (Salton, Fox and Wu 1983)
- learned: expansions learned at index time, a word to the words that share its tools (name against
  description, in one direction or both), at least S tools, P(b|a) >= M, weight W, the best K of a word

Issue 44's third round (`--only round3`, or a part of a label): BM25F with one saturation, a trigram fallback,
joined neighbouring words, a short query's label weight, names without their server's prefix, Porter2's
invariant words, meta stop words, and descriptions the split cannot read (the name stands in), alone and with
the server scale. One of them is in mcpstudio: the unread description (ASCII_LEAST, with the tool's whole name in
front, where `unread_index` puts the name without its server's prefix). The server scale at 0.2 went in with it
and was taken out again in the fourth round: it gained only on the agent queries. The figures benchmarks/README.md
gives for the second and third rounds were measured against the ranker before either (7155ff6); run now, every
variant is measured on top of the ranker with the unread-description rule, so on LiveMCPBench "as it is" is that
rule's figures and the `unread` variants add the name a second time.
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
    for number in totals:  # as ToolIndex.search
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


def server_scale_index(share, base=mcpstudio.ToolIndex):
    class ServerScale(base):
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


def bm25f_index(label, base=mcpstudio.ToolIndex):
    """BM25F with one saturation (Robertson, Zaragoza and Taylor, "Simple BM25 extension to multiple weighted
    fields", CIKM 2004; Lucene's CombinedFieldQuery): each field's count of a word, normalized by the field's
    length and weighted (the label's fields by `label` on top of SEARCH_FIELDS), summed into one pseudo-count
    before k1 saturates it, instead of the label and the body saturated apart and summed."""
    class BM25F(base):
        def __init__(self, tools, stages=mcpstudio.SEARCH_STAGES):
            super().__init__(tools, stages)
            weights, label_weight = stages.fields
            stems = {}
            fields = [[mcpstudio.search_words(text, stems, stages) for text in self._fields(tool)] for tool in tools]
            averages = [sum(len(words[column]) for words in fields) / max(len(tools), 1) or 1.0
                        for column in range(len(weights))]
            scale = label_weight + 1.0  # the old score's top (label and body both saturated): the server's share keeps its scale
            self.postings = {}
            for number, words in enumerate(fields):
                counts = {}
                for column, (weight, group) in enumerate(weights):
                    share = weight * (label if group == 0 else 1.0) / (
                        1 - self.B + self.B * len(words[column]) / averages[column])
                    for word in words[column]:
                        counts[word] = counts.get(word, 0.0) + share
                for word, count in counts.items():
                    self.postings.setdefault(word, []).append((number, scale * count * (self.K1 + 1) / (count + self.K1)))
    return BM25F


def trigram_index(least, weight, best, base=mcpstudio.ToolIndex):
    """A query word the index lacks (and no compound spells) finds the index's words that share its letter
    trigrams, Dice's coefficient at least `least`, for `weight` times that of a match, the best `best`."""
    class Trigrams(base):
        def __init__(self, tools, stages=mcpstudio.SEARCH_STAGES):
            super().__init__(tools, stages)
            self.by_trigram = collections.defaultdict(list)
            for word in self.postings:
                for gram in set(trigrams(word)):
                    self.by_trigram[gram].append(word)

        def expand(self, word):
            found = super().expand(word)
            if word in self.postings or len(word) < 4 or any(share >= 0.5 for share in found.values()):
                return found
            grams = set(trigrams(word))
            shared = collections.Counter(other for gram in grams for other in self.by_trigram.get(gram, ()))
            near = sorted(((2 * n / (len(grams) + len(set(trigrams(other)))), other) for other, n in shared.items()),
                          reverse=True)
            for similarity, other in near[:best]:
                if similarity >= least:
                    found.setdefault(other, weight * similarity)
            return found
    return Trigrams


def trigrams(word):
    return [word[i:i + 3] for i in range(len(word) - 2)]


def joined_index(base=mcpstudio.ToolIndex):
    """Two neighbouring query words that the index has as one word (Ba Zi: bazi; web site: website) also ask for it."""
    class Joined(base):
        def scores(self, query):
            words = self.stages.split(query)
            joined = [self.stages.stem(a + b) for a, b in zip(words, words[1:])]
            extra = [word for word in joined if word in self.postings]
            return super().scores(query + " " + " ".join(extra) if extra else query)
    return Joined


def short_label_index(most, label, base=mcpstudio.ToolIndex):
    """A query of `most` words or fewer ranks with the label's weight `label` (the name says more in a short query)."""
    class ShortLabel(base):
        def __init__(self, tools, stages=mcpstudio.SEARCH_STAGES):
            super().__init__(tools, stages)
            self.short = base(tools, stages._replace(fields=(stages.fields[0], label)))

        def search(self, query, limit):
            words = mcpstudio.search_words(read(self, query), {}, self.stages)
            return (self.short if len(set(words)) <= most else super()).search(query, limit)
    return ShortLabel


def measure(label, loaded, make=mcpstudio.ToolIndex, stages=mcpstudio.SEARCH_STAGES):
    cells = []
    for _, corpus, sets in loaded:
        index = make(toolsearch.definitions(corpus), stages)
        for set_name, intents, seen in sets:
            if seen == "blind":
                found = toolsearch.scores([[tool["name"] for tool in index.search(i["q"], 10)] for i in intents], intents)
                cells.append("%s %s" % (set_name, toolsearch.cell(found)))
    print("%-34s %s" % (label, " | ".join(cells)), flush=True)


PORTER2_INVARIANTS = frozenset("sky news howe atlas cosmos bias andes".split())  # Snowball English: left as they are


def invariant_stem(word):
    """mcpstudio's stem, but the words Porter2 (the Snowball English stemmer, Porter 2001) leaves unstemmed
    stay whole: `news` is not the plural of `new`."""
    return word if word in PORTER2_INVARIANTS else mcpstudio._stem(word)


def unprefixed_index(base=mcpstudio.ToolIndex):
    """A tool's name without its server's prefix (`okppt__insert_svg`: insert svg): the server's name is in the
    server field, so a query that names a server does not count it again in every tool's label."""
    class Unprefixed(base):
        @staticmethod
        def _fields(tool):
            name, title, server, description, parameters = mcpstudio.ToolIndex._fields(tool)
            if server and name.startswith(server + "__"):
                name = name[len(server) + 2:]
            return name, title, server, description, parameters
    return Unprefixed


def unread_index(least, base=mcpstudio.ToolIndex):
    """A description whose letters are less than `least` ASCII (LiveMCPBench's trends-hub, in Chinese) is one the
    index cannot read: the tool's name stands in for it in the body, as if the author had described it by its name."""
    class Unread(base):
        @staticmethod
        def _fields(tool):
            name, title, server, description, parameters = mcpstudio.ToolIndex._fields(tool)
            letters = [c for c in description if c.isalpha()]
            latin = sum(1 for c in letters if c.isascii())
            if letters and latin / len(letters) < least:
                own = name[len(server) + 2:] if server and name.startswith(server + "__") else name
                description = "%s %s" % (own, description)
            return name, title, server, description, parameters
    return Unread


def stages_with(**changes):
    return mcpstudio.SEARCH_STAGES._replace(**changes)


def round3():
    """(label, index class): issue 44's third round."""
    found = [("bm25f L%.1f" % label, bm25f_index(label)) for label in (1.0, 1.5, 3.0, 5.0)] + [
        ("trigrams D%.2f W%.1f K%d" % setting, trigram_index(*setting)) for setting in (
            (0.5, 0.4, 3), (0.6, 0.5, 2), (0.4, 0.3, 3))] + [
        ("joined words", joined_index())] + [
        ("short label N%d L%.1f" % setting, short_label_index(*setting)) for setting in ((3, 3.0), (4, 2.5), (5, 3.0))] + [
        ("server scale S0.2 + bm25f L3.0", server_scale_index(0.2, bm25f_index(3.0))),
        ("server scale S0.2 + trigrams + joined", server_scale_index(0.2, trigram_index(0.5, 0.4, 3, joined_index()))),
        ("unprefixed names", unprefixed_index()),
        ("unprefixed names + server scale S0.2", server_scale_index(0.2, unprefixed_index())),
    ]
    found = [(label, make, mcpstudio.SEARCH_STAGES) for label, make in found] + [
        ("porter2 invariants", mcpstudio.ToolIndex, stages_with(stem=invariant_stem)),
        ("porter2 invariants + server scale S0.2", server_scale_index(0.2), stages_with(stem=invariant_stem)),
        ("meta stop words (tool server service platform)", mcpstudio.ToolIndex, stages_with(
            stop_words=mcpstudio.STOP_WORDS | {"tool", "tools", "server", "servers", "service", "services", "platform"})),
    ]
    meta = mcpstudio.STOP_WORDS | {"tool", "tools", "server", "servers", "service", "services", "platform"}
    for server in ((0.5, 0), (1.0, 0), (1.0, 1), (0.75, 0)):
        fields = list(mcpstudio.SEARCH_FIELDS)
        fields[2] = server
        found.append(("unprefixed names, server field %.2f in %s" % (server[0], "label" if server[1] == 0 else "body"),
                      unprefixed_index(), stages_with(fields=(tuple(fields), mcpstudio.LABEL_WEIGHT))))
    found += [
        ("porter2 + meta stop words + server scale S0.2", server_scale_index(0.2), stages_with(
            stem=invariant_stem, stop_words=meta)),
        ("porter2 + meta stop words + unprefixed", unprefixed_index(), stages_with(stem=invariant_stem, stop_words=meta)),
        ("unread descriptions 0.5", unread_index(0.5), mcpstudio.SEARCH_STAGES),
        ("unread descriptions 0.5 + porter2", unread_index(0.5), stages_with(stem=invariant_stem)),
        ("unread descriptions 0.3", unread_index(0.3), mcpstudio.SEARCH_STAGES),
        ("unread descriptions 0.8", unread_index(0.8), mcpstudio.SEARCH_STAGES),
        ("unread descriptions 0.5 + server scale S0.2", server_scale_index(0.2, unread_index(0.5)), mcpstudio.SEARCH_STAGES),
        ("unread descriptions 0.5 + server scale S0.1", server_scale_index(0.1, unread_index(0.5)), mcpstudio.SEARCH_STAGES),
        ("unread descriptions 0.5 + server scale S0.3", server_scale_index(0.3, unread_index(0.5)), mcpstudio.SEARCH_STAGES),
        ("unread descriptions 0.5 + server scale S0.35", server_scale_index(0.35, unread_index(0.5)), mcpstudio.SEARCH_STAGES),
        ("unread descriptions 0.5 + porter2 + server scale S0.2", server_scale_index(0.2, unread_index(0.5)),
         stages_with(stem=invariant_stem)),
        ("unread descriptions 0.5 + meta stop words", unread_index(0.5), stages_with(stop_words=meta)),
        ("unread descriptions 0.5 + meta stop words + server scale S0.2", server_scale_index(0.2, unread_index(0.5)),
         stages_with(stop_words=meta)),
        ("unread descriptions 0.5 + porter2 + meta stop words", unread_index(0.5), stages_with(stem=invariant_stem, stop_words=meta)),
        ("unread descriptions 0.5 + porter2 + meta stop words + server scale S0.2", server_scale_index(0.2, unread_index(0.5)),
         stages_with(stem=invariant_stem, stop_words=meta)),
    ]
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("livemcpbench")
    parser.add_argument("--only", default="", help="only the variants whose label contains this (the third round's: round3)")
    args = parser.parse_args()
    loaded = toolsearch.corpora(argparse.Namespace(intents=[], livemcpbench=args.livemcpbench))
    measure("as it is", loaded)
    if args.only:
        for label, make, stages in round3():
            if args.only in label or args.only == "round3":
                measure(label, loaded, make=make, stages=stages)
        return
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
