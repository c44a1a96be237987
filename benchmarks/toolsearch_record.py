"""Record the `tools/list` of public MCP servers into benchmarks/toolsearch/corpus.json.

The servers are installed outside the repository (not committed):

    mkdir /tmp/servers && cd /tmp/servers && npm init -y && npm install --ignore-scripts \\
        @modelcontextprotocol/server-github @modelcontextprotocol/server-gitlab ...  (see SERVERS)
    python3 -m venv /tmp/py && /tmp/py/bin/pip install mcp-server-git mcp-server-fetch mcp-server-time
    python3 benchmarks/toolsearch_record.py /tmp/servers/node_modules/.bin /tmp/py/bin

Each server gets dummy credentials: listing tools needs none of them to be valid.
"""
import json
import os
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
DUMMY = "dummy-token-for-listing"
# name -> (npm package, its command and arguments, its environment)
SERVERS = {
    "github": ("@modelcontextprotocol/server-github", ["mcp-server-github"], {"GITHUB_PERSONAL_ACCESS_TOKEN": DUMMY}),
    "gitlab": ("@modelcontextprotocol/server-gitlab", ["mcp-server-gitlab"],
               {"GITLAB_PERSONAL_ACCESS_TOKEN": DUMMY, "GITLAB_API_URL": "https://gitlab.com/api/v4"}),
    "slack": ("@modelcontextprotocol/server-slack", ["mcp-server-slack"], {"SLACK_BOT_TOKEN": DUMMY, "SLACK_TEAM_ID": "T0"}),
    "playwright": ("@playwright/mcp", ["playwright-mcp"], {}),
    "chrome-devtools": ("chrome-devtools-mcp", ["chrome-devtools-mcp"], {}),
    "notion": ("@notionhq/notion-mcp-server", ["notion-mcp-server"], {"NOTION_TOKEN": DUMMY}),
    "kubernetes": ("mcp-server-kubernetes", ["mcp-server-kubernetes"], {}),
    "sentry": ("@sentry/mcp-server", ["sentry-mcp", "--access-token=" + DUMMY], {}),
    "hubspot": ("@hubspot/mcp-server", ["mcp-hubspot"], {"PRIVATE_APP_ACCESS_TOKEN": DUMMY}),
    "firecrawl": ("firecrawl-mcp", ["firecrawl-mcp"], {"FIRECRAWL_API_KEY": DUMMY}),
    "filesystem": ("@modelcontextprotocol/server-filesystem", ["mcp-server-filesystem", "/tmp"], {}),
    "memory": ("@modelcontextprotocol/server-memory", ["mcp-server-memory"], {}),
    "everything": ("@modelcontextprotocol/server-everything", ["mcp-server-everything"], {}),
    "puppeteer": ("@modelcontextprotocol/server-puppeteer", ["mcp-server-puppeteer"], {}),
    "brave-search": ("@modelcontextprotocol/server-brave-search", ["mcp-server-brave-search"], {"BRAVE_API_KEY": DUMMY}),
    "postgres": ("@modelcontextprotocol/server-postgres", ["mcp-server-postgres", "postgresql://localhost/db"], {}),
    "sequential-thinking": ("@modelcontextprotocol/server-sequential-thinking", ["mcp-server-sequential-thinking"], {}),
    "google-maps": ("@modelcontextprotocol/server-google-maps", ["mcp-server-google-maps"], {"GOOGLE_MAPS_API_KEY": DUMMY}),
    "redis": ("@modelcontextprotocol/server-redis", ["mcp-server-redis", "redis://localhost:6379"], {}),
    "everart": ("@modelcontextprotocol/server-everart", ["mcp-server-everart"], {"EVERART_API_KEY": DUMMY}),
    "aws-kb-retrieval": ("@modelcontextprotocol/server-aws-kb-retrieval", ["mcp-server-aws-kb-retrieval"],
                         {"AWS_ACCESS_KEY_ID": DUMMY, "AWS_SECRET_ACCESS_KEY": DUMMY, "AWS_REGION": "us-east-1"}),
    "context7": ("@upstash/context7-mcp", ["context7-mcp"], {}),
    "git": ("mcp-server-git (PyPI)", ["mcp-server-git", "--repository", HERE], {}),
    "fetch": ("mcp-server-fetch (PyPI)", ["mcp-server-fetch"], {}),
    "time": ("mcp-server-time (PyPI)", ["mcp-server-time"], {}),
}


def record(bin_dirs: list, command: list, env: dict, timeout: float = 60.0) -> list:
    """Start the server (found in the first of `bin_dirs` that has it), initialize, list every page of tools,
    stop it."""
    program = next((os.path.join(d, command[0]) for d in bin_dirs if os.path.exists(os.path.join(d, command[0]))),
                   command[0])
    process = subprocess.Popen([program] + command[1:], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=dict(os.environ, **env))
    timer = threading.Timer(timeout, process.kill)
    timer.start()

    def ask(request_id, method, params):
        process.stdin.write((json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
                             + "\n").encode())
        process.stdin.flush()
        for line in process.stdout:
            message = json.loads(line) if line.strip().startswith(b"{") else {}
            if message.get("id") == request_id:
                return message["result"]
        raise RuntimeError("the server exited")
    try:
        ask(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "toolsearch-record", "version": "1"}})
        process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        tools, cursor = [], None
        for page in range(2, 100):
            result = ask(page, "tools/list", {"cursor": cursor} if cursor else {})
            tools += result["tools"]
            cursor = result.get("nextCursor")
            if not cursor:
                return tools
    finally:
        timer.cancel()
        process.kill()
        process.wait()


def main():
    bin_dirs = sys.argv[1:]
    corpus = {}
    for name, (package, command, env) in SERVERS.items():
        try:
            tools = record(bin_dirs, command, env)
        except (OSError, RuntimeError, ValueError, KeyError) as exc:
            print("%s: not recorded: %s" % (name, exc), file=sys.stderr)
            continue
        corpus[name] = {"package": package, "tools": tools}
        print("%-20s %3d tools" % (name, len(tools)), file=sys.stderr)
    print("%d servers, %d tools" % (len(corpus), sum(len(s["tools"]) for s in corpus.values())), file=sys.stderr)
    with open(os.path.join(HERE, "toolsearch", "corpus.json"), "w") as f:
        json.dump(corpus, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
