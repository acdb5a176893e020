"""One request per id in flight (ADR 43), as the ledger judges it: the live gateway, its bridges'
and an aggregate's sides, and `check` on a capture refuse a request under an id its sender's earlier
one still waits on, in either direction and in every mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcp_server.core import jsonio
from mcp_server.core.errors import CanonicalError, Rejection
from mcp_server.core.types import CLIENT_TO_SERVER, SERVER_TO_CLIENT, Direction, Frame, Message
from mcp_server.gateway.config import GatewayConfig, Mode
from mcp_server.ledger.ledger import Ledger
from mcp_server.ledger.modes import OBSERVE_ALL, Modes
from mcp_server.ledger.verdicts import Action
from mcp_server.observe.report import ConformanceReport
from mcp_server.offline.check import check_capture
from mcp_server.registry.schemas import SchemaRegistry

from ..offline.captures import C2S, S2C, handshake, write_wrapped

ASKS = {CLIENT_TO_SERVER: "ping", SERVER_TO_CLIENT: "roots/list"}


def _ledger(registry: SchemaRegistry, modes: Modes) -> Ledger:
    ledger = Ledger(registry, modes, ConformanceReport(upstream="test", mode="test"), limits=(1 << 20, 1 << 20))
    ledger.session.negotiate("2025-11-25")
    return ledger


def _sent(ledger: Ledger, direction: Direction, document: dict[str, Any]) -> Message | Rejection:
    """A frame through the ledger as the gateway takes it: checked, and a request that goes on awaited."""
    frame = Frame(jsonio.dumps(document), "test", ledger.session, None, direction)
    verdict = ledger.check(frame, document)
    if isinstance(verdict, Message):
        ledger.passed(frame, verdict)
        ledger.went_on(direction, verdict)
    return verdict


@pytest.mark.parametrize("direction", [CLIENT_TO_SERVER, SERVER_TO_CLIENT])
@pytest.mark.parametrize("mode", [Mode.ENFORCE, Mode.OBSERVE])
def test_a_request_under_an_id_its_sender_still_waits_on_is_refused_in_every_mode(
    registry: SchemaRegistry, direction: Direction, mode: Mode
) -> None:
    """JSON-RPC 2.0 §4 (a response carries its request's id), ADR 43: the second request would take
    the first's reply, so it is refused, observe mode too (relayed, a reply is lost), counted against
    its sender; the first still waits and its answer settles it; then the id is free again."""
    ledger = _ledger(registry, GatewayConfig(mode=mode))
    request = {"jsonrpc": "2.0", "id": 7, "method": ASKS[direction]}
    assert isinstance(_sent(ledger, direction, request), Message)
    refused = _sent(ledger, direction, request)
    assert isinstance(refused, Rejection) and refused.error is CanonicalError.DUPLICATE_REQUEST_ID
    assert refused.data()["id"] == 7 and refused.message is not None and refused.message.id == 7
    assert ledger.judge(Frame(b"", "test", ledger.session, None, direction), refused) is Action.ENFORCED
    party = "client" if direction is CLIENT_TO_SERVER else "upstream"
    assert ledger.report.to_document()["violations_by_party"] == {"duplicate_request_id": {party: 1}}
    result = {"roots": []} if direction is SERVER_TO_CLIENT else {}
    assert isinstance(_sent(ledger, direction.opposite, {"jsonrpc": "2.0", "id": 7, "result": result}), Message)
    assert isinstance(_sent(ledger, direction, request), Message)


def test_check_on_a_capture_reports_a_duplicate_request_as_its_senders_violation(
    tmp_path: Path, registry: SchemaRegistry
) -> None:
    """ADR 43, one verdict everywhere: `check` (observe mode throughout) refuses what the live gateway
    refuses: the client's second request under an id in flight is the client's violation, and the
    reply to the first settles the first."""
    call = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
    records = [
        *((C2S if "method" in frame else S2C, frame) for frame in handshake()),
        (C2S, call),
        (C2S, call),
        (S2C, {"jsonrpc": "2.0", "id": 7, "result": {}}),
    ]
    document = check_capture(write_wrapped(tmp_path / "capture.ndjson", records), registry=registry).to_document()
    assert document["violations"] == {"duplicate_request_id": 1}
    assert document["violations_by_party"] == {"duplicate_request_id": {"client": 1}}


def test_a_ledger_that_observes_everything_refuses_a_duplicate_all_the_same(registry: SchemaRegistry) -> None:
    """ADR 43: a recording's verdicts (every frame observed) name the duplicate too."""
    ledger = _ledger(registry, OBSERVE_ALL)
    request = {"jsonrpc": "2.0", "id": "a", "method": "ping"}
    _sent(ledger, CLIENT_TO_SERVER, request)
    refused = _sent(ledger, CLIENT_TO_SERVER, request)
    assert isinstance(refused, Rejection)
    assert ledger.judge(Frame(b"", "test", ledger.session, None, CLIENT_TO_SERVER), refused) is Action.ENFORCED
