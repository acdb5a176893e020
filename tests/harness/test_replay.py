"""The harness's scripts: what `mcp-server golden` and the replay tests send, read from a file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_server.harness.replay import ReplayError, load_script


def test_a_wrapped_capture_replays_only_the_clients_frames(tmp_path: Path) -> None:
    """Issue 32 (the harness split from offline/): a `{direction, frame}` capture, as `check` reads it,
    is a script whose client frames are sent again, in order; the server's are not."""
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    capture = tmp_path / "capture.ndjson"
    capture.write_text(
        "".join(
            json.dumps(line) + "\n"
            for line in (
                {"direction": "client_to_server", "frame": ping},
                {"direction": "server_to_client", "frame": {"jsonrpc": "2.0", "id": 1, "result": {}}},
                {"send": {"jsonrpc": "2.0", "method": "notifications/initialized"}},
            )
        )
    )
    frames = [json.loads(frame) for frame in load_script(capture)]
    assert frames == [ping, {"jsonrpc": "2.0", "method": "notifications/initialized"}]


def test_a_script_line_that_is_not_json_is_named_in_the_error(tmp_path: Path) -> None:
    """Bad input gets a clear error: the line that is not JSON, by its number."""
    script = tmp_path / "script.ndjson"
    script.write_text('{"send": {"jsonrpc": "2.0", "id": 1, "method": "ping"}}\n{oops\n')
    with pytest.raises(ReplayError, match=r"script\.ndjson:2: not JSON"):
        load_script(script)
