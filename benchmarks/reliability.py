#!/usr/bin/env python3
"""Load figures for mcpstudio's reliability suite (issue 11).

    python3 benchmarks/reliability.py [--sequential N] [--concurrent N] [--runs N] [--json]

Drives mcpstudio over stdio as a client would, in two modes: template mode
(`mcpstudio.py echo {message}`: every call runs the `echo` command) and the
aggregator (`serve --config` with one upstream MCP server whose `echo` tool
answers in-process: every call is forwarded). In each mode: N sequential
calls (default 10,000), then N concurrent calls written all at once
(default 1,000). Every call carries its own message and must be answered
exactly once, with its own id and its own text; anything else stops the run
with an error. Figures: calls per second, p50 and p99 latency, and resident
memory of mcpstudio at the start (after initialize) and at the end. With
--runs N each figure is the median over N runs. Standard library only; the
memory figures need Linux (/proc).

The unit suite (test_mcpstudio.LoadTests) runs the same code with small
counts; this script is the long mode.
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
TIMEOUT = 120.0  # seconds any one wait may take


class LoadError(Exception):
    """A call answered twice, never, with another id or another call's text."""


def upstream_main():
    """The aggregator's upstream: a stdio MCP server whose `echo` tool answers in-process."""
    tool = {"name": "echo", "description": "Echo.", "inputSchema": {
        "type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}}
    out = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        method, params = request.get("method"), request.get("params") or {}
        if "id" not in request:
            continue
        if method == "initialize":
            result = {"protocolVersion": params.get("protocolVersion"), "capabilities": {"tools": {}},
                      "serverInfo": {"name": "load-upstream", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [tool]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": params["arguments"]["message"] + "\n"}]}
        elif method == "ping":
            result = {}
        else:
            out.write(json.dumps({"jsonrpc": "2.0", "id": request["id"],
                                  "error": {"code": -32601, "message": "no %s" % method}}) + "\n")
            out.flush()
            continue
        out.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}) + "\n")
        out.flush()


def rss_kib(pid: int):
    """Resident memory of `pid` in KiB (Linux), or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class Client:
    """An MCP client over stdio that records when each reply arrived and how often."""

    def __init__(self, argv, env=None):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        self.lock = threading.Condition()
        self.replies = {}    # id -> (reply, monotonic time it arrived)
        self.twice = []      # ids answered more than once
        self.garbage = []    # stdout lines that are not JSON-RPC
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            arrived = time.monotonic()
            try:
                message = json.loads(line)
            except ValueError:
                self.garbage.append(line[:200])
                continue
            if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
                self.garbage.append(line[:200])
                continue
            if "id" not in message or "method" in message:
                continue  # a notification
            with self.lock:
                if message["id"] in self.replies:
                    self.twice.append(message["id"])
                self.replies[message["id"]] = (message, arrived)
                self.lock.notify_all()

    def write(self, messages):
        self.proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        self.proc.stdin.flush()

    def wait(self, ids, timeout=TIMEOUT):
        with self.lock:
            if not self.lock.wait_for(lambda: all(i in self.replies for i in ids), timeout):
                missing = [i for i in ids if i not in self.replies]
                raise LoadError("%d calls unanswered after %.0f s (first: %r)" % (len(missing), timeout, missing[:5]))

    def request(self, request_id, method, params):
        self.write([{"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}])
        self.wait([request_id])
        return self.replies[request_id][0]

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
        finally:
            self.proc.stdout.close()


def call(request_id, tool):
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": tool, "arguments": {"message": "m-%s" % request_id}}}


def check(client, ids):
    """Each id answered once, with a result holding its own text."""
    if client.twice:
        raise LoadError("answered more than once: %r" % client.twice[:5])
    if client.garbage:
        raise LoadError("not JSON-RPC on stdout: %r" % client.garbage[:3])
    for request_id in ids:
        reply = client.replies[request_id][0]
        result = reply.get("result") or {}
        text = "".join(c.get("text", "") for c in result.get("content", []))
        if result.get("isError") or text != "m-%s\n" % request_id:
            raise LoadError("call %r got %r" % (request_id, json.dumps(reply)[:300]))


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def run_load(argv, tool, sequential, concurrent, env=None) -> dict:
    """Drive one mcpstudio: `sequential` calls one after another, then `concurrent` at once.

    Returns the figures; raises LoadError if any call is not answered exactly once with its own
    id and text, or mcpstudio does not exit 0 when its stdin closes."""
    client = Client(argv, env)
    try:
        client.request("init", "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                              "clientInfo": {"name": "reliability", "version": "1"}})
        client.write([{"jsonrpc": "2.0", "method": "notifications/initialized"}])
        client.request("warm", "tools/call", call("warm", tool)["params"])
        rss_start = rss_kib(client.proc.pid)
        latencies = []
        started = time.monotonic()
        ids = []
        for n in range(sequential):
            request_id = n + 1
            sent = time.monotonic()
            client.write([call(request_id, tool)])
            client.wait([request_id])
            latencies.append(client.replies[request_id][1] - sent)
            ids.append(request_id)
        seq_seconds = time.monotonic() - started
        burst = ["c-%d" % n for n in range(concurrent)]
        sent = time.monotonic()
        client.write([call(request_id, tool) for request_id in burst])
        client.wait(burst)
        burst_latencies = [client.replies[i][1] - sent for i in burst]
        burst_seconds = max(burst_latencies) if burst else 0.0
        check(client, ids + burst)
        rss_end = rss_kib(client.proc.pid)
        ping = client.request("final-ping", "ping", {})
        if ping.get("result") != {}:
            raise LoadError("ping at the end got %r" % ping)
    finally:
        code = client.close()
    if code != 0:
        raise LoadError("mcpstudio exited %s" % code)
    return {
        "sequential": sequential, "concurrent": concurrent,
        "sequential_calls_per_s": sequential / seq_seconds if sequential else None,
        "sequential_p50_ms": percentile(latencies, 0.5) * 1000 if latencies else None,
        "sequential_p99_ms": percentile(latencies, 0.99) * 1000 if latencies else None,
        "concurrent_calls_per_s": concurrent / burst_seconds if burst else None,
        "concurrent_p50_ms": percentile(burst_latencies, 0.5) * 1000 if burst else None,
        "concurrent_p99_ms": percentile(burst_latencies, 0.99) * 1000 if burst else None,
        "rss_start_mib": rss_start / 1024 if rss_start else None,
        "rss_end_mib": rss_end / 1024 if rss_end else None,
    }


def aggregator_config(folder: str, python: str = sys.executable) -> str:
    """A config with one upstream: this script run with --upstream."""
    path = os.path.join(folder, "load.json")
    with open(path, "w") as f:
        json.dump({"mcpServers": {"up": {"command": python, "args": [os.path.abspath(__file__), "--upstream"]}}}, f)
    return path


def modes(folder: str, python: str = sys.executable) -> list:
    """[(label, argv, tool, env)] of the two modes measured."""
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(folder, "cache"))
    return [("template mode", [python, MCPSTUDIO, "echo", "{message}"], "echo", env),
            ("aggregator", [python, MCPSTUDIO, "serve", "--config", aggregator_config(folder, python)],
             "up__echo", env)]


FIGURES = [("sequential_calls_per_s", "seq calls/s", "%.0f"), ("sequential_p50_ms", "seq p50 ms", "%.2f"),
           ("sequential_p99_ms", "seq p99 ms", "%.2f"), ("concurrent_calls_per_s", "burst calls/s", "%.0f"),
           ("concurrent_p50_ms", "burst p50 ms", "%.0f"), ("concurrent_p99_ms", "burst p99 ms", "%.0f"),
           ("rss_start_mib", "RSS start MiB", "%.1f"), ("rss_end_mib", "RSS end MiB", "%.1f")]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sequential", type=int, default=10000, help="calls one after another (10000)")
    parser.add_argument("--concurrent", type=int, default=1000, help="calls written at once (1000)")
    parser.add_argument("--runs", type=int, default=1, help="runs per mode; figures are medians (1)")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs mcpstudio")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--upstream", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.upstream:
        upstream_main()
        return 0
    python = subprocess.run([args.python, "-c", "import platform; print(platform.python_version())"],
                            capture_output=True, text=True, check=True).stdout.strip()
    results = {}
    with tempfile.TemporaryDirectory(prefix="mcpstudio-reliability-") as folder:
        for label, command, tool, env in modes(folder, args.python):
            runs = []
            for _ in range(args.runs):
                try:
                    runs.append(run_load(command, tool, args.sequential, args.concurrent, env))
                except LoadError as exc:
                    print("%s: FAILED: %s" % (label, exc), file=sys.stderr)
                    return 1
            results[label] = {key: (statistics.median(r[key] for r in runs) if runs[0][key] is not None else None)
                              for key in runs[0]}
    if args.json:
        print(json.dumps({"python": python, "runs": args.runs, "results": results}, indent=1))
        return 0
    print("mcpstudio reliability load: Python %s, %d sequential + %d concurrent calls per run, %d run(s), "
          "every call answered once with its own id" % (python, args.sequential, args.concurrent, args.runs))
    print("%-14s" % "" + "".join("%14s" % name for _, name, _ in FIGURES))
    for label, figures in results.items():
        print("%-14s" % label + "".join("%14s" % (fmt % figures[key] if figures[key] is not None else "-")
                                         for key, _, fmt in FIGURES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
