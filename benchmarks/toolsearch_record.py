"""Record the `tools/list` of public MCP servers into benchmarks/toolsearch/corpus.json (SERVERS), with
`--unseen` into benchmarks/toolsearch/unseen.json (UNSEEN: servers no ranking rule was written for), or with
`--fresh` into benchmarks/toolsearch/fresh.json (FRESH: servers recorded after the rule check, blind to it).

The servers are installed outside the repository (not committed):

    mkdir /tmp/servers && cd /tmp/servers && npm init -y && npm install --ignore-scripts \\
        @modelcontextprotocol/server-github @modelcontextprotocol/server-gitlab ...  (see SERVERS)
    python3 -m venv /tmp/py && /tmp/py/bin/pip install mcp-server-git mcp-server-fetch mcp-server-time
    python3 benchmarks/toolsearch_record.py /tmp/servers/node_modules/.bin /tmp/py/bin

The unseen servers, each pinned, into a throwaway folder:

    mkdir /tmp/unseen && cd /tmp/unseen && npm init -y && npm install --ignore-scripts PACKAGE@VERSION ...
    python3 -m venv /tmp/unseen/py && /tmp/unseen/py/bin/pip install PACKAGE==VERSION ...  (the PyPI ones)
    python3 benchmarks/toolsearch_record.py --unseen /tmp/unseen/node_modules/.bin /tmp/unseen/py/bin

The fresh servers (FRESH: issue 44's second blind corpus, recorded after the rule check that the unseen set
steered), each pinned: npm ones into one or two throwaway folders (two when their SDK versions clash), the PyPI
ones each in a venv of its own (CPython 3.13), then

    python3 benchmarks/toolsearch_record.py --fresh /tmp/fresh/node_modules/.bin /tmp/fresh2/node_modules/.bin \
        /tmp/fresh/py/bin /tmp/fresh/py2/bin

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

# Servers no ranking rule was written for (issue 44): name -> (package@version, command and arguments, environment)
UNSEEN = {
    "mongodb": ("mongodb-mcp-server@3.0.4", ["mongodb-mcp-server"], {"MDB_MCP_CONNECTION_STRING": "mongodb://localhost:1/db"}),
    "supabase": ("@supabase/mcp-server-supabase@0.13.0", ["mcp-server-supabase", "--access-token=" + DUMMY], {}),
    "datadog": ("@winor30/mcp-server-datadog@1.8.0", ["mcp-server-datadog"],
                {"DATADOG_API_KEY": DUMMY, "DATADOG_APP_KEY": DUMMY, "DATADOG_SITE": "datadoghq.com"}),
    "circleci": ("@circleci/mcp-server-circleci@0.20.0", ["mcp-server-circleci"], {"CIRCLECI_TOKEN": DUMMY}),
    "stripe": ("@stripe/mcp@0.3.3", ["../@stripe/mcp/dist/index.js", "--tools=all", "--api-key=sk_test_" + DUMMY], {}),
    "tavily": ("tavily-mcp@0.2.22", ["tavily-mcp"], {"TAVILY_API_KEY": DUMMY}),
    "desktop-commander": ("@wonderwhy-er/desktop-commander@0.2.52", ["desktop-commander"], {}),
    "chart": ("@antv/mcp-server-chart@0.9.10", ["mcp-server-chart"], {}),
    "shortcut": ("@shortcut/mcp@0.25.0", ["mcp-server-shortcut"], {"SHORTCUT_API_TOKEN": DUMMY}),
    "figma": ("figma-developer-mcp@0.13.2", ["figma-developer-mcp", "--stdio", "--figma-api-key=" + DUMMY], {}),
    "airtable": ("airtable-mcp-server@1.14.0", ["airtable-mcp-server"], {"AIRTABLE_API_KEY": DUMMY}),
    "todoist": ("todoist-mcp@1.3.4", ["todoist-mcp"], {"TODOIST_API_KEY": DUMMY, "API_KEY": DUMMY}),
    "discord": ("mcp-discord@1.3.4", ["mcp-discord"], {"DISCORD_TOKEN": DUMMY}),
    "linear": ("@tacticlaunch/mcp-linear@1.4.3", ["mcp-linear"], {"LINEAR_API_TOKEN": DUMMY}),
    "elasticsearch": ("@elastic/mcp-server-elasticsearch@0.3.1", ["mcp-server-elasticsearch"],
                      {"ES_URL": "http://localhost:1", "ES_API_KEY": DUMMY}),
    "grafana": ("@leval/mcp-grafana@1.1.7", ["mcp-grafana"], {"GRAFANA_URL": "http://localhost:1", "GRAFANA_TOKEN": DUMMY}),
    "jira": ("@aashari/mcp-server-atlassian-jira@3.3.0", ["mcp-atlassian-jira"],
             {"ATLASSIAN_SITE_NAME": "example", "ATLASSIAN_USER_EMAIL": "a@example.com", "ATLASSIAN_API_TOKEN": DUMMY}),
    "youtube-transcript": ("@kimtaeyoon83/mcp-server-youtube-transcript@0.1.1", ["mcp-server-youtube-transcript"], {}),
    "google-calendar": ("@cocal/google-calendar-mcp@2.6.3", ["google-calendar-mcp"], {"GOOGLE_OAUTH_CREDENTIALS": "/nonexistent.json"}),
    "gmail": ("@gongrzhe/server-gmail-autoauth-mcp@1.1.11", ["gmail-mcp"], {}),
    "open-meteo": ("open-meteo-mcp-server@2.1.0", ["open-meteo-mcp-server"], {}),
    "launchdarkly": ("@launchdarkly/mcp-server@0.6.2", ["mcp", "start", "--api-key", DUMMY], {}),
    "perplexity": ("@perplexity-ai/mcp-server@1.2.1", ["perplexity-mcp"], {"PERPLEXITY_API_KEY": DUMMY}),
    "sqlite": ("mcp-server-sqlite==2025.4.25 (PyPI)", ["mcp-server-sqlite", "--db-path", "/tmp/toolsearch-record.db"], {}),
    "neo4j": ("mcp-neo4j-cypher==0.6.0 (PyPI)", ["mcp-neo4j-cypher"],
              {"NEO4J_URI": "bolt://localhost:1", "NEO4J_USERNAME": "neo4j", "NEO4J_PASSWORD": DUMMY}),
    "atlassian": ("mcp-atlassian==0.21.1 (PyPI)", ["mcp-atlassian"],
                  {"JIRA_URL": "https://example.atlassian.net", "JIRA_USERNAME": "a@example.com", "JIRA_API_TOKEN": DUMMY,
                   "CONFLUENCE_URL": "https://example.atlassian.net/wiki", "CONFLUENCE_USERNAME": "a@example.com",
                   "CONFLUENCE_API_TOKEN": DUMMY}),
    "cloudwatch": ("awslabs.cloudwatch-mcp-server==0.0.13 (PyPI)", ["awslabs.cloudwatch-mcp-server"],
                   {"AWS_ACCESS_KEY_ID": DUMMY, "AWS_SECRET_ACCESS_KEY": DUMMY, "AWS_REGION": "us-east-1"}),
}

# Servers recorded for issue 44's second blind set, in neither corpus.json nor unseen.json, their intents
# (fresh-intents.json) written from these tool lists before any ranker ran on them
FRESH = {
    "exa": ("exa-mcp-server@3.4.1", ["exa-mcp-server"], {"EXA_API_KEY": DUMMY, "ENABLED_TOOLS": (
        "web_search_exa,web_search_advanced_exa,get_code_context_exa,deep_search_exa,crawling_exa,"
        "company_research_exa,linkedin_search_exa,people_search_exa,web_fetch_exa")}),
    "neon": ("@neondatabase/mcp-server-neon@0.3.7", ["mcp-server-neon", "start", DUMMY], {}),
    "pinecone": ("@pinecone-database/mcp@0.3.0", ["pinecone-mcp"], {"PINECONE_API_KEY": DUMMY}),
    "mapbox": ("@mapbox/mcp-server@0.2.0", ["../@mapbox/mcp-server/dist/index.js"],
               {"MAPBOX_ACCESS_TOKEN": "pk.eyJ1IjoiZHVtbXkiLCJhIjoiZHVtbXkifQ.dummy"}),
    "airbnb": ("@openbnb/mcp-server-airbnb@0.3.0", ["mcp-server-airbnb", "--ignore-robots-txt"], {}),
    "trello": ("@delorenj/mcp-server-trello@1.8.1", ["mcp-server-trello"],
               {"TRELLO_API_KEY": DUMMY, "TRELLO_TOKEN": DUMMY, "TRELLO_BOARD_ID": "b1"}),
    "asana": ("@roychri/mcp-server-asana@1.8.0", ["mcp-server-asana"], {"ASANA_ACCESS_TOKEN": DUMMY}),
    "browserbase": ("@browserbasehq/mcp-server-browserbase@2.4.3", ["mcp-server-browserbase"],
                    {"BROWSERBASE_API_KEY": DUMMY, "BROWSERBASE_PROJECT_ID": "p1"}),
    "plane": ("@makeplane/plane-mcp-server@0.1.5", ["plane-mcp-server"],
              {"PLANE_API_KEY": DUMMY, "PLANE_WORKSPACE_SLUG": "ws", "PLANE_API_HOST_URL": "http://localhost:1/"}),
    "line": ("@line/line-bot-mcp-server@0.4.2", ["line-bot-mcp-server"], {"CHANNEL_ACCESS_TOKEN": DUMMY,
                                                                          "DESTINATION_USER_ID": "U1"}),
    "taskmanager": ("@kazuph/mcp-taskmanager@1.1.1", ["mcp-taskmanager"], {}),
    "lara": ("@translated/lara-mcp@1.0.6", ["lara-mcp"], {"LARA_ACCESS_KEY_ID": DUMMY, "LARA_ACCESS_KEY_SECRET": DUMMY}),
    "cloudflare": ("@cloudflare/mcp-server-cloudflare@0.2.0", ["mcp-server-cloudflare", "run", "acc123"],
                   {"CLOUDFLARE_API_TOKEN": DUMMY}),
    "obsidian": ("mcp-obsidian==0.2.3 (PyPI)", ["mcp-obsidian"], {"OBSIDIAN_API_KEY": DUMMY}),
    "excel": ("excel-mcp-server==2.2.2 (PyPI)", ["excel-mcp-server", "stdio"], {"EXCEL_FILES_PATH": "/tmp/toolsearch-record"}),
    "pandoc": ("mcp-pandoc==0.11.1 (PyPI)", ["mcp-pandoc"], {}),
    "clickhouse": ("mcp-clickhouse==0.7.0 (PyPI)", ["mcp-clickhouse"], {"CLICKHOUSE_HOST": "localhost", "CLICKHOUSE_PORT": "1",
                                                                 "CLICKHOUSE_USER": "u", "CLICKHOUSE_PASSWORD": DUMMY}),
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
    chosen = next((arg for arg in sys.argv[1:] if arg in ("--unseen", "--fresh")), "")
    bin_dirs = [arg for arg in sys.argv[1:] if arg != chosen]
    servers, output = {"--unseen": (UNSEEN, "unseen.json"), "--fresh": (FRESH, "fresh.json")}.get(
        chosen, (SERVERS, "corpus.json"))
    corpus = {}
    for name, (package, command, env) in servers.items():
        try:
            tools = record(bin_dirs, command, env)
        except (OSError, RuntimeError, ValueError, KeyError) as exc:
            print("%s: not recorded: %s" % (name, exc), file=sys.stderr)
            continue
        corpus[name] = {"package": package, "tools": tools}
        print("%-20s %3d tools" % (name, len(tools)), file=sys.stderr)
    print("%d servers, %d tools" % (len(corpus), sum(len(s["tools"]) for s in corpus.values())), file=sys.stderr)
    with open(os.path.join(HERE, "toolsearch", output), "w") as f:
        json.dump(corpus, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
