"""What an HTTP upstream's reply with a missing or wrong id answers (ADR 25), decided without I/O:
a real ledger's verdict on the frame, a real session with the request it waits for."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_server.core import jsonio
from mcp_server.core.errors import CanonicalError, Rejection
from mcp_server.core.session import Session
from mcp_server.core.types import CLIENT_TO_SERVER, ERROR_RESPONSE, REQUEST, SERVER_TO_CLIENT, Frame, Message
from mcp_server.gateway.attribution import Attribution, attribute, unmatched
from mcp_server.gateway.config import GatewayConfig
from mcp_server.ledger.ledger import Ledger
from mcp_server.ledger.modes import Mode
from mcp_server.ledger.verdicts import Action
from mcp_server.observe.report import ConformanceReport
from mcp_server.registry.schemas import SchemaRegistry

NO_ID = b'{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request"}}'
NULL_ID = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request"}}'
WRONG_ID = b'{"jsonrpc":"2.0","id":99,"result":{}}'


def _attributed(registry: SchemaRegistry, raw: bytes, mode: Mode = Mode.ENFORCE) -> tuple[Attribution, Any]:
    """``raw`` from the upstream on the response of the session's request 7 (``ping``, 2025-11-25)."""
    session = Session()
    session.negotiate("2025-11-25")
    config = GatewayConfig(mode=mode)
    ledger = Ledger(
        registry,
        config,
        ConformanceReport(upstream="test", mode=mode.value),
        session=session,
        limits=(1 << 20, 1 << 20),
    )
    session.follow(CLIENT_TO_SERVER, Message(REQUEST, 7, "ping", {}, "2025-11-25"))
    frame = Frame(raw, "upstream", session, None, SERVER_TO_CLIENT)
    verdict = ledger.check(frame)
    assert unmatched(verdict, 7, session)
    pending = session.settle(CLIENT_TO_SERVER, 7)
    assert pending is not None
    attribution = attribute(frame, verdict, 7, pending, config, registry)
    return attribution, jsonio.loads(attribution.reply.to_bytes())


def test_a_valid_reply_without_an_id_goes_on_under_its_requests_id(registry: SchemaRegistry) -> None:
    """ADR 25: a reply 2025-11-25 lets leave its id out answers the request whose response carried it."""
    attribution, sent = _attributed(registry, NO_ID)
    assert attribution.action is None
    assert attribution.stands_for == Message(ERROR_RESPONSE, 7, "ping", version="2025-11-25")
    assert sent == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32000, "message": "Bad Request"}}
    assert attribution.reply.code == -32000


def test_a_null_id_reply_is_answered_in_its_place_in_enforce_mode(registry: SchemaRegistry) -> None:
    """ADR 25 (issue 29, row 4): a refused unmatched reply gives the client UPSTREAM_INVALID_REPLY with
    the upstream's code and message and the rule it broke."""
    attribution, sent = _attributed(registry, NULL_ID)
    assert attribution.action is Action.ANSWERED
    assert sent["id"] == 7
    assert sent["error"]["code"] == CanonicalError.UPSTREAM_INVALID_REPLY.jsonrpc_code
    assert sent["error"]["data"]["code"] == -32000
    assert sent["error"]["data"]["rule"] == CanonicalError.INVALID_PARAMS.slug


def test_a_null_id_reply_goes_on_under_its_requests_id_in_observe_mode(registry: SchemaRegistry) -> None:
    """ADR 25: observe mode gives the client the upstream's own error under its request's id."""
    attribution, sent = _attributed(registry, NULL_ID, Mode.OBSERVE)
    assert attribution.action is Action.OBSERVED
    assert sent == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32000, "message": "Bad Request"}}


@pytest.mark.parametrize("mode", [Mode.ENFORCE, Mode.OBSERVE])
def test_an_unreadable_frame_on_a_requests_response_is_answered_in_its_place(
    registry: SchemaRegistry, mode: Mode
) -> None:
    """ADR 25: a frame that is no reply object has nothing to pass on, in either mode."""
    attribution, sent = _attributed(registry, b"not json", mode)
    assert attribution.action is Action.ANSWERED
    assert sent["error"]["code"] == CanonicalError.UPSTREAM_INVALID_REPLY.jsonrpc_code
    assert sent["error"]["data"]["rule"] == CanonicalError.PARSE_ERROR.slug


def test_a_wrong_id_reply_answers_the_request_it_came_for(registry: SchemaRegistry) -> None:
    """ADR 25: a reply naming no waiting request, on a request's own response, is that request's."""
    attribution, sent = _attributed(registry, WRONG_ID)
    assert attribution.action is Action.ANSWERED
    assert sent["id"] == 7
    assert sent["error"]["data"]["rule"] == CanonicalError.UNKNOWN_RESPONSE_ID.slug


def test_a_reply_to_a_known_request_or_a_request_answered_is_not_attributed() -> None:
    """ADR 25: only a reply matching no request, while its carrier still waits, is attributed."""
    session = Session()
    session.negotiate("2025-11-25")
    session.follow(CLIENT_TO_SERVER, Message(REQUEST, 7, "ping", {}, "2025-11-25"))
    matched = Message(ERROR_RESPONSE, 7, "ping", version="2025-11-25")
    assert not unmatched(matched, 7, session)
    assert not unmatched(Message(REQUEST, 8, "ping"), 7, session)
    assert not unmatched(Rejection(CanonicalError.PARSE_ERROR), 9, session)  # its carrier waits no more
    assert unmatched(Rejection(CanonicalError.PARSE_ERROR), 7, session)
