"""FastMCP's proxy in front of one Streamable HTTP server, for benchmarks/proxies.py.

    PYTHON-WITH-FASTMCP benchmarks/fastmcp_proxy.py UPSTREAM_URL PORT

Serves http://127.0.0.1:PORT/mcp. FastMCP is a test-only peer: mcpstudio never imports it.
"""

import sys

from fastmcp.server import create_proxy

if __name__ == "__main__":
    create_proxy(sys.argv[1], name="fastmcp-proxy").run(
        transport="http", host="127.0.0.1", port=int(sys.argv[2]), path="/mcp", show_banner=False)
