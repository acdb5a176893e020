"""`check` on the capture of a client that pipelines: its frames come before the replies, as it
wrote them, and `check` holds them as the live gateway did (`ledger/waits.py`, ADR 42), so it gives
the gateway's verdicts, in each of its input formats.

Real processes: a raw NDJSON client that writes the handshake, the list and its calls at once, the
gateway in front of the official `mcp` SDK's server, and `check` on what the client saw.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_server.offline.check import HELD_FRAMES, check_capture
from mcp_server.registry.schemas import SchemaRegistry

from ..conftest import initialize_frame
from .captures import C2S, SDK_SERVER, Record, Recorder, run_check, write_raw, write_wrapped

COMPARED = ("violations", "violations_by_party", "violations_by_method", "violations_by_tool")


def _call(request_id: int, name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def _pipelined_session(tmp_path: Path, *calls: dict[str, Any]) -> tuple[list[Record], dict[str, Any], Path]:
    """The client's whole session written at once through a real gateway (observe mode), then every
    reply read: what it saw in order, the gateway's report and its run log."""
    runs = tmp_path / "runs"
    gateway = [sys.executable, "-m", "mcp_server", "gateway", "--mode", "observe", "--", *SDK_SERVER]
    recorder = Recorder(tmp_path, gateway, MCP_RUNS_DIR=str(runs))
    try:
        recorder.pipeline(
            initialize_frame("2025-11-25", 1),
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            *calls,
        )
        recorder.answers(1, 2, *(call["id"] for call in calls))
    finally:
        recorder.close()
    [report] = (runs / "mcp_server" / "gateway").glob("*-report.json")
    return recorder.records, json.loads(report.read_text()), runs / "mcp_server" / "gateway" / ".latest"


@pytest.mark.parametrize(
    ("calls", "violations"),
    [
        ([_call(3, "add", a=1, b=2), _call(4, "echo", text="x")], {}),
        ([_call(3, "add", a="one", b=2)], {"invalid_tool_input": 1}),  # checked once `add` is listed
    ],
    ids=["valid", "bad-arguments"],
)
def test_a_pipelining_clients_capture_gets_the_live_gateways_verdicts_in_every_input_format(
    tmp_path: Path, calls: list[dict[str, Any]], violations: dict[str, int]
) -> None:
    """ADR 42 (issue 18's pipelined session, offline): the frames behind the pending `initialize`
    are checked at the version its reply settles, a call of a tool not listed yet once the pending
    `tools/list` lists it; raw frames and `{"direction", "frame"}` lines give the gateway's verdicts
    (a valid session had its `tools/list` and calls flagged `invalid_request_meta`), and so does the
    gateway's own run log."""
    records, live, log = _pipelined_session(tmp_path, *calls)
    assert [direction for direction, _ in records[: 3 + len(calls)]] == [C2S] * (3 + len(calls))
    assert live["violations"] == violations
    for layout, write in (("raw", write_raw), ("wrapped", write_wrapped)):
        checked = run_check(tmp_path, str(write(tmp_path / f"{layout}.ndjson", records)), "--format", "json")
        assert checked.returncode == (1 if violations else 0), checked.stdout + checked.stderr
        offline = json.loads(checked.stdout)
        assert offline["protocol_version"] == "2025-11-25", layout
        for section in COMPARED:
            assert offline[section] == live[section], (layout, section)
        assert offline["frames"] == live["frames"], layout
    logged = run_check(tmp_path, str(log), "--format", "json")
    assert json.loads(logged.stdout)["violations"] == violations


def _checked(tmp_path: Path, registry: SchemaRegistry, frames: list[dict[str, Any]]) -> dict[str, Any]:
    capture = tmp_path / "capture.ndjson"
    capture.write_text("".join(json.dumps(frame) + "\n" for frame in frames))
    return check_capture(capture, registry=registry).to_document()


def test_a_reply_to_a_held_request_lets_it_and_the_client_frames_before_it_go_first(
    tmp_path: Path, registry: SchemaRegistry
) -> None:
    """ADR 42: a reply proves its request went on (the gateway's wait for the `initialize` ended
    without its reply): the request is taken before it, never an `unknown_response_id`."""
    frames = [
        initialize_frame("2025-11-25", 1),  # never answered
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "result": {}},
    ]
    document = _checked(tmp_path, registry, frames)
    assert document["violations"] == {}
    assert document["frames"] == {"client_to_server": {"initialize": 1, "ping": 1}, "server_to_client": {"ping": 1}}


def test_client_frames_still_held_when_the_capture_ends_are_each_judged_and_memory_stays_bounded(
    tmp_path: Path, registry: SchemaRegistry
) -> None:
    """ADR 42: behind an `initialize` never answered, every client frame is still judged, in its order,
    at the end (as the gateway checks a frame once its wait is over); more than `HELD_FRAMES` of them
    are taken oldest first as they come, so a capture is never held whole."""
    pings = [{"jsonrpc": "2.0", "id": n, "method": "ping"} for n in range(2, HELD_FRAMES + 12)]
    document = _checked(tmp_path, registry, [initialize_frame("2025-11-25", 1), *pings])
    assert document["violations"] == {}
    assert document["frames"] == {"client_to_server": {"initialize": 1, "ping": len(pings)}}
