"""The event log's writer process: ``python -m mcp_server.event_writer CONFIG`` (see ``events.EventLog``)."""

from __future__ import annotations

import sys

from ..core import jsonio
from .events import run_writer

if __name__ == "__main__":
    sys.exit(run_writer(jsonio.loads(sys.argv[1])))
