"""The same tool on the official MCP Python SDK."""
import asyncio
import sys
try:
    from mcp.server.mcpserver import MCPServer as Server   # mcp 2.x
except ImportError:
    from mcp.server.fastmcp import FastMCP as Server       # mcp 1.x
COMMAND = sys.argv[1]
app = Server("sdk-bench")

@app.tool(name="echo")
async def echo(message: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        COMMAND, message, stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    return out.decode()

app.run()
