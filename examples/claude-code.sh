#!/bin/sh
# Register mcpstudio tools with Claude Code (`claude mcp add NAME -- COMMAND...`).
# Everything after `--` is the server's command line, passed as separate words:
# quote each template word so your shell keeps the braces and brackets.
claude mcp add echo --env PYTHONPATH=/path/to/mcpstudio -- python3 -m mcpstudio echo "{message}"
claude mcp add git_log --env PYTHONPATH=/path/to/mcpstudio -- python3 -m mcpstudio --name git_log --read-only git -C "{repo # path of the git repository}" log --oneline "--max-count={limit}" -- "[paths...]"
claude mcp add utc_now --env PYTHONPATH=/path/to/mcpstudio -- python3 -m mcpstudio --name utc_now --read-only --idempotent date -u "+%Y-%m-%dT%H:%M:%SZ"
