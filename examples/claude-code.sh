#!/bin/sh
# Register mcpstudio tools with Claude Code, in your user scope (`claude mcp add -s user NAME -- COMMAND...`;
# without -s user the server is added for the current folder only).
# Everything after `--` is the server's command line, passed as separate words:
# quote each template word so your shell keeps the braces and brackets.
claude mcp add -s user echo --env PYTHONPATH=/path/to/mcpstudio -- python3 -m mcpstudio echo "{message}"
claude mcp add -s user git_log --env PYTHONPATH=/path/to/mcpstudio -- python3 -m mcpstudio --name git_log --read-only git -C "{repo # path of the git repository}" log --oneline "--max-count={limit}" -- "[paths...]"
claude mcp add -s user utc_now --env PYTHONPATH=/path/to/mcpstudio -- python3 -m mcpstudio --name utc_now --read-only --idempotent date -u "+%Y-%m-%dT%H:%M:%SZ"
