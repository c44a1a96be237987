#!/usr/bin/env python3
"""One mcpstudio instance against three behind HAProxy, side by side in one run.

    python3 benchmarks/balancer.py [--seconds S] [--callers N] [--rounds R] [--haproxy PATH]

Each setup serves `echo {message}` over --http. Load: N caller processes, each on
one keep-alive connection, sending 2026-07-28 `tools/call` requests back to back
for S seconds; the figure is calls per second (every reply checked) and the
median and p90 latency. "one" calls an instance directly; "three" calls HAProxy
running examples/haproxy.cfg (its ports changed only) in front of three
instances named mcp1..mcp3. The setups take turns R times so machine noise falls
on both alike. The load generator shares the machine: on a small machine the
gain is bounded by its cores, not by mcpstudio. POSIX only; HAProxy from
--haproxy, $MCPSTUDIO_HAPROXY or the PATH.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TIMEOUT = 30.0  # seconds any single wait may take
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_listening(port, proc):
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("a server exited at start (%s)" % proc.args)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("nothing listens on port %d after %g s" % (port, TIMEOUT))


def instance(name, port):
    proc = subprocess.Popen([sys.executable, "-m", "mcpstudio", "--http", "127.0.0.1:%d" % port, "--http-instance",
                             name, "--http-trusted-proxy", "127.0.0.1", "--http-drain", "0", "echo", "{message}"],
                            cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, PYTHONPATH=ROOT))
    wait_listening(port, proc)
    return proc


def caller(args):
    """One caller: calls back to back on one connection until `seconds` pass; (latencies, errors)."""
    port, seconds = args
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "echo", "arguments": {"message": "hello"}, "_meta": META}})
    headers = {"Content-Type": "application/json", "Accept": "application/json", "Host": "127.0.0.1",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
    latencies, errors = [], 0
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        started = time.perf_counter()
        try:
            connection.request("POST", "/mcp", body, headers)
            response = connection.getresponse()
            reply = json.loads(response.read())
            ok = response.status == 200 and reply["result"]["content"][0]["text"] == "hello\n"
        except (OSError, ValueError, KeyError, http.client.HTTPException):
            ok = False
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
        if ok:
            latencies.append(time.perf_counter() - started)
        else:
            errors += 1
    connection.close()
    return latencies, errors


def load(port, callers, seconds):
    with multiprocessing.Pool(callers) as pool:
        results = pool.map(caller, [(port, seconds)] * callers)
    latencies = sorted(x for lat, _ in results for x in lat)
    return {"calls_per_s": len(latencies) / seconds, "errors": sum(e for _, e in results),
            "p50_ms": 1000 * statistics.median(latencies) if latencies else float("nan"),
            "p90_ms": 1000 * latencies[int(len(latencies) * 0.9)] if latencies else float("nan")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds of load per setup and round")
    parser.add_argument("--callers", type=int, default=16, help="concurrent callers")
    parser.add_argument("--rounds", type=int, default=3, help="turns each setup takes")
    parser.add_argument("--haproxy", default=os.environ.get("MCPSTUDIO_HAPROXY") or shutil.which("haproxy"))
    options = parser.parse_args()
    if not options.haproxy:
        parser.error("HAProxy not found: give --haproxy PATH (Debian: apt-get install haproxy)")
    ports = {"one": free_port(), "front": free_port(), "mcp1": free_port(), "mcp2": free_port(), "mcp3": free_port()}
    procs = []
    folder = tempfile.mkdtemp(prefix="mcpstudio-balancer-")
    try:
        procs.append(instance("solo", ports["one"]))
        procs.extend(instance(name, ports[name]) for name in ("mcp1", "mcp2", "mcp3"))
        with open(os.path.join(ROOT, "examples", "haproxy.cfg")) as f:
            text = f.read()
        for old, key in (("8930", "front"), ("8931", "mcp1"), ("8932", "mcp2"), ("8933", "mcp3")):
            text = text.replace("127.0.0.1:%s" % old, "127.0.0.1:%d" % ports[key])
        config = os.path.join(folder, "haproxy.cfg")
        with open(config, "w") as f:
            f.write(text)
        haproxy = subprocess.Popen([options.haproxy, "-db", "-f", config], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(haproxy)
        wait_listening(ports["front"], haproxy)
        time.sleep(2)  # HAProxy's first health checks
        figures = {"one": [], "three": []}
        for _ in range(options.rounds):
            figures["one"].append(load(ports["one"], options.callers, options.seconds))
            figures["three"].append(load(ports["front"], options.callers, options.seconds))
        version = subprocess.run([options.haproxy, "-v"], capture_output=True, text=True).stdout.split("\n")[0]
        print("echo over --http, %d callers, %d rounds of %g s; %s; %d CPUs" % (
            options.callers, options.rounds, options.seconds, version, os.cpu_count() or 0))
        print("%-28s %12s %10s %10s %8s" % ("setup", "calls/s", "p50 ms", "p90 ms", "errors"))
        rows = {}
        for key, label in (("one", "one instance"), ("three", "three behind HAProxy")):
            runs = figures[key]
            rows[key] = statistics.median(r["calls_per_s"] for r in runs)
            print("%-28s %12.0f %10.1f %10.1f %8d" % (label, rows[key], statistics.median(r["p50_ms"] for r in runs),
                                                     statistics.median(r["p90_ms"] for r in runs),
                                                     sum(r["errors"] for r in runs)))
        print("three / one: %.2fx" % (rows["three"] / rows["one"] if rows["one"] else float("nan")))
        return 0 if not any(r["errors"] for runs in figures.values() for r in runs) else 1
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
