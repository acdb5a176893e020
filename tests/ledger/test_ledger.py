"""The session ledger: the live gateway and `check` on a capture of the same frames give the same verdicts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp_server.core.errors import CanonicalError, Rejection
from mcp_server.core.types import CLIENT_TO_SERVER, SERVER_TO_CLIENT, Frame, Message
from mcp_server.ledger.verdicts import Action
from mcp_server.observe.report import EXAMPLES_PER_RULE
from mcp_server.registry.schemas import SchemaRegistry

from ..conftest import ROOT, cli, initialize_frame, server_env
from .observing import observing, take

WAIT = 30.0
TAP = [sys.executable, str(ROOT / "tests" / "upstreams" / "recording.py")]
BROKEN = [sys.executable, str(ROOT / "tests" / "upstreams" / "broken_server.py")]
COMPARED = ("frames", "violations", "violations_by_method", "violations_by_tool", "violations_by_party")


def _call(name: str, request_id: int, **arguments: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


# What the client sends, and whether the upstream answers it under its id (`unknown_id` answers another).
SCRIPT: list[tuple[dict[str, Any], bool]] = [
    (initialize_frame("2025-11-25", 1), True),
    ({"jsonrpc": "2.0", "method": "notifications/initialized"}, False),
    ({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, True),  # a tool whose schema does not compile
    (_call("bad_result", 3), True),  # a result that is no CallToolResult
    (_call("wrong_structured", 4), True),  # structuredContent against its outputSchema
    ({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}, True),  # a tool's schema changed
    (_call("strict", 6, n="seven"), True),  # the client's arguments against the inputSchema
    (_call("unknown_id", 7), False),  # answered under an id never sent
    ({"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {"cursor": 5}}, True),  # bad params
]


def _live_observe_run(tmp_path: Path, capture: Path) -> dict[str, Any]:
    """The script through a real gateway (observe mode) in front of the broken upstream, each frame
    crossing to the upstream recorded; returns the gateway's report."""
    runs = tmp_path / "runs"
    command = [
        sys.executable,
        "-m",
        "mcp_server",
        "gateway",
        "--mode",
        "observe",
        "--",
        *TAP,
        str(capture),
        "--",
        *BROKEN,
    ]
    gateway = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(tmp_path, MCP_RUNS_DIR=str(runs)),
    )
    assert gateway.stdin is not None and gateway.stdout is not None
    try:
        for frame, answered in SCRIPT:
            gateway.stdin.write(json.dumps(frame).encode() + b"\n")
            gateway.stdin.flush()
            while answered:  # the upstream answers in order: its reply to this frame ends the wait
                line = gateway.stdout.readline()
                assert line, "the gateway closed stdout"
                answered = json.loads(line).get("id") != frame["id"]
        gateway.stdin.close()
        assert gateway.wait(WAIT) == 0
    finally:
        if gateway.poll() is None:
            gateway.kill()
            gateway.wait(WAIT)
        gateway.stdout.close()
    [report] = (runs / "mcp_server" / "gateway").glob("*-report.json")
    return json.loads(report.read_text())


def _shown(examples: dict[str, list[dict[str, Any]]]) -> dict[str, list[tuple[Any, ...]]]:
    """What each example says of the frame (not where it was read: a session, a line)."""
    keys = ("rule", "party", "direction", "method", "tool", "id", "action", "errors", "excerpt")
    return {rule: [tuple(json.dumps(e.get(key)) for key in keys) for e in listed] for rule, listed in examples.items()}


def test_check_on_a_capture_gives_the_live_gateways_verdicts_frame_for_frame(tmp_path: Path) -> None:
    """Issue 32: `check` and the gateway give the same verdicts on the same frames, by construction:
    a real gateway in observe mode before a real (broken) upstream, and `check` on the frames that
    crossed, give one report (frames, violations per rule, method, tool and party, and examples)."""
    capture = tmp_path / "capture.ndjson"
    live = _live_observe_run(tmp_path, capture)
    checked = cli(tmp_path, "check", str(capture), "--format", "json")
    assert checked.returncode == 1, checked.stderr
    offline = json.loads(checked.stdout)
    assert set(live["violations"]) == {
        "invalid_tool_schema",
        "invalid_params",
        "invalid_tool_output",
        "tool_definition_changed",
        "invalid_tool_input",
        "unknown_response_id",
    }
    # The one frame the capture holds that the live report does not count: the gateway's own
    # cancellation, at the end, of the call the upstream answered under another id.
    assert offline["frames"]["client_to_server"].pop("notifications/cancelled") == 1
    for section in COMPARED:
        assert offline[section] == live[section], section
    assert _shown(offline["examples"]) == _shown(live["examples"])


def test_a_cancelled_requests_late_reply_is_late_for_check_as_for_the_gateway(registry: SchemaRegistry) -> None:
    """MCP basic/utilities/cancellation: a reply after its request's cancellation is late, not an
    unknown id (the ledger's one rule, which `check` used to restate without it)."""
    ledger = observing(registry)
    session = ledger.session
    take(ledger, CLIENT_TO_SERVER, initialize_frame("2025-11-25", 1))
    result = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}
    assert isinstance(take(ledger, SERVER_TO_CLIENT, {"jsonrpc": "2.0", "id": 1, "result": result}), Message)
    assert session.version == "2025-11-25"
    take(ledger, CLIENT_TO_SERVER, {"jsonrpc": "2.0", "id": 2, "method": "ping"})
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
    assert isinstance(take(ledger, CLIENT_TO_SERVER, cancel), Message)
    late = {"jsonrpc": "2.0", "id": 2, "result": {}}
    frame = Frame(json.dumps(late).encode(), "test", session, None, SERVER_TO_CLIENT)
    refused = ledger.check(frame)
    assert isinstance(refused, Rejection) and refused.error is CanonicalError.UNKNOWN_RESPONSE_ID
    assert ledger.judge(frame, refused) is Action.LATE
    assert ledger.report.violations == {}


def test_the_gateway_and_check_keep_the_same_number_of_examples_per_rule(registry: SchemaRegistry) -> None:
    """Issue 32: one report model, one bound on the examples kept per rule (it was 3 and 5)."""
    ledger = observing(registry)
    for number in range(EXAMPLES_PER_RULE + 3):
        frame = Frame(b'{"jsonrpc":"2.0","id":%d,"result":{}}' % number, "test", ledger.session, None, SERVER_TO_CLIENT)
        refused = ledger.check(frame)
        assert isinstance(refused, Rejection)
        assert ledger.judge(frame, refused) is Action.OBSERVED
    assert ledger.report.violations == {"unknown_response_id": EXAMPLES_PER_RULE + 3}
    assert len(ledger.report.examples["unknown_response_id"]) == EXAMPLES_PER_RULE
