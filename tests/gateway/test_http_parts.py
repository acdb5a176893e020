"""The HTTP front's decisions taken without HTTP: a stateless request's names and where a server
message goes, on real frames, messages and streams."""

from __future__ import annotations

from typing import Any

from mcp_server.core import jsonio
from mcp_server.core.session import Session
from mcp_server.core.types import NOTIFICATION, Frame, Message, Reply, RequestId
from mcp_server.gateway.http_renames import Renames
from mcp_server.gateway.http_server_messages import ServerMessages
from mcp_server.gateway.http_session import UNREADABLE, read_post
from mcp_server.registry.versions import SUBSCRIPTION_ID_META
from mcp_server.transport.streamable import Stream


def _call(request_id: RequestId, token: Any = None) -> Frame:
    meta = {} if token is None else {"_meta": {"progressToken": token}}
    document = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": "echo", **meta}}
    return Frame(jsonio.dumps(document), "http", Session())


def _sent(stream: Stream) -> list[Any]:
    items = []
    while not stream.queue.empty():
        item = stream.queue.get_nowait()
        items.append(None if item is None else jsonio.loads(item[0].to_bytes()))
    return items


def _notification(params: dict[str, Any], method: str = "notifications/progress") -> tuple[Reply, Message]:
    document = {"jsonrpc": "2.0", "method": method, "params": params}
    return Reply(document=document), Message(NOTIFICATION, None, method, params, document=document)


def test_a_stateless_request_whose_id_and_token_are_free_keeps_them() -> None:
    """ADR 7 (the shared stateless session): a request is renamed only where another exchange holds its names."""
    frame = _call(1, "t")
    renamed = Renames().unique(frame, read_post(frame), {}, {})
    assert (renamed.frame, renamed.original, renamed.wire, renamed.token) == (frame, None, 1, "t")


def test_a_stateless_request_whose_id_and_token_are_taken_gets_the_gateways() -> None:
    """ADR 7 (the shared stateless session): an id or progress token another exchange holds, upstream or in the
    chain, is renamed, and the client's own is kept to give back."""
    renames = Renames()
    renames.checking_tokens.add("t")
    frame = _call(1, "t")
    renamed = renames.unique(frame, read_post(frame), {1: Stream()}, {})
    sent = jsonio.loads(renamed.frame.raw)
    assert renamed.original == 1 and renamed.wire == sent["id"] != 1
    assert renames.ids == {sent["id"]: 1}
    assert renamed.token == sent["params"]["_meta"]["progressToken"] != "t"
    assert renames.tokens == {renamed.token: "t"}


def test_an_unreadable_post_is_no_request_to_rename() -> None:
    """Issue 32: the front reads a POST once; one that is no JSON names no id and is not renamed."""
    frame = Frame(b"{not json", "http", Session())
    assert read_post(frame) is UNREADABLE
    assert Renames().unique(frame, UNREADABLE, {}, {}).wire is None


def test_a_renamed_requests_progress_goes_on_its_stream_under_the_clients_token() -> None:
    """Spec: utilities/progress (progress goes with the request's token); ADR 7: the client gets
    its own token back."""
    renames = Renames()
    renames.tokens["renamed-1"] = "t"
    stream = Stream(sse=True)
    messages = ServerMessages({"w": stream}, renames, stateless=True)
    messages.progress["renamed-1"] = stream
    messages.notify(*_notification({"progressToken": "renamed-1", "progress": 1}))
    assert [sent["params"]["progressToken"] for sent in _sent(stream)] == ["t"]


def test_a_stateless_message_of_no_known_request_reaches_no_exchange_when_two_are_in_flight() -> None:
    """ADR 7 (the shared stateless session): a message of no known request goes only to the one request in
    flight; with two (maybe two clients') it goes to neither."""
    first, second = Stream(sse=True), Stream(sse=True)
    waiting: dict[RequestId, Stream] = {1: first, 2: second}
    messages = ServerMessages(waiting, Renames(), stateless=True)
    messages.notify(*_notification({"level": "info", "data": "x"}, "notifications/message"))
    assert _sent(first) == [] and _sent(second) == [] and not messages.backlog
    del waiting[2]  # (the session's own table: the other request was answered)
    messages.notify(*_notification({"level": "info", "data": "x"}, "notifications/message"))
    assert len(_sent(first)) == 1


def test_a_sessions_message_waits_for_its_get_stream() -> None:
    """Spec: transports, "Streamable HTTP" (the server may send on the GET stream): with no stream
    open, a session's message is kept until one opens."""
    messages = ServerMessages({}, Renames(), stateless=False)
    messages.notify(*_notification({"level": "info", "data": "x"}, "notifications/message"))
    assert len(messages.backlog) == 1
    assert [sent["method"] for sent in _sent(messages.listen())] == ["notifications/message"]


def test_a_subscriptions_notification_goes_only_to_its_listen_request_under_the_clients_id() -> None:
    """ADR 7 (2026-07-28 subscriptions): a listen request's notifications go on its own stream,
    under the id its client gave; one whose stream is gone goes nowhere."""
    renames = Renames()
    renames.ids["renamed-2"] = 5
    listen, other = Stream(sse=True), Stream(sse=True)
    messages = ServerMessages({"renamed-2": listen, 6: other}, renames, stateless=True)
    messages.notify(*_notification({"_meta": {SUBSCRIPTION_ID_META: "renamed-2"}}, "notifications/tools/list_changed"))
    messages.notify(*_notification({"_meta": {SUBSCRIPTION_ID_META: 7}}, "notifications/tools/list_changed"))
    assert [sent["params"]["_meta"][SUBSCRIPTION_ID_META] for sent in _sent(listen)] == [5]
    assert _sent(other) == []
