#!/usr/bin/env python3
"""Benchmark mcpstudio side by side with reference servers, in one run.

    python3 benchmarks/bench.py [--runs N] [--quick] [--sdk-python PATH] [--studio-mcp DIR] [--json]

Each server offers one tool that runs a command. mcpstudio three ways:
"script" (`python3 mcpstudio.py`, compiled at every start, as most client
configs run it), "module" (`python3 -m mcpstudio` with cached bytecode, like
the installed command) and "zipapp" (built by `mcpstudio.py zipapp`, bytecode
inside). References: "floor", the ~50-line asyncio server in floor_server.py
with no validation or templates; "sdk", the official MCP Python SDK
(sdk_server.py), when --sdk-python (or MCPSTUDIO_SDK_PYTHON) names a Python
that can import it; "studio-mcp", the Node original of template mode, when
--studio-mcp (or MCPSTUDIO_STUDIO_MCP) names a copy of
shared/peers/studio-mcp after `npm install --omit=dev`.

Figures, as median and p90 over many runs, taken in turns so machine noise
falls on every server alike: cold start (spawn to the tools/list reply),
per-call latency of `echo hello`, 16 concurrent calls of `sleep 0.2`, and
peak RSS over a cold start and 50 calls; then the targets as ratios. Then
script discovery (200 scripts) and the aggregator: cold start with 5
upstream servers (upstream_server.py; tools cache cold and warm) against
starting those 5 directly, the latency a forwarded call adds over calling
the upstream directly, and the throughput of 1,000 concurrent forwarded
calls (every one answered); and an in-process tool over stdio and over
--http: latency, and calls per second with 16 concurrent callers. POSIX only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import selectors
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MCPSTUDIO = os.path.join(os.path.dirname(HERE), "mcpstudio.py")
PROTOCOL_VERSION = "2025-06-18"
TIMEOUT = 30.0          # seconds any single wait may take
WARM_UP = 5             # unmeasured calls before the per-call figure
MEMORY_CALLS = 50       # calls in each peak-memory run
BURST = 16              # concurrent calls in the concurrency figure
SLEEP = "0.2"           # seconds each of those calls sleeps
DISCOVERY_SCRIPTS = 200  # scripts in the script-mode discovery figure
UPSTREAMS = 5           # upstream servers in the aggregator cold-start figure
FLOOD = 1000            # concurrent forwarded calls in the throughput figure




SDK_PROBE = ("try:\n from mcp.server.mcpserver import MCPServer\n"
             "except ImportError:\n from mcp.server.fastmcp import FastMCP\n"
             "import importlib.metadata, platform\n"
             "print('mcp %s, Python %s' % (importlib.metadata.version('mcp'),"
             " platform.python_version()))")


class BenchError(Exception):
    """A server misbehaved or a wait timed out."""


class Peer:
    """One server process, spoken to in newline-delimited JSON-RPC.

    `started` is taken just before the spawn. Reads go through a selector, so
    every wait has a deadline; `close` reaps the process with os.wait4 (never
    Popen.wait) and keeps its peak memory in `maxrss`, in bytes.
    """

    def __init__(self, name: str, argv: list, stderr, env=None):
        self.name = name
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=stderr, env=env)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.proc.stdout, selectors.EVENT_READ)
        self.buffer = b""
        self.last_id = 0
        self.maxrss = None
        self.tool = "echo"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, method: str, params=None, notify: bool = False):
        """Write one message; return its id (None for a notification)."""
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if not notify:
            self.last_id += 1
            message["id"] = self.last_id
        try:
            os.write(self.proc.stdin.fileno(), json.dumps(message).encode() + b"\n")
        except OSError as error:
            raise BenchError("%s: cannot write to it: %s" % (self.name, error))
        return message.get("id")

    def receive(self, ids) -> dict:
        """Read until every id in `ids` has its reply; return {id: result}."""
        waiting, results = set(ids), {}
        deadline = time.monotonic() + TIMEOUT
        while waiting:
            line, newline, rest = self.buffer.partition(b"\n")
            if not newline:
                left = deadline - time.monotonic()
                if left <= 0 or not self.selector.select(left):
                    raise BenchError("%s: no reply within %g s" % (self.name, TIMEOUT))
                chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    raise BenchError("%s closed its stdout" % self.name)
                self.buffer += chunk
                continue
            self.buffer = rest
            message = json.loads(line)
            if "method" in message or message.get("id") not in waiting:
                continue            # a notification, or a request to the client
            if "error" in message:
                raise BenchError("%s: error reply %s" % (self.name, message["error"]))
            waiting.discard(message["id"])
            results[message["id"]] = message["result"]
        return results

    def request(self, method: str, params=None) -> dict:
        """Send one request and wait for its result."""
        request_id = self.send(method, params)
        return self.receive([request_id])[request_id]

    def handshake(self) -> list:
        """initialize, notifications/initialized, tools/list; return the tools."""
        self.request("initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self.send("notifications/initialized", notify=True)
        page = self.request("tools/list")
        tools = page["tools"]
        while page.get("nextCursor"):
            page = self.request("tools/list", {"cursor": page["nextCursor"]})
            tools += page["tools"]
        return tools

    def call(self, message: str, count: int = 1, tool: str = None) -> list:
        """Send `count` calls of the tool at once; wait for all; return their texts."""
        params = {"name": tool or self.tool, "arguments": {"message": message}}
        ids = [self.send("tools/call", params) for _ in range(count)]
        results = self.receive(ids)
        if any(result.get("isError") for result in results.values()):
            raise BenchError("%s: tool call failed: %s" % (self.name, results))
        return ["".join(part.get("text", "") for part in results[i]["content"]) for i in ids]

    def close(self) -> int:
        """Close stdin and reap the process, killing it after TIMEOUT; return max RSS."""
        if self.maxrss is not None:
            return self.maxrss
        self.selector.close()
        self.proc.stdin.close()
        deadline = time.monotonic() + TIMEOUT
        while True:
            pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            if pid or time.monotonic() > deadline:
                break
            time.sleep(0.001)
        if not pid:
            self.proc.kill()
            _, status, usage = os.wait4(self.proc.pid, 0)
        # Tell Popen the pid is reaped, so it never waits for it itself.
        self.proc.returncode = (os.WEXITSTATUS(status) if os.WIFEXITED(status)
                                else -os.WTERMSIG(status))
        self.proc.stdout.close()
        self.maxrss = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
        if not pid:
            raise BenchError("%s did not exit on stdin EOF" % self.name)
        return self.maxrss


class ServerSpec:
    """How to start one server: `prefix` + [command] (+ the template, for mcpstudio)."""

    def __init__(self, name: str, prefix: list, stderr, template: bool = False, env=None):
        self.name, self.prefix, self.stderr, self.template, self.env = name, prefix, stderr, template, env

    def argv(self, command: str) -> list:
        if not self.template:
            return self.prefix + [command]
        rename = [] if command == "echo" or self.name == "studio-mcp" else ["--name", "echo"]
        return self.prefix + rename + [command, "{message}"]

    def start(self, command: str = "echo") -> Peer:
        peer = Peer(self.name, self.argv(command), self.stderr, self.env)
        if self.name == "studio-mcp":
            peer.tool = command  # studio-mcp names its tool after the command
        return peer


def build_zipapp(python: str, tmp: str, stderr) -> str:
    """The one-file app, built by mcpstudio's own documented command."""
    out = os.path.join(tmp, "mcpstudio.pyz")
    subprocess.run([python, MCPSTUDIO, "zipapp", out], stdout=subprocess.DEVNULL, stderr=stderr,
                   check=True, timeout=TIMEOUT)
    if not os.path.isfile(out):
        raise OSError("no %s built (a mcpstudio.py without the zipapp command?)" % out)
    return out


