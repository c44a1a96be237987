"""Tool search figures: ranking quality beside FastMCP's BM25SearchTransform, and what search mode
costs and saves on a real listing.

    python3 benchmarks/toolsearch.py [--runs N] [--fastmcp PYTHON] [--no-serving] [--intents FILE ...]

Ranking: every intent of the sets in benchmarks/toolsearch/ is searched among the 289 recorded tools
of corpus.json, named and described as mcpstudio lists them (`server__tool`, "[server] ..."); an intent
is found at k when one of its right tools is among the first k. The sets, and what the ranker has seen
of them (SETS below): intents.json (217, tuned on from the start); heldout.json (79, written before any
tuning); people.json to people35.json (65 each, phrased as people type tasks, each in the voice of other
people, written blind by helpers who had read neither the ranker nor the other sets). heldout and people
to people31 were each measured blind, then tuned on; people32 to people35 are the blind check: measured
on the ranker before the last round of tuning and on the ranker as it is now, their misses never read or
tuned on. From the blind intents it also draws sets of the difficulty of issue 28's held-out set (where
FastMCP's transform finds 0.91 at 5 and at 10) and prints mcpstudio's recall on them. `--intents FILE` adds any set of the same form
([{"q": ..., "tools": ["server__tool", ...]}, ...]) over the same corpus. FastMCP's ranker runs over the
same definitions in its own environment (default /work/tools/fastmcp/bin/python, or
$MCPSTUDIO_FASTMCP_PYTHON; skipped when absent).

Serving: mcpstudio serves the corpus through one fixture upstream per recorded server
(toolsearch_upstream.py); the bytes of every page of tools/list with and without search, the round
trip of tools/list, of a search and of a ping (medians of --runs), and the same search over 10,000
synthetic tools.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import mcpstudio  # noqa: E402

DATA = os.path.join(HERE, "toolsearch")
UPSTREAM = os.path.join(HERE, "toolsearch_upstream.py")
SETS = (("intents", "tuned on"), ("heldout", "tuned on"), ("people", "tuned on"), ("people2", "tuned on"),
        ("people3", "tuned on"), ("people4", "tuned on"), ("people5", "tuned on"), ("people6", "tuned on"),
        ("people7", "tuned on"), ("people8", "tuned on"), ("people9", "tuned on"), ("people10", "tuned on"),
        ("people11", "tuned on"), ("people12", "tuned on"), ("people13", "tuned on"), ("people14", "tuned on"),
        ("people15", "tuned on"), ("people16", "tuned on"), ("people17", "tuned on"), ("people18", "tuned on"),
        ("people19", "tuned on"), ("people20", "tuned on"), ("people21", "tuned on"), ("people22", "tuned on"),
        ("people23", "tuned on"), ("people24", "tuned on"), ("people25", "tuned on"), ("people26", "tuned on"),
        ("people27", "tuned on"), ("people28", "tuned on"), ("people29", "tuned on"),
        ("people30", "tuned on"), ("people31", "tuned on"), ("people32", "blind"), ("people33", "blind"), ("people34", "blind"),
        ("people35", "blind"))


def definitions(corpus: dict) -> list:
    """The corpus's tools as mcpstudio lists them."""
    return [dict(tool, name="%s__%s" % (server, tool["name"]), description=("[%s] %s" % (
        server, tool.get("description") or "")).rstrip()) for server, entry in corpus.items() for tool in entry["tools"]]


def scores(rankings: list, intents: list) -> dict:
    ranks = [next((number for number, name in enumerate(ranked, 1) if name in intent["tools"]), None)
             for ranked, intent in zip(rankings, intents)]
    found = {"r@%d" % k: sum(1 for rank in ranks if rank and rank <= k) / len(ranks) for k in (1, 5, 10)}
    found["mrr"] = sum(1.0 / rank for rank in ranks if rank) / len(ranks)
    found["missed@5"] = [intent["q"] for rank, intent in zip(ranks, intents) if not rank or rank > 5]
    return found


