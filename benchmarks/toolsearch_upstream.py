"""A stdio MCP server that lists recorded tools: `toolsearch_upstream.py CORPUS SERVER` serves the tools
SERVER listed when it was recorded (SERVER `synthetic:N`: N made-up tools from the whole corpus), and
answers every call with `SERVER/TOOL called with ARGUMENTS`."""
import json
import sys


def synthetic(corpus: dict, count: int) -> list:
    """`count` distinct tools: the corpus's, renamed and reworded round after round."""
    real = [tool for server in corpus.values() for tool in server["tools"]]
    return [dict(tool, name="%s_v%d" % (tool["name"], number // len(real)),
                 description="%s (variant %d)" % (tool.get("description") or "", number // len(real)))
            for number, tool in ((n, real[n % len(real)]) for n in range(count))]


def main():
    with open(sys.argv[1]) as f:
        corpus = json.load(f)
    server = sys.argv[2]
    tools = synthetic(corpus, int(server[10:])) if server.startswith("synthetic:") else corpus[server]["tools"]
    for line in sys.stdin:
        request = json.loads(line)
        method, params = request.get("method"), request.get("params") or {}
        if "id" not in request:
            continue
        if method == "initialize":
            result = {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": server, "version": "0"}}
        elif method == "tools/list":
            start = int(params.get("cursor") or 0)
            result = {"tools": tools[start:start + 500]}
            if start + 500 < len(tools):
                result["nextCursor"] = str(start + 500)
        elif method == "tools/call":
            text = "%s/%s called with %s" % (server, params["name"], json.dumps(params.get("arguments"), sort_keys=True))
            result = {"content": [{"type": "text", "text": text}]}
        else:
            result = {}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
