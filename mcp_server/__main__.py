"""``python -m mcp_server``: the same program as the ``mcp-server`` console script."""

from .cli import main

raise SystemExit(main())
