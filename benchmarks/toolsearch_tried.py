"""Ranker changes tried for issue 44's agent queries and not kept (this file and the stages it switches are
reverted in the next commit; `git show` this commit to run it again):

    python3 benchmarks/toolsearch_tried.py LIVEMCPBENCH_WHEEL

Each variant ranks the blind sets (recorded blind, unseen, fresh, LiveMCPBench tasks and agent queries) at
1/5/10. Tuned on: LiveMCPBench's agent queries; kept only if it gains there and on the others. None did.
- feedback: pseudo-relevance feedback (RM3), the first pass's best D tools, their T most probable words at weight W
- coordination: each tool's score times (query words it matches / query words) ** P (Lucene's classic coord)
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


def clause_search(power, pattern):
    plain = mcpstudio.ToolIndex.search

    def search(self, query, limit):
        query = mcpstudio.read_shapes(mcpstudio.read_shapes(query, self.stages.values), self.stages.phrases)
        clauses = [clause for clause in re.split(pattern, query) if clause.strip()]
        if len(clauses) < 2:
            return plain(self, query, limit)
        totals = {}
        for clause in clauses:
            scores, context = self.scores(clause), self.servers.scores(clause) if self.servers else {}
            for number, score in scores.items():
                score += self.stages.server_share * context.get(self.server_of[number], 0.0)
                totals[number] = totals.get(number, 0.0) + score ** power
        totals = {number: total ** (1 / power) for number, total in totals.items()}
        return [self.tools[n] for n in heapq.nsmallest(limit, totals, key=lambda n: (-totals[n], n))]
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
    stages = mcpstudio.SEARCH_STAGES
    measure("as it is", loaded)
    for docs, terms, weight in ((3, 10, 0.3), (5, 10, 0.3), (3, 10, 0.5), (10, 10, 0.3), (5, 10, 0.1), (10, 5, 0.1),
                                (5, 10, 0.05)):
        measure("feedback D%d T%d W%.2f" % (docs, terms, weight), loaded, stages=stages._replace(
            feedback=(docs, terms, weight)))
    for power in (0.25, 0.5, 1.0, 2.0):
        measure("coordination P%.2f" % power, loaded, stages=stages._replace(coordination=power))
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
