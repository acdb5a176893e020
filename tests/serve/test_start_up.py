"""What `serve` loads (issue 34: `serve` over STDIO within 40 MiB resident): nothing a run does not
use, here RE2 (2.5 MiB, for redaction, which `serve` without a policy never does in its process)
and the HTTP client stack."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ..conftest import initialize_frame, server_env

# `mcp-server serve` as the command line runs it, saying at its end which of these it imported.
_SERVED = """
import atexit, sys
watched = ("re2", "httpx", "httpcore")
imported = lambda: sorted(m for m in sys.modules if m.split(".")[0] in watched)
atexit.register(lambda: print("imported:", imported(), file=sys.stderr))
from mcp_server.cli import main
sys.exit(main(["serve"]))
"""


def _call(request_id: int, name: str, arguments: dict[str, object]) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def test_serve_over_stdio_without_a_policy_loads_no_redaction_engine_nor_http_client(tmp_path: Path) -> None:
    """Issue 34: a session of `serve` over STDIO (its tools called, every reply checked) imports
    neither RE2 nor the HTTP client stack."""
    frames = [
        initialize_frame("2025-11-25"),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        _call(1, "list_schemas", {}),
        _call(2, "validate_asset", {"asset": {"content": [], "resultType": "complete"}, "schema": "CallToolResult"}),
    ]
    script = "".join(json.dumps(frame) + "\n" for frame in frames)
    served = subprocess.run(
        [sys.executable, "-c", _SERVED],
        input=script,
        capture_output=True,
        text=True,
        env=server_env(tmp_path),
        timeout=60,
        check=False,
    )
    assert served.returncode == 0, served.stderr
    replies = [json.loads(line) for line in served.stdout.splitlines()]
    assert [reply["id"] for reply in replies] == [0, 1, 2]
    assert all("result" in reply and not reply["result"].get("isError") for reply in replies)
    assert "imported: []" in served.stderr.splitlines()