def matched(ours: list, theirs: list, intents: list, draws: int = 1000, size: int = 65, hits: int = 59) -> str:
    """Issue 28's held-out set is one where FastMCP's transform finds 0.91 at 5 and at 10: easier than the blind
    sets here. Sets of that difficulty are drawn from the blind intents (seeded): `hits` of `size` that FastMCP
    finds at 5, the rest ones it misses at 10. Our recall on them: median and 5th percentile of `draws` draws."""
    import random
    found = [(bool(set(a[:5]) & set(i["tools"])), bool(set(a[:10]) & set(i["tools"])),
              bool(set(b[:5]) & set(i["tools"])), bool(set(b[:10]) & set(i["tools"]))) for a, b, i in zip(ours, theirs, intents)]
    easy = [f for f in found if f[2]]
    hard = [f for f in found if not f[3]]
    if len(easy) < hits or len(hard) < size - hits:
        return "difficulty-matched sets: too few blind intents (%d found, %d missed by FastMCP)" % (len(easy), len(hard))
    rng, at5, at10 = random.Random(28), [], []
    for _ in range(draws):
        drawn = rng.sample(easy, hits) + rng.sample(hard, size - hits)
        at5.append(sum(f[0] for f in drawn) / size)
        at10.append(sum(f[1] for f in drawn) / size)
    at5.sort()
    at10.sort()
    return ("difficulty-matched sets (%d draws of %d blind intents, %d that FastMCP finds at 5 and %d it misses at 10:"
            " FastMCP %.3f at 5 and at 10):\n  mcpstudio r@5 median %.3f, 5th percentile %.3f; r@10 median %.3f,"
            " 5th percentile %.3f" % (draws, size, hits, size - hits, hits / size, statistics.median(at5),
                                       at5[draws // 20], statistics.median(at10), at10[draws // 20]))


def fastmcp_rankings(python: str, tools: list, queries: list) -> list:
    job = json.dumps({"tools": tools, "queries": queries, "limit": 10})
    out = subprocess.run([python, os.path.join(HERE, "toolsearch_fastmcp.py")], input=job.encode(),
                         stdout=subprocess.PIPE, check=True).stdout
    return json.loads(out)


class Client:
    """mcpstudio serve over stdio, spoken to as a client would."""

    def __init__(self, config: str, client_name: str = "benchmark"):
        self.process = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(HERE), "mcpstudio.py"),
                                         "serve", "--config", config, "--no-manager-tools"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": client_name, "version": "0"}})
        self.process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')

    def request(self, method: str, params: dict) -> tuple:
        """(result, bytes of the answer line)."""
        self.next_id += 1
        self.process.stdin.write((json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                              "params": params}) + "\n").encode())
        self.process.stdin.flush()
        for line in self.process.stdout:
            message = json.loads(line)
            if message.get("id") == self.next_id:
                return message["result"], len(line)
        raise RuntimeError("mcpstudio exited")

    def listing(self) -> tuple:
        """(tool count, bytes) of every page of tools/list."""
        count, size, cursor = 0, 0, None
        while True:
            result, length = self.request("tools/list", {"cursor": cursor} if cursor else {})
            count, size, cursor = count + len(result["tools"]), size + length, result.get("nextCursor")
            if not cursor:
                return count, size

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def timed(runs: int, action, *args) -> float:
    """The median milliseconds of `action(*args)`."""
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        action(*args)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def config(folder: str, servers: dict, mode: str) -> str:
    """A config of `servers` (config key -> the SERVER argument of toolsearch_upstream.py)."""
    path = os.path.join(folder, "%s-%d.json" % (mode, len(servers)))
    with open(path, "w") as f:
        json.dump({"toolSearch": mode, "mcpServers": {key: {"command": sys.executable, "args": [
            UPSTREAM, os.path.join(DATA, "corpus.json"), server], "eager": True} for key, server in servers.items()}}, f)
    return path


