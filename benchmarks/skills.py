#!/usr/bin/env python3
"""How long skills/list takes for many skills, beside tools/list of the same server.

    python3 benchmarks/skills.py [--skills 1000] [--files 5] [--runs 5] [--json]

Writes SKILLS skill folders of FILES files each (SKILL.md and FILES-1 files
of about 2 KB, in teams/<team>/<skill>), serves them with
`mcpstudio.py --skills DIR echo "{message}"` over stdio, and times, after
`initialize`: the first skills/list (every page; each file hashed once), the
repeated one (digests from the stat-keyed cache), tools/list, resources/list
(every page), one skills/get and one resources/read. Medians of RUNS runs,
each a fresh server; POSIX only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

MCPSTUDIO = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "mcpstudio.py")


def make_skills(root: str, count: int, files: int):
    for i in range(count):
        folder = os.path.join(root, "teams", "team-%02d" % (i % 20), "skill-%04d" % i)
        os.makedirs(os.path.join(folder, "references"))
        with open(os.path.join(folder, "SKILL.md"), "w") as f:
            f.write("---\nname: skill-%04d\ndescription: >-\n  Skill number %d, for the benchmark.\n"
                    "  Use when measuring.\nmetadata:\n  version: \"1.%d\"\n  tags: [bench, t%d]\n---\n# Skill %d\n\n%s"
                    % (i, i, i % 7, i % 20, i, "Do the thing step by step.\n" * 40))
        for n in range(files - 1):
            with open(os.path.join(folder, "references", "ref-%d.md" % n), "w") as f:
                f.write(("Reference %d of skill %d.\n" % (n, i)) * 80)


class Client:
    """mcpstudio over stdio: one request at a time."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 0

    def request(self, method, params=None) -> dict:
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                          "params": params or {}}).encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            message = json.loads(self.proc.stdout.readline())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError("%s: %s" % (method, message["error"]))
                return message["result"]

    def all_pages(self, method, key) -> list:
        items, cursor = [], None
        while True:
            result = self.request(method, {"cursor": cursor} if cursor else {})
            items.extend(result[key])
            cursor = result.get("nextCursor")
            if not cursor:
                return items

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(10)


def timed(function):
    start = time.perf_counter()
    value = function()
    return (time.perf_counter() - start) * 1000, value


def one_run(root: str) -> dict:
    client = Client([sys.executable, MCPSTUDIO, "--skills", root, "echo", "{message}"])
    try:
        client.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": "bench", "version": "0"}})
        figures = {}
        figures["skills/list, first"], skills = timed(lambda: client.all_pages("skills/list", "skills"))
        figures["skills/list, repeated"], again = timed(lambda: client.all_pages("skills/list", "skills"))
        assert again == skills
        figures["tools/list"], _ = timed(lambda: client.request("tools/list"))
        figures["resources/list (every page)"], resources = timed(lambda: client.all_pages("resources/list", "resources"))
        uri = skills[len(skills) // 2]["uri"]
        figures["skills/get"], _ = timed(lambda: client.request("skills/get", {"uri": uri}))
        figures["resources/read of a SKILL.md"], _ = timed(lambda: client.request("resources/read", {"uri": uri}))
        figures["counts"] = (len(skills), sum(len(s["resources"]) for s in skills), len(resources))
        return figures
    finally:
        client.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--files", type=int, default=5)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="mcpstudio-skills-bench-")
    try:
        make_skills(tmp, args.skills, args.files)
        runs = [one_run(tmp) for _ in range(args.runs)]
    finally:
        shutil.rmtree(tmp, True)
    skills, files, resources = runs[0]["counts"]
    medians = {key: statistics.median(run[key] for run in runs) for key in runs[0] if key != "counts"}
    if args.json:
        print(json.dumps({"skills": skills, "files": files, "resources": resources, "ms": medians}, indent=2))
        return 0
    print("%d skills, %d files listed in skills/list, %d resources; Python %s; median of %d fresh servers"
          % (skills, files, resources, sys.version.split()[0], args.runs))
    for key, value in medians.items():
        print("  %-32s %9.1f ms" % (key, value))
    return 0


if __name__ == "__main__":
    sys.exit(main())