def make_specs(args, tmp: str) -> tuple:
    """The servers to compare; return (specs, notes).

    mcpstudio three ways: as a script (compiled at every start, as most client
    configs run it), as a module with cached bytecode (`python3 -m mcpstudio`,
    like the installed command), and as the zipapp. Then the asyncio floor,
    the official SDK server and studio-mcp (Node) where they can run.
    """
    def stderr_of(name):
        return open(os.path.join(tmp, name + ".log"), "ab")

    python = args.python or sys.executable
    version = subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                             stdout=subprocess.PIPE, text=True, check=True, timeout=TIMEOUT).stdout.strip()
    bytecode_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    module_env = dict(bytecode_env, PYTHONPATH=os.path.dirname(MCPSTUDIO))
    subprocess.run([python, "-c", "import mcpstudio"], env=module_env, check=True, timeout=TIMEOUT)  # caches bytecode
    specs = [ServerSpec("script", [python, MCPSTUDIO], stderr_of("script"), template=True),
             ServerSpec("module", [python, "-m", "mcpstudio"], stderr_of("module"), template=True, env=module_env)]
    notes = ["mcpstudio and floor on %s (Python %s)" % (python, version)]
    # "install": exactly the command, args and env that `install --client claude-desktop` prints, for a
    # copy of the module in a writable folder (a download), bytecode allowed, its first start unmeasured.
    copy = os.path.join(tmp, "download", "mcpstudio.py")
    os.makedirs(os.path.dirname(copy))
    shutil.copy(MCPSTUDIO, copy)
    printed = subprocess.run([python, copy, "install", "--client", "claude-desktop", "echo", "{message}"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True, timeout=TIMEOUT)
    entry = json.loads(printed.stdout)["mcpServers"]["echo"]
    if entry["args"][-2:] != ["echo", "{message}"]:
        raise BenchError("unexpected install entry: %s" % entry)
    specs.append(ServerSpec("install", [entry["command"]] + entry["args"][:-2], stderr_of("install"), template=True,
                            env=dict(bytecode_env, **entry.get("env", {}))))
    notes.append("install: %s, env %s" % (" ".join(map(shlex.quote, [entry["command"]] + entry["args"])),
                                          sorted(entry.get("env", {}))))
    try:
        specs.append(ServerSpec("zipapp", [python, build_zipapp(python, tmp, specs[0].stderr)],
                                stderr_of("zipapp"), template=True))
    except (OSError, subprocess.SubprocessError) as error:
        notes.append("zipapp skipped: `mcpstudio.py zipapp` failed: %s" % error)
    specs.append(ServerSpec("floor", [python, os.path.join(HERE, "floor_server.py")], stderr_of("floor")))
    sdk_python = args.sdk_python or os.environ.get("MCPSTUDIO_SDK_PYTHON")
    if not sdk_python:
        notes.append("sdk skipped: give --sdk-python PATH or MCPSTUDIO_SDK_PYTHON")
    else:
        try:
            probe = subprocess.run([sdk_python, "-c", SDK_PROBE], stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as error:
            probe = None
            notes.append("sdk skipped: %s" % error)
        if probe is not None and probe.returncode:
            notes.append("sdk skipped: %s cannot import the mcp SDK" % sdk_python)
        elif probe is not None:
            specs.append(ServerSpec("sdk", [sdk_python, os.path.join(HERE, "sdk_server.py")], stderr_of("sdk")))
            notes.append("sdk on %s (%s)" % (sdk_python, probe.stdout.strip()))
            if not probe.stdout.strip().endswith("Python " + version):
                notes.append("sdk on another Python than mcpstudio: its goals hold per Python (give an "
                             "--sdk-python of %s)" % version)
    studio = args.studio_mcp or os.environ.get("MCPSTUDIO_STUDIO_MCP")
    node = shutil.which("node")
    if not studio or not node:
        notes.append("studio-mcp skipped: give --studio-mcp DIR (a copy of shared/peers/studio-mcp "
                     "after `npm install --omit=dev`) and have node on PATH")
    else:
        node_version = subprocess.run([node, "--version"], stdout=subprocess.PIPE, text=True, timeout=TIMEOUT).stdout.strip()
        specs.append(ServerSpec("studio-mcp", [node, os.path.join(studio, "dist", "index.js")],
                                stderr_of("studio-mcp"), template=True))
        notes.append("studio-mcp on node %s (%s)" % (node_version, studio))
    return specs, notes


# --------------------------------------------------------------------------
# The figures: each returns {server name: [samples]}
# --------------------------------------------------------------------------

def in_turns(items: list, rounds: int, measure) -> dict:
    """Call `measure(item)` `rounds` times per item, items taking turns to go first."""
    samples = {item.name: [] for item in items}
    for turn in range(rounds):
        first = turn % len(items)
        for item in items[first:] + items[:first]:
            samples[item.name].append(measure(item))
    return samples


@contextlib.contextmanager
def warm_peers(specs: list, command: str):
    """Start every server with `command`, shake hands, and close them after."""
    peers = []
    try:
        for spec in specs:
            peers.append(spec.start(command))
            peers[-1].handshake()
        yield peers
    finally:
        for peer in peers:
            peer.close()


def cold_start(specs: list, runs: int) -> dict:
    """Seconds from spawn to the tools/list reply, after initialize."""
    def measure(spec):
        with spec.start() as peer:
            tools = peer.handshake()
            elapsed = time.perf_counter() - peer.started
        if [tool["name"] for tool in tools] != [peer.tool]:
            raise BenchError("%s lists %s" % (spec.name, tools))
        return elapsed
    return in_turns(specs, runs, measure)


def timed_call(message: str, count: int = 1):
    """A measure: seconds from sending `count` calls at once to the last reply."""
    def measure(peer):
        start = time.perf_counter()
        peer.call(message, count)
        return time.perf_counter() - start
    return measure


def per_call(specs: list, calls: int) -> dict:
    """Seconds per sequential `echo hello` call in a warm server."""
    with warm_peers(specs, "echo") as peers:
        for peer in peers:
            for _ in range(WARM_UP):
                if [text.strip() for text in peer.call("hello")] != ["hello"]:  # studio-mcp trims the newline
                    raise BenchError("%s: `echo hello` did not give hello" % peer.name)
        return in_turns(peers, calls, timed_call("hello"))


def concurrency(specs: list, bursts: int) -> dict:
    """Seconds until all of BURST concurrent `sleep 0.2` calls have answered."""
    with warm_peers(specs, "sleep") as peers:
        return in_turns(peers, bursts, timed_call(SLEEP, BURST))


def peak_memory(specs: list, runs: int) -> dict:
    """Peak RSS in bytes over a cold start and MEMORY_CALLS calls.

    ru_maxrss from wait4 also covers the server's reaped children, but a
    child never outgrows the server it was forked from.
    """
    def measure(spec):
        with spec.start() as peer:
            peer.handshake()
            for _ in range(MEMORY_CALLS):
                peer.call("hello")
        return peer.maxrss
    return in_turns(specs, runs, measure)


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------

FIGURES = [  # key, label, unit, scale
    ("cold_start_ms", "cold start", "ms", 1e3),
    ("per_call_ms", "per call", "ms", 1e3),
    ("burst_ms", "%d x sleep %s s" % (BURST, SLEEP), "ms", 1e3),
    ("peak_rss_mib", "peak RSS", "MiB", 1.0 / (1 << 20)),
]

TARGETS = [  # key, mcpstudio column, reference column, ("x", ratio), ("+", difference) or ("=", None): shown only
    # issue 32: the script form (compiled at every start) must not cross the official SDK server
    ("cold_start_ms", "script", "sdk", ("x", 0.5)),
    ("peak_rss_mib", "script", "sdk", ("x", 1.0)),
    ("cold_start_ms", "script", "studio-mcp", ("=", None)),
    ("peak_rss_mib", "script", "studio-mcp", ("=", None)),
    # issues 10 and 21: the cached forms stay near the asyncio floor
    ("cold_start_ms", "install", "floor", ("x", 1.25)),
    ("peak_rss_mib", "install", "floor", ("x", 1.2)),
    ("cold_start_ms", "module", "floor", ("x", 1.25)),
    ("cold_start_ms", "zipapp", "floor", ("x", 1.25)),
    ("peak_rss_mib", "module", "floor", ("x", 1.2)),
    ("peak_rss_mib", "zipapp", "floor", ("x", 1.2)),
    ("per_call_ms", "script", "floor", ("+", 0.5)),
    ("per_call_ms", "module", "floor", ("+", 0.5)),
]


SCRIPT = """#!/bin/sh
if [ "$1" = "--help" ]; then
  echo '{"description": "Benchmark script %d."}'
  echo '{"n": {"required": false, "value_type": "integer", "default_value": 1}}' >&2
  exit 0
fi
echo ok
"""


def discovery(args, tmp: str, stderr) -> dict:
    """Spawn to tools/list reply for a root of DISCOVERY_SCRIPTS scripts, cache cold and warm.

    The reference is what mcpd does on every tools/list: run each script's
    --help one after another.
    """
    root = os.path.join(tmp, "scripts")
    for i in range(DISCOVERY_SCRIPTS):
        path = os.path.join(root, "group%d" % (i % 10), "tool%d" % i)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(SCRIPT % i)
        os.chmod(path, 0o755)
    cache = os.path.join(tmp, "cache")
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    argv = [args.python or sys.executable, MCPSTUDIO, "--root-directory", root, "--rescan", "0"]

    def listing(cold: bool) -> float:
        if cold:
            shutil.rmtree(cache, ignore_errors=True)
        with Peer("mcpstudio", argv, stderr, env) as peer:
            tools = peer.handshake()
            elapsed = time.perf_counter() - peer.started
        if len(tools) != DISCOVERY_SCRIPTS:
            raise BenchError("discovery listed %d tools, not %d" % (len(tools), DISCOVERY_SCRIPTS))
        return elapsed

    def naive() -> float:
        started = time.perf_counter()
        for folder, _, files in os.walk(root):
            for name in files:
                subprocess.run([os.path.join(folder, name), "--help"], capture_output=True, check=True)
        return time.perf_counter() - started
    runs = max(3, args.runs // 4)
    samples = {"cold": [], "warm": [], "naive": []}
    for _ in range(runs):
        samples["cold"].append(listing(True))
        samples["warm"].append(listing(False))
        samples["naive"].append(naive())
    return samples


def print_discovery(samples: dict) -> dict:
    """Print the discovery figures; return their summaries."""
    rows = (("cold", "mcpstudio, cache cold (%d x --help, 8 at a time)" % DISCOVERY_SCRIPTS),
            ("warm", "mcpstudio, cache warm (no --help runs)"),
            ("naive", "reference: %d x --help one after another" % DISCOVERY_SCRIPTS))
    figures = {key: summary(samples[key], 1000) for key, _ in rows}
    print("\ndiscovery: spawn to tools/list reply, %d scripts      median (ms)    p90 (ms)" % DISCOVERY_SCRIPTS)
    for key, label in rows:
        print("  %-52s %10.1f %11.1f" % (label, figures[key]["median"], figures[key]["p90"]))
    return figures


def aggregator(args, tmp: str, stderr) -> dict:
    """The aggregator's figures, each beside what a client gets from the upstreams directly."""
    python = args.python or sys.executable
    upstream = os.path.join(HERE, "upstream_server.py")
    servers = {"up%d" % i: {"command": python, "args": [upstream]} for i in range(UPSTREAMS)}
    config = os.path.join(tmp, "aggregator.json")
    with open(config, "w") as f:
        json.dump({"mcpServers": servers}, f)
    cache = os.path.join(tmp, "aggregator-cache")
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    argv = [python, MCPSTUDIO, "serve", "--config", config, "--rescan", "0"]
    names = sorted("up%d__echo" % i for i in range(UPSTREAMS))

    def through(cold: bool) -> float:
        if cold:
            shutil.rmtree(cache, ignore_errors=True)
        with Peer("mcpstudio", argv, stderr, env) as peer:
            tools = peer.handshake()
            elapsed = time.perf_counter() - peer.started
        listed = sorted(t["name"] for t in tools if not t["name"].startswith("mcpstudio__"))
        if listed != names:
            raise BenchError("the aggregator listed %s, not %s" % (listed, names))
        return elapsed

    def direct() -> float:  # a client starting the 5 servers itself, all at once
        started = time.perf_counter()
        peers = [Peer("upstream", [python, upstream], stderr) for _ in range(UPSTREAMS)]
        for peer in peers:
            peer.handshake()
        elapsed = time.perf_counter() - started
        for peer in peers:
            peer.close()
        return elapsed

    samples = {"cold": [], "warm": [], "direct": [], "call_direct": [], "call_through": [],
               "flood_direct": [], "flood_through": []}
    for _ in range(args.runs):
        samples["cold"].append(through(True))
        samples["warm"].append(through(False))
        samples["direct"].append(direct())
    with Peer("upstream", [python, upstream], stderr) as plain, Peer("mcpstudio", argv, stderr, env) as hub:
        plain.handshake()
        hub.handshake()
        for _ in range(WARM_UP):
            hub.call("hi", tool="up0__echo")
            plain.call("hi")
        for _ in range(args.calls):  # in turns, so noise falls on both alike
            for key, peer, tool in (("call_direct", plain, "echo"), ("call_through", hub, "up0__echo")):
                started = time.perf_counter()
                if peer.call("hello", tool=tool) != ["hello"]:
                    raise BenchError("%s: echo did not answer hello" % peer.name)
                samples[key].append(time.perf_counter() - started)
        for _ in range(args.bursts):
            for key, peer, tool in (("flood_direct", plain, "echo"), ("flood_through", hub, "up0__echo")):
                started = time.perf_counter()
                texts = peer.call("x", FLOOD, tool=tool)  # raises unless every call is answered
                samples[key].append(time.perf_counter() - started)
                if len(texts) != FLOOD:
                    raise BenchError("%s: %d of %d calls answered" % (peer.name, len(texts), FLOOD))
    return samples


def print_aggregator(samples: dict) -> dict:
    """Print the aggregator figures; return their summaries."""
    figures = {key: summary(values, 1000) for key, values in samples.items()}
    print("\naggregator: %d upstream servers (an in-process echo tool each)   median (ms)    p90 (ms)" % UPSTREAMS)
    for key, label in (("cold", "mcpstudio, tools cache cold (starts all %d)" % UPSTREAMS),
                       ("warm", "mcpstudio, tools cache warm (starts none)"),
                       ("direct", "reference: the %d servers started directly" % UPSTREAMS),
                       ("call_through", "one call through mcpstudio"),
                       ("call_direct", "reference: one call to the upstream directly"),
                       ("flood_through", "%d concurrent calls through mcpstudio" % FLOOD),
                       ("flood_direct", "reference: %d concurrent calls directly" % FLOOD)):
        print("  %-58s %10.2f %11.2f" % (label, figures[key]["median"], figures[key]["p90"]))
    added = figures["call_through"]["median"] - figures["call_direct"]["median"]
    print("target: a forwarded call adds %.3f ms at the median (limit 0.30)  %s"
          % (added, "PASS" if added <= 0.3 else "FAIL"))
    for key in ("flood_through", "flood_direct"):
        figures[key]["calls_per_s"] = round(FLOOD / (figures[key]["median"] / 1000))
    print("throughput: %d calls/s through mcpstudio, %d calls/s directly; none lost"
          % (figures["flood_through"]["calls_per_s"], figures["flood_direct"]["calls_per_s"]))
    figures["added_ms"] = round(added, 4)
    return figures


def http_figures(args, tmp: str, stderr) -> dict:
    """An in-process tool (mcpstudio__namespaces_list) over stdio and over --http, side by side.

    Latency: sequential calls on one stdio pipe, and on one keep-alive HTTP
    connection (2026-07-28 stateless POSTs, JSON replies). Throughput: 16
    concurrent callers: 16 calls in flight at once on the stdio pipe, and 16
    HTTP clients each on its own connection.
    """
    import asyncio
    import socket
    python = args.python or sys.executable
    config = os.path.join(tmp, "in-process.json")
    with open(config, "w") as f:
        json.dump({"mcpServers": {}}, f)
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "http-cache"))
    tool = "mcpstudio__namespaces_list"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": tool, "arguments": {}, "_meta": meta}}).encode()
    request = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
               b"Accept: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
               b"Mcp-Name: %s\r\nContent-Length: %d\r\n\r\n%s" % (port, tool.encode(), len(body), body))

    async def one(reader, writer) -> float:
        started = time.perf_counter()
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise BenchError("HTTP: %s" % head[:80])
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        reply = json.loads(await reader.readexactly(length))
        if "result" not in reply:
            raise BenchError("HTTP: %s" % reply)
        return time.perf_counter() - started

    async def http_run(clients: int, calls: int) -> list:
        async def client():
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            times = [await one(reader, writer) for _ in range(calls)]
            writer.close()
            return times
        started = time.perf_counter()
        results = await asyncio.gather(*(client() for _ in range(clients)))
        return [time.perf_counter() - started] + [t for times in results for t in times]

    samples = {"stdio_latency": [], "http_latency": [], "stdio_rps": [], "http_rps": []}
    server = subprocess.Popen([python, MCPSTUDIO, "--http", "127.0.0.1:%d" % port, "serve", "--config", config,
                               "--rescan", "0"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=stderr, env=env)
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise BenchError("mcpstudio --http did not start")
                time.sleep(0.05)
        with Peer("mcpstudio", [python, MCPSTUDIO, "serve", "--config", config, "--rescan", "0"], stderr, env) as peer:
            peer.handshake()
            params = {"name": tool, "arguments": {}}
            for _ in range(WARM_UP):
                peer.request("tools/call", params)
            asyncio.run(http_run(1, WARM_UP))
            for _ in range(args.calls):
                started = time.perf_counter()
                peer.request("tools/call", params)
                samples["stdio_latency"].append(time.perf_counter() - started)
            samples["http_latency"] = asyncio.run(http_run(1, args.calls))[1:]
            per_client = 25 if args.quick else 100
            for _ in range(args.bursts):
                started = time.perf_counter()
                total = 0
                for _ in range(per_client):
                    ids = [peer.send("tools/call", params) for _ in range(BURST)]
                    total += len(peer.receive(ids))
                samples["stdio_rps"].append(total / (time.perf_counter() - started))
                elapsed = asyncio.run(http_run(BURST, per_client))[0]
                samples["http_rps"].append(BURST * per_client / elapsed)
    finally:
        server.terminate()
        server.wait(TIMEOUT)
    return samples


def print_http(samples: dict) -> dict:
    figures = {key: summary(values, 1000 if key.endswith("latency") else 1) for key, values in samples.items()}
    print("\nhttp: an in-process tool (mcpstudio__namespaces_list), stdio and --http     stdio        http")
    print("  %-66s %8.3f %11.3f" % ("latency of one call, median (ms)", figures["stdio_latency"]["median"],
                                    figures["http_latency"]["median"]))
    print("  %-66s %8.3f %11.3f" % ("latency of one call, p90 (ms)", figures["stdio_latency"]["p90"],
                                    figures["http_latency"]["p90"]))
    print("  %-66s %8.0f %11.0f" % ("calls per second, %d concurrent callers, median" % BURST,
                                    figures["stdio_rps"]["median"], figures["http_rps"]["median"]))
    return figures


def summary(samples: list, scale: float) -> dict:
    """Median and p90 (nearest rank) of `samples`, times `scale`."""
    ordered = sorted(samples)
    p90 = ordered[math.ceil(0.9 * len(ordered)) - 1]
    return {"median": round(statistics.median(ordered) * scale, 4),
            "p90": round(p90 * scale, 4), "n": len(ordered)}


def print_table(results: dict, names: list) -> list:
    """Print the figures side by side, then each target as a ratio; return the targets."""
    head = "%-28s" % "figure" + "".join("%11s" % name for name in names)
    print(head + "\n" + "-" * len(head))
    figures = [figure for figure in FIGURES if figure[0] in results[names[0]]]
    for key, label, unit, _ in figures:
        for stat in ("median", "p90"):
            title = "%s (%s)" % (label, unit) if stat == "median" else ""
            print("%-21s %-6s" % (title, stat) + "".join("%11.2f" % results[name][key][stat] for name in names))
    print()
    targets = []
    for key, mine_name, other_name, (kind, amount) in TARGETS:
        if mine_name not in results or other_name not in results or key not in results[mine_name]:
            continue
        label, unit = next((f[1], f[2]) for f in FIGURES if f[0] == key)
        mine, other = results[mine_name][key]["median"], results[other_name][key]["median"]
        if kind == "=":
            value, rule, ok = mine / other, "x %s (no goal)" % other_name, None
            shown = "%.2fx" % value
        elif kind == "x":
            value, rule, ok = mine / other, "<= %gx %s" % (amount, other_name), mine <= other * amount
            shown = "%.2fx" % value
        else:
            value, rule, ok = mine - other, "<= %s + %g %s" % (other_name, amount, unit), mine - other <= amount
            shown = "%+.2f %s" % (value, unit)
        targets.append({"figure": key, "server": mine_name, "reference": other_name, "rule": rule,
                        "value": round(value, 4), "pass": ok})
        print("%-7s %-10s %-7s %-24s %10s   %s" % ("ratio:" if ok is None else "target:", label, mine_name, rule,
                                                  shown, "" if ok is None else "PASS" if ok else "FAIL"))
    return targets


def parse_args(argv=None):
    """The command line; --quick lowers every count."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, help="cold starts and memory runs per server "
                        "(default 20, with --quick 5)")
    parser.add_argument("--quick", action="store_true", help="fewer runs and calls")
    parser.add_argument("--python", help="Python for mcpstudio and floor (default: the sdk's, so every "
                        "server starts the same interpreter with the same site; without one, this one)")
    parser.add_argument("--sdk-python", help="a Python that can import the mcp SDK "
                        "(default: $MCPSTUDIO_SDK_PYTHON; none: no sdk column)")
    parser.add_argument("--studio-mcp", help="a folder holding studio-mcp with its node_modules "
                        "(default: $MCPSTUDIO_STUDIO_MCP; none: no studio-mcp column)")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    parser.add_argument("--starts-only", action="store_true", help="only cold start and peak memory "
                        "(no calls, discovery, aggregator or HTTP figures)")
    args = parser.parse_args(argv)
    # The same interpreter for every server: a base install's site-packages can hold .pth files that import at
    # every start (this machine's imports certifi, 4.7 MiB) where the SDK's virtualenv has none.
    args.python = args.python or args.sdk_python or os.environ.get("MCPSTUDIO_SDK_PYTHON")
    args.runs = args.runs or (5 if args.quick else 20)
    if args.runs < 2:
        parser.error("--runs must be at least 2")
    args.calls, args.bursts = (50, 3) if args.quick else (200, 5)
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    command = " ".join(shlex.quote(word) for word in [sys.executable] + sys.argv)
    with tempfile.TemporaryDirectory(prefix="mcpstudio-bench-") as tmp:
        specs, notes = make_specs(args, tmp)
        print("command:  " + command)
        print("machine:  %s, %d CPUs" % (platform.platform(), os.cpu_count() or 0))
        print("python:   %s %s" % (platform.python_implementation(), platform.python_version()))
        print("runs:     %d cold starts, %d sequential calls, %d bursts of %d, "
              "%d memory runs of %d calls"
              % (args.runs, args.calls, args.bursts, BURST, args.runs, MEMORY_CALLS))
        for note in notes:
            print("note:     " + note)
        for spec in specs:
            print("server:   %-10s %s" % (spec.name, " ".join(map(shlex.quote, spec.argv("echo")))))
        print()
        try:
            raw = {"cold_start_ms": cold_start(specs, args.runs), "peak_rss_mib": peak_memory(specs, args.runs)}
            found = aggregated = served = None
            if not args.starts_only:
                raw.update(per_call_ms=per_call(specs, args.calls), burst_ms=concurrency(specs, args.bursts))
                found = discovery(args, tmp, specs[0].stderr)
                aggregated = aggregator(args, tmp, specs[0].stderr)
                served = http_figures(args, tmp, specs[0].stderr)
        except BenchError as error:
            print("bench: error: %s" % error, file=sys.stderr)
            for spec in specs:
                spec.stderr.flush()
                with open(spec.stderr.name, "rb") as f:
                    tail = f.read()[-2000:].decode("utf-8", "replace")
                if tail:
                    print("--- %s stderr ---\n%s" % (spec.name, tail), file=sys.stderr)
            return 2
        finally:
            for spec in specs:
                spec.stderr.close()
    names = [spec.name for spec in specs]
    scales = {figure[0]: figure[3] for figure in FIGURES}
    results = {name: {key: summary(raw[key][name], scales[key]) for key in raw}
               for name in names}
    targets = print_table(results, names)
    discovered = upstreams = over_http = None
    if not args.starts_only:
        discovered = print_discovery(found)
        upstreams = print_aggregator(aggregated)
        over_http = print_http(served)
    if args.json:
        print(json.dumps({"command": command, "machine": platform.platform(),
                          "python": platform.python_version(), "notes": notes,
                          "runs": args.runs, "calls": args.calls, "bursts": args.bursts,
                          "servers": results, "targets": targets, "discovery_ms": discovered,
                          "aggregator_ms": upstreams, "http": over_http},
                         sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