def serving(corpus: dict, runs: int) -> dict:
    figures = {}
    with tempfile.TemporaryDirectory() as folder:
        os.environ["XDG_CACHE_HOME"] = folder
        # 10,000 synthetic tools from two servers: mcpstudio keeps 5,000 of one upstream's listing.
        synthetic = {"synthetic1": "synthetic:5000", "synthetic2": "synthetic:5000"}
        for label, servers in (("corpus", {server: server for server in corpus}), ("synthetic", synthetic)):
            full = Client(config(folder, servers, "off"))
            figures[label + " tools"], figures[label + " full bytes"] = full.listing()
            figures[label + " full ms"] = timed(runs if label == "corpus" else 3, full.listing)  # 10,000: seconds each
            full.close()
            client = Client(config(folder, servers, "on"))
            figures[label + " search-mode tools"], figures[label + " search-mode bytes"] = client.listing()
            query = {"name": "mcpstudio__search_tools", "arguments": {"query": "take a screenshot of the page"}}
            first = {"name": "mcpstudio__search_tools", "arguments": {"query": "create a github issue"}}
            figures[label + " first search ms"] = timed(1, client.request, "tools/call", first)  # builds the index
            pings, searches = [], []
            for _ in range(runs):  # in turns, so that a busy moment of the machine weighs on both alike
                pings.append(timed(1, client.request, "ping", {}))
                searches.append(timed(1, client.request, "tools/call", query))
            figures[label + " ping ms"], figures[label + " search ms"] = statistics.median(pings), statistics.median(searches)
            client.close()
    return figures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--fastmcp", default=os.environ.get("MCPSTUDIO_FASTMCP_PYTHON", "/work/tools/fastmcp/bin/python"))
    parser.add_argument("--misses", action="store_true", help="print the tuned-on sets' intents missed at 5")
    parser.add_argument("--intents", action="append", default=[], metavar="FILE", help="another set of intents to rank")
    parser.add_argument("--no-serving", action="store_true", help="ranking figures only")
    args = parser.parse_args(argv)
    with open(os.path.join(DATA, "corpus.json")) as f:
        corpus = json.load(f)
    tools = definitions(corpus)
    index = mcpstudio.ToolIndex(tools)
    print("corpus: %d tools from %d servers" % (len(tools), len(corpus)))
    print("%-40s %6s %6s %6s %6s" % ("ranker / intent set", "r@1", "r@5", "r@10", "MRR"))
    sets = [(os.path.join(DATA, name + ".json"), seen) for name, seen in SETS] + [(path, "given") for path in args.intents]
    pooled = {}  # (ranker, what it has seen of the sets) -> (rankings, intents) of all those sets
    for path, seen in sets:
        with open(path) as f:
            intents = json.load(f)
        unknown = sorted({name for intent in intents for name in intent["tools"]} - {tool["name"] for tool in tools})
        if unknown:
            sys.exit("%s: no such tool in corpus.json: %s (names are server__tool)" % (path, ", ".join(unknown)))
        title = "%s (%d, %s)" % (os.path.basename(path)[:-5], len(intents), seen)
        queries = [intent["q"] for intent in intents]
        rankers = [("mcpstudio", [[tool["name"] for tool in index.search(query, 10)] for query in queries])]
        if os.path.exists(args.fastmcp):
            rankers.append(("fastmcp BM25", fastmcp_rankings(args.fastmcp, tools, queries)))
        for name, rankings in rankers:
            pool = pooled.setdefault((name, seen), ([], []))
            pool[0].extend(rankings)
            pool[1].extend(intents)
            found = scores(rankings, intents)
            print("%-40s %6.3f %6.3f %6.3f %6.3f" % ("%s / %s" % (name, title), found["r@1"],
                                                    found["r@5"], found["r@10"], found["mrr"]))
            if args.misses and name == "mcpstudio" and seen == "tuned on":
                for query in found["missed@5"]:
                    print("    missed at 5: %s -> %s" % (query, [tool["name"] for tool in index.search(query, 3)]))
    for (name, seen), (rankings, intents) in pooled.items():
        found = scores(rankings, intents)
        print("%-40s %6.3f %6.3f %6.3f %6.3f" % ("%s / all %s (%d)" % (name, seen, len(intents)), found["r@1"],
                                                found["r@5"], found["r@10"], found["mrr"]))
    blind = pooled.get(("mcpstudio", "blind")), pooled.get(("fastmcp BM25", "blind"))
    if all(blind):
        print("\n" + matched(blind[0][0], blind[1][0], blind[0][1]))
    if args.no_serving:
        return 0
    figures = serving(corpus, args.runs)
    for label in ("corpus", "synthetic"):
        print("\n%s: %d tools behind one mcpstudio (medians of %d runs; the full listing of 10,000: of 3)" % (
            label, figures[label + " tools"], args.runs))
        print("  tools/list, every page:  full %d bytes, %.1f ms; search mode %d tools, %d bytes (%.2f %%)" % (
            figures[label + " full bytes"], figures[label + " full ms"], figures[label + " search-mode tools"],
            figures[label + " search-mode bytes"], 100.0 * figures[label + " search-mode bytes"] / figures[label + " full bytes"]))
        print("  a search round trip %.2f ms; a ping's %.2f ms: the search adds %.2f ms" % (
            figures[label + " search ms"], figures[label + " ping ms"],
            figures[label + " search ms"] - figures[label + " ping ms"]))
        print("  the first search of a tool set (it builds the index): %.1f ms" % figures[label + " first search ms"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
