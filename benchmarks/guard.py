#!/usr/bin/env python3
"""The per-call cost of mcpstudio's guard rails: an audit line, and a cache hit, beside a plain call.

    python3 benchmarks/guard.py [--calls N]

Two `serve` processes over stdio with the same config (a read-only `echo` tool, and the same tool
with "cache"), one of them with "audit"; calls are taken in turns so machine noise falls on every
figure alike. Prints the median and p90 per call in milliseconds: a plain call (spawns echo), the
same with its audit line written, a cache hit (nothing runs), and a cache hit with its audit line.
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

HERE = os.path.dirname(os.path.abspath(__file__))
MCPSTUDIO = os.path.join(os.path.dirname(HERE), "mcpstudio.py")
WARM_UP = 5


class Client:
    """One mcpstudio over stdio, one request at a time."""

    def __init__(self, config: str):
        self.proc = subprocess.Popen([sys.executable, MCPSTUDIO, "serve", "--config", config],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                          "params": params}).encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            message = json.loads(self.proc.stdout.readline())
            if message.get("id") == self.next_id:
                return message

    def timed_call(self, tool: str) -> float:
        started = time.perf_counter()
        reply = self.request("tools/call", {"name": tool, "arguments": {"text": "hello"}})
        assert not reply["result"]["isError"], reply
        return (time.perf_counter() - started) * 1000

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="measured calls of each kind (default: 200)")
    options = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="mcpstudio-guard-bench-")
    tools = [{"name": name, "command": "echo {text}", "annotations": {"readOnlyHint": True}} for name in ("plain", "cached")]
    tools[1]["cache"] = {"ttl": 3600}
    clients = {}
    for audited in (False, True):
        config = os.path.join(folder, "audited.json" if audited else "plain.json")
        with open(config, "w") as f:
            json.dump(dict({"tools": tools}, **({"audit": {"file": os.path.join(folder, "audit.jsonl")}} if audited else {})), f)
        clients[audited] = Client(config)
    kinds = [("plain call", False, "plain"), ("plain call + audit line", True, "plain"),
             ("cache hit", False, "cached"), ("cache hit + audit line", True, "cached")]
    figures = {label: [] for label, _, _ in kinds}
    for round_ in range(WARM_UP + options.calls):
        for label, audited, tool in kinds:
            spent = clients[audited].timed_call(tool)
            if round_ >= WARM_UP:
                figures[label].append(spent)
    for client in clients.values():
        client.close()
    with open(os.path.join(folder, "audit.jsonl")) as f:
        lines = sum(1 for _ in f)
    shutil.rmtree(folder, True)
    print("guard rails, %d calls each (Python %s); audit lines written: %d" % (options.calls, sys.version.split()[0], lines))
    base = statistics.median(figures["plain call"])
    for label, values in figures.items():
        values.sort()
        median = statistics.median(values)
        print("  %-26s median %7.3f ms  p90 %7.3f ms  (%+.3f ms vs plain)" % (
            label, median, values[int(len(values) * 0.9)], median - base))


if __name__ == "__main__":
    main()
