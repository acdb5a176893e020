"""The harness: drives a real server or gateway process with a script of raw frames (``replay.py``) and
compares its event log with a golden file (``golden.py``). Used by ``mcp-server golden``, the pytest
plugin and the tests; it spawns processes and opens sockets, so it is no part of ``offline/``."""
