"""Floor: about the least an asyncio stdio MCP server needs to run a command."""
import asyncio
import json
import sys

COMMAND = sys.argv[1]
TOOL = {"name": "echo", "description": "Run a command.",
        "inputSchema": {"type": "object", "required": ["message"],
                        "properties": {"message": {"type": "string"}}}}

async def call(arguments):
    proc = await asyncio.create_subprocess_exec(
        COMMAND, arguments["message"], stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    return {"content": [{"type": "text", "text": out.decode()}],
            "isError": proc.returncode != 0}

async def answer(request, write):
    method, params = request.get("method"), request.get("params") or {}
    reply = {"jsonrpc": "2.0", "id": request["id"]}
    if method == "initialize":
        reply["result"] = {"protocolVersion": params["protocolVersion"],
                           "capabilities": {"tools": {}},
                           "serverInfo": {"name": "floor", "version": "0"}}
    elif method == "tools/list":
        reply["result"] = {"tools": [TOOL]}
    elif method == "tools/call":
        reply["result"] = await call(params["arguments"])
    else:
        reply["error"] = {"code": -32601, "message": "no such method"}
    write(reply)

async def main():
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout.buffer

    def write(message):
        out.write(json.dumps(message).encode() + b"\n")
        out.flush()

    tasks = set()
    while True:
        line = await reader.readline()
        if not line:
            break
        request = json.loads(line)
        if "id" in request:
            task = asyncio.ensure_future(answer(request, write))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.wait(tasks)

asyncio.run(main())
