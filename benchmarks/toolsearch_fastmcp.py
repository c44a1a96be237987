"""FastMCP's BM25SearchTransform ranking, run in FastMCP's own environment (fastmcp 4.1.2):
reads {"tools": [definitions], "queries": [text], "limit": N} on stdin, prints [[names], ...]."""
import json
import sys

from fastmcp.server.transforms.search.base import _extract_searchable_text
from fastmcp.server.transforms.search.bm25 import _BM25Index
from fastmcp.tools.base import Tool


def main():
    job = json.load(sys.stdin)
    tools = [Tool(name=d["name"], description=d.get("description"), parameters=d.get("inputSchema") or {})
             for d in job["tools"]]
    index = _BM25Index()  # what BM25SearchTransform._search builds, with its defaults
    index.build([_extract_searchable_text(tool) for tool in tools])
    json.dump([[tools[i].name for i in index.query(query, job["limit"])] for query in job["queries"]], sys.stdout)


if __name__ == "__main__":
    main()
