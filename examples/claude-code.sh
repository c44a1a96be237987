#!/bin/sh
# Register mcpstudio tools with Claude Code (`claude mcp add NAME -- COMMAND...`).
# Everything after `--` is the server's command line, passed as separate words:
# quote each template word so your shell keeps the braces and brackets.
claude mcp add echo -- python3 /path/to/mcpstudio.py echo "{message}"
claude mcp add git_log -- python3 /path/to/mcpstudio.py --name git_log --read-only git -C "{repo # path of the git repository}" log --oneline "--max-count={limit}" -- "[paths...]"
claude mcp add utc_now -- python3 /path/to/mcpstudio.py --name utc_now --read-only --idempotent date -u "+%Y-%m-%dT%H:%M:%SZ"
