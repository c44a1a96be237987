#!/usr/bin/env python3
"""What passes through an MCP proxy: the official conformance suite's server scenarios against its
reference server directly, through mcpstudio's aggregator, and through FastMCP's proxy, in one run.

    python3 benchmarks/proxies.py --node NODE22 --conformance DIST_INDEX_JS --ces DIR
                                  [--fastmcp-python PYTHON] [--versions 2025-11-25,2026-07-28]

NODE22 is Node 22 (the suite needs it), DIST_INDEX_JS the suite's dist/index.js
(@modelcontextprotocol/conformance), DIR a copy of shared/peers/conformance-everything-server after
`npm ci`; PYTHON one that can import fastmcp (left out: that column is skipped). For each
requirements version it prints how many scenarios pass each way, the checks of each scenario, and
the scenarios a proxy loses (passing directly, failing through it). POSIX only; loopback only.
"""

import argparse
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MCPSTUDIO = os.path.join(os.path.dirname(HERE), "mcpstudio.py")
RESULT = re.compile(r"^[\u2713\u2717] (\S+): (\d+) passed, (\d+) failed")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_listening(port: int, seconds: float, proc) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("a server exited at start (code %s)" % proc.returncode)
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return
        time.sleep(0.2)
    raise SystemExit("nothing listened on port %d within %g s" % (port, seconds))


@contextlib.contextmanager
def server(argv, port, log, **keys):
    """A server process in its own group, stopped (the whole group) on the way out."""
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, **keys)
    try:
        wait_listening(port, 60, proc)
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def scenarios(args, url: str, version: str, out: str) -> dict:
    """scenario -> (checks passed, checks failed), from one run of every scenario `version` requires."""
    proc = subprocess.run([args.node, args.conformance, "server", "--url", url, "--requirements", version,
                           "-o", out, "--timeout", "10000"], capture_output=True, text=True, timeout=900,
                          stdin=subprocess.DEVNULL)
    found = {}
    for line in proc.stdout.splitlines():
        match = RESULT.match(line)
        if match:
            found[match.group(1)] = (int(match.group(2)), int(match.group(3)))
    if not found:
        raise SystemExit("the suite reported nothing for %s:\n%s" % (url, (proc.stdout + proc.stderr)[-2000:]))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--node", required=True)
    parser.add_argument("--conformance", required=True)
    parser.add_argument("--ces", required=True)
    parser.add_argument("--fastmcp-python")
    parser.add_argument("--versions", default="2025-11-25,2026-07-28")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="mcpstudio-proxies-")
    ports = {"direct": free_port(), "mcpstudio": free_port(), "fastmcp": free_port()}
    reference = "http://localhost:%d/mcp" % ports["direct"]
    config = os.path.join(work, "agg.json")
    with open(config, "w") as f:
        json.dump({"mcpServers": {"ref": {"url": reference, "prefix": ""}}}, f)
    urls = {name: "http://127.0.0.1:%d/mcp" % port for name, port in ports.items()}
    urls["direct"] = reference
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"))
    with open(os.path.join(work, "servers.log"), "w") as log, contextlib.ExitStack() as stack:
        stack.enter_context(server([os.path.join(args.ces, "node_modules", ".bin", "tsx"), "everything-server.ts"],
                                   ports["direct"], log, cwd=args.ces, env=dict(env, PORT=str(ports["direct"]))))
        stack.enter_context(server([sys.executable, MCPSTUDIO, "serve", "--config", config,
                                    "--http", str(ports["mcpstudio"])], ports["mcpstudio"], log, env=env))
        columns = ["direct", "mcpstudio"]
        if args.fastmcp_python:
            stack.enter_context(server([args.fastmcp_python, os.path.join(HERE, "fastmcp_proxy.py"), reference,
                                        str(ports["fastmcp"])], ports["fastmcp"], log, env=env))
            version = subprocess.run([args.fastmcp_python, "-c", "import fastmcp; print(fastmcp.__version__)"],
                                     capture_output=True, text=True).stdout.strip()
            print("fastmcp %s" % version)
            columns.append("fastmcp")
        for version in args.versions.split(","):
            results = {name: scenarios(args, urls[name], version, os.path.join(work, "%s-%s" % (name, version)))
                       for name in columns}
            direct = results["direct"]
            passing = {name: sorted(s for s, (_, failed) in found.items() if not failed) for name, found in results.items()}
            print("\n%s: scenarios passing: %s" % (version, ", ".join("%s %d" % (n, len(passing[n])) for n in columns)))
            print("  %-52s %s" % ("scenario (checks passed/run)", "".join("%-12s" % n for n in columns)))
            for scenario in sorted(direct):
                print("  %-52s %s" % (scenario, "".join("%-12s" % ("%d/%d" % (found.get(scenario, (0, 0))[0],
                                                                          sum(found.get(scenario, (0, 0)))))
                                                        for found in (results[n] for n in columns))))
            for name in columns[1:]:
                lost = [s for s in passing["direct"] if s not in passing[name]]
                print("  lost through %s (%d): %s" % (name, len(lost), ", ".join(lost) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
