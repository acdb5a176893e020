"""The event log's writer process: ``python -m mcp_server.observe.writer_process CONFIG``.

See ``events.EventLog`` (the producer) and ``writer.run_writer`` (what this process runs)."""

from __future__ import annotations

import sys

from ..core import jsonio
from .writer import run_writer

if __name__ == "__main__":
    sys.exit(run_writer(jsonio.loads(sys.argv[1])))
