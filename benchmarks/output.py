#!/usr/bin/env python3
"""What a command's output costs a client, before and after the output budget and feed (issue 29).

    python3 benchmarks/output.py [--runs N] [--json]

Bytes: a command writes 1 MB of text (20,000 lines of 50 bytes); the figure is the
size of the tools/call response a client reads, with the default budget (--max-text
20000) and with the budget out of the way (--max-text 2000000, what every call
returned before). First line: a command prints one line a second, three times; the
figure is how long after it wrote its first line the client has that line, as a
progress message (a request with a progressToken) and, before, in the result (a
request without one). Medians over --runs runs. POSIX or Windows; any Python 3.8+.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MCPSTUDIO = os.path.join(os.path.dirname(HERE), "mcpstudio.py")
TIMEOUT = 30.0
MEGABYTE = """import sys
sys.stdout.write("".join("%06d " % n + "o" * 42 + "\\n" for n in range(20000)))
"""
TICKS = """import time
for n in range(3):
    print("tick %d %.6f" % (n, time.time()), flush=True)
    time.sleep(1)
"""


class Client:
    """mcpstudio over stdio; a reader thread stamps each line with the time it arrived."""

    def __init__(self, *args):
        self.proc = subprocess.Popen([sys.executable, MCPSTUDIO] + list(args), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.lines = []  # (arrival time, raw line)
        self.arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.request(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                       "clientInfo": {"name": "bench", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self):
        for line in self.proc.stdout:
            with self.arrived:
                self.lines.append((time.time(), line))
                self.arrived.notify_all()

    def send(self, message: dict):
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, request_id: int, method: str, params: dict) -> tuple:
        """Send a request; return (arrival time, raw line) of its response."""
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        with self.arrived:
            found = self.arrived.wait_for(lambda: self._response(request_id), TIMEOUT)
        if not found:
            raise SystemExit("no response to %s within %g s" % (method, TIMEOUT))
        return found

    def _response(self, request_id):
        return next((entry for entry in self.lines if json.loads(entry[1]).get("id") == request_id), None)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(TIMEOUT)


def response_bytes(script: str, budget: str) -> int:
    client = Client("--max-text", budget, "--name", "big", sys.executable, script)
    try:
        return len(client.request(2, "tools/call", {"name": "big", "arguments": {}})[1])
    finally:
        client.close()


def first_line_latency(script: str, progress: bool) -> float:
    """Seconds from the command writing its first line to the client having it."""
    client = Client("--name", "ticks", sys.executable, script)
    try:
        params = {"name": "ticks", "arguments": {}}
        if progress:
            params["_meta"] = {"progressToken": "bench"}
        client.request(2, "tools/call", params)
        for arrived, line in client.lines:
            message = json.loads(line)
            if progress:
                text = (message.get("params") or {}).get("message", "")
            else:
                text = "".join(c.get("text", "") for c in (message.get("result") or {}).get("content", []))
            if text.startswith("tick 0 "):
                return arrived - float(text.split()[2])
        raise SystemExit("the first line never reached the client")
    finally:
        client.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per figure (default: 5)")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mcpstudio-bench-") as tmp:
        scripts = {}
        for name, body in (("megabyte.py", MEGABYTE), ("ticks.py", TICKS)):
            scripts[name] = os.path.join(tmp, name)
            with open(scripts[name], "w") as f:
                f.write(body)
        figures = {
            "bytes_before": statistics.median(response_bytes(scripts["megabyte.py"], "2000000") for _ in range(args.runs)),
            "bytes_after": statistics.median(response_bytes(scripts["megabyte.py"], "20000") for _ in range(args.runs)),
            "first_line_before_s": statistics.median(
                first_line_latency(scripts["ticks.py"], False) for _ in range(args.runs)),
            "first_line_after_s": statistics.median(
                first_line_latency(scripts["ticks.py"], True) for _ in range(args.runs)),
        }
    print("A command writing 1 MB: the client reads %d bytes before, %d after (%.0fx less; goal: 20x)"
          % (figures["bytes_before"], figures["bytes_after"], figures["bytes_before"] / figures["bytes_after"]))
    print("Its first line of one a second reaches the client after %.3f s before (in the result), "
          "%.3f s after (a progress message; goal: 0.5 s)"
          % (figures["first_line_before_s"], figures["first_line_after_s"]))
    print("(medians of %d runs, Python %s)" % (args.runs, sys.version.split()[0]))
    if args.json:
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
