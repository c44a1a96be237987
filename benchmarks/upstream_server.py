"""An upstream for the aggregator figures: a stdio MCP server whose echo tool runs in-process."""
import json
import sys
TOOL = {"name": "echo", "description": "Echo.", "inputSchema": {"type": "object",
        "properties": {"message": {"type": "string"}}, "required": ["message"]}}
for line in sys.stdin:
    request = json.loads(line)
    method, params = request.get("method"), request.get("params") or {}
    if "id" not in request:
        continue
    if method == "initialize":
        result = {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "upstream", "version": "0"}}
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": params["arguments"]["message"]}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}) + "\n")
    sys.stdout.flush()
