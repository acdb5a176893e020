"""The Session's one rule for request ids (ADR 43): one request per id in flight each way; a peer's
second one is refused; a peer's request under an id the session holds itself goes on under another."""

from __future__ import annotations

import itertools

import pytest

from mcp_server.core.errors import CanonicalError, Rejection
from mcp_server.core.session import Session
from mcp_server.core.types import CLIENT_TO_SERVER, SERVER_TO_CLIENT


def test_expecting_a_second_request_under_an_id_in_flight_is_refused_and_the_first_still_waits() -> None:
    """JSON-RPC 2.0 §4 (a response carries its request's id), ADR 43: a second request of one id in
    one direction is refused with the id named, never written over the first; the other direction,
    and the string "7" beside the number 7, are other ids."""
    session = Session()
    session.expect(CLIENT_TO_SERVER, 7, "tools/call", "gate")
    with pytest.raises(Rejection) as refused:
        session.expect(CLIENT_TO_SERVER, 7, "ping")
    assert refused.value.error is CanonicalError.DUPLICATE_REQUEST_ID
    assert refused.value.data()["id"] == 7
    first = session.peek(CLIENT_TO_SERVER, 7)
    assert first is not None and first.tool == "gate"
    session.expect(SERVER_TO_CLIENT, 7, "roots/list")
    session.expect(CLIENT_TO_SERVER, "7", "ping")
    assert len(session) == 3


def test_a_peers_request_is_in_flight_until_settled_and_one_of_the_sessions_own_is_not_the_peers() -> None:
    """ADR 43: a request of the session's own (the gateway's `tools/list`) holds its id, but a peer's
    request under it is no duplicate of the peer's: the session gave that id, not the peer."""
    session = Session()
    session.expect(CLIENT_TO_SERVER, 7, "tools/call")
    session.expect(CLIENT_TO_SERVER, "gateway-1", "tools/list", own=True)
    assert session.in_flight(CLIENT_TO_SERVER, 7) and not session.given(CLIENT_TO_SERVER, 7)
    assert session.given(CLIENT_TO_SERVER, "gateway-1") and not session.in_flight(CLIENT_TO_SERVER, "gateway-1")
    assert not session.in_flight(SERVER_TO_CLIENT, 7)
    session.settle(CLIENT_TO_SERVER, 7)
    session.settle(CLIENT_TO_SERVER, "gateway-1")
    assert not session.in_flight(CLIENT_TO_SERVER, 7) and not session.given(CLIENT_TO_SERVER, "gateway-1")


def test_a_peers_request_under_an_id_the_session_holds_is_renamed_and_its_own_id_given_back_once() -> None:
    """ADR 43: the peer's request goes on under a fresh id none holds (the first fresh one offered is
    taken too); meanwhile its own id is in flight (a second one is a duplicate) and its cancellation
    finds it; once restored, both ids are free again."""
    session = Session()
    session.expect(CLIENT_TO_SERVER, "gateway-1", "tools/list", own=True)
    offered = iter(["gateway-1", "renamed-1", "renamed-2"])
    wire = session.rename(CLIENT_TO_SERVER, "gateway-1", lambda: next(offered))
    assert wire == "renamed-1"
    session.expect(CLIENT_TO_SERVER, wire, "tools/call")
    assert session.in_flight(CLIENT_TO_SERVER, "gateway-1")
    assert not session.in_flight(CLIENT_TO_SERVER, wire) and session.given(CLIENT_TO_SERVER, wire)
    assert session.renamed_to(CLIENT_TO_SERVER, "gateway-1") == wire
    session.settle(CLIENT_TO_SERVER, wire)
    assert session.restore(CLIENT_TO_SERVER, wire) == "gateway-1"
    assert session.restore(CLIENT_TO_SERVER, wire) is None
    assert session.renamed_to(CLIENT_TO_SERVER, "gateway-1") is None
    assert not session.in_flight(CLIENT_TO_SERVER, "gateway-1") and not session.given(CLIENT_TO_SERVER, wire)


def test_a_free_id_is_the_one_wanted_unless_a_request_or_the_callers_own_table_holds_it() -> None:
    """ADR 43, the rule every table of ids in flight follows (an aggregate's member ids, a peer
    channel's): the id wanted when nothing waits under it that way, else the first fresh one free."""
    session = Session()
    session.expect(CLIENT_TO_SERVER, "a-1", "ping")
    numbers = itertools.count(2)

    def fresh() -> str:
        return f"a-{next(numbers)}"

    assert session.free_id(CLIENT_TO_SERVER, "x", fresh) == "x"
    assert session.free_id(CLIENT_TO_SERVER, "a-1", fresh) == "a-2"
    assert session.free_id(CLIENT_TO_SERVER, "a-3", fresh, taken={"a-3", "a-4"}) == "a-5"
    assert session.free_id(SERVER_TO_CLIENT, "a-1", fresh) == "a-1"


def test_a_request_of_the_sessions_own_may_be_stated_again_as_it_is_sent_and_stays_its_own() -> None:
    """ADR 43: a request of one's own is expected when asked and again as its bytes go (an aggregate's
    server side states the version they carry); that is no duplicate, and it is still the session's."""
    session = Session()
    session.expect(CLIENT_TO_SERVER, "aggregate-0-1", "tools/list", own=True)
    session.expect(CLIENT_TO_SERVER, "aggregate-0-1", "tools/list", None, "2026-07-28")
    stated = session.peek(CLIENT_TO_SERVER, "aggregate-0-1")
    assert stated is not None and stated.version == "2026-07-28"
    assert session.given(CLIENT_TO_SERVER, "aggregate-0-1")
