"""The event log's compiled part (``mcp_server/_rows.c``): the queue of rows and a frame's row.

The events it leads to are checked end to end in test_events.py and by every golden; here, what
only the C code can get wrong: the order of a row's values, the queue's order and bounds, the
references it holds or lets go, and a clear error for every argument of the wrong shape.
"""

from __future__ import annotations

import gc
import re
import sys
from typing import Any

import pytest

from mcp_server._rows import ACTION, BEGAN, FRAME_ROW, REJECTION, SEEN, RowQueue
from mcp_server.core.errors import CanonicalError, Rejection
from mcp_server.core.types import Direction, Frame, Message, MessageKind, Reply, Session


class Recorder:
    """The callables a queue is given, recording how it calls them."""

    def __init__(self) -> None:
        self.full_calls = 0
        self.sessions: list[Session] = []
        self.refusals: list[tuple[Any, ...]] = []

    def full(self) -> None:
        self.full_calls += 1

    def session_id(self, session: Session) -> str:
        self.sessions.append(session)
        session.log_id = f"log-{session.id}"
        return session.log_id

    def refused(self, *args: Any) -> tuple[str, str | None, tuple[str, Any, bool]]:
        self.refusals.append(args)
        rejection = args[2]
        return "error", None, (rejection.error.name, rejection.errors, False)


def make_queue(batch: int = 1000) -> tuple[RowQueue, Recorder]:
    recorder = Recorder()
    queue = RowQueue(batch=batch, full=recorder.full, session_id=recorder.session_id, refused=recorder.refused)
    return queue, recorder


def call_frame(session: Session, request_id: Any = 7, params: Any = None) -> Frame:
    message = Message(kind=MessageKind.REQUEST, id=request_id, method="tools/call", params=params)
    return Frame(
        raw=b'{"jsonrpc":"2.0"}',
        transport="stdio",
        session=session,
        direction=Direction.CLIENT_TO_SERVER,
        message=message,
        version="2025-11-25",
    )


def test_a_frames_row_holds_its_values_in_frame_row_order() -> None:
    queue, recorder = make_queue()
    session = Session()
    meta = {"traceparent": "00-" + "a" * 32 + "-" + "b" * 16 + "-01"}
    seen = call_frame(session, params={"name": "search", "_meta": meta})
    reply = Reply(document={"jsonrpc": "2.0", "id": 7, "result": {"content": [], "isError": True}})
    incoming = queue.begin(Frame(raw=seen.raw, transport="stdio", session=session, size=40))
    incoming.draft[SEEN] = seen.evolve()  # as the capture stage does, with the classified frame
    queue.frame(incoming, reply)
    [row] = queue.take(10)
    values = dict(zip(FRAME_ROW, row, strict=True))
    assert len(FRAME_ROW) == 17 and FRAME_ROW[0] == "when"
    assert values["session_id"] == f"log-{session.id}" and recorder.sessions == [session]
    assert (values["request_id"], values["transport"], values["direction"]) == (7, "stdio", "client_to_server")
    assert (values["kind"], values["route"], values["method"]) == ("request", "tools/call", "tools/call")
    assert (values["tool_id"], values["status"], values["protocol_version"]) == ("search", "tool_error", "2025-11-25")
    assert values["bytes_in"] == 40  # the size received, not the bytes kept
    assert values["bytes_out"] == len(reply.to_bytes())
    assert values["meta"] is meta and values["error"] is None and values["action"] is None
    assert 0 <= values["seconds"] < 1 and values["when"] >= incoming.draft[BEGAN]
    assert type(values["kind"]) is str and type(values["direction"]) is str  # plain values, not enum members


def test_a_refused_frame_takes_its_outcome_from_refused_and_the_session_keeps_its_id() -> None:
    queue, recorder = make_queue()
    session = Session()
    session.log_id = "known"
    frame = queue.begin(call_frame(session, params={"name": 5}))  # a tool name that is not a string
    rejection = Rejection(CanonicalError.INVALID_PARAMS, frame=frame)
    frame.draft[REJECTION] = rejection
    frame.draft[ACTION] = "enforced"
    queue.frame(frame, None)
    [row] = queue.take(1)
    values = dict(zip(FRAME_ROW, row, strict=True))
    [(got_session, draft, got_rejection, reply, request_id, method, tool)] = recorder.refusals
    assert (got_session, got_rejection, reply) == (session, rejection, None) and draft is frame.draft
    assert (request_id, method, tool) == (7, "tools/call", 5)
    assert (values["status"], values["route"], values["error"][0]) == ("error", None, "INVALID_PARAMS")
    assert values["tool_id"] is None and values["action"] == "enforced" and values["bytes_out"] == 0
    assert values["session_id"] == "known" and recorder.sessions == []


def test_the_draft_lets_go_of_the_frame_once_its_row_is_made() -> None:
    """A draft holds the classified frame, which holds the draft: the row's making breaks the cycle,
    so the frame is freed at once rather than by the collector."""
    queue, recorder = make_queue()
    frame = queue.begin(call_frame(Session()))
    frame.draft[SEEN] = frame
    frame.draft[REJECTION] = Rejection(CanonicalError.INVALID_PARAMS, frame=frame)
    before = sys.getrefcount(frame)
    queue.frame(frame, None)
    recorder.refusals.clear()  # what the test's own refused() kept
    assert frame.draft[SEEN] is None and frame.draft[REJECTION] is None
    assert sys.getrefcount(frame) == before - 2


def test_the_queue_keeps_no_reference_it_does_not_hand_on() -> None:
    queue, _ = make_queue(batch=64)
    session = Session()
    session.log_id = "s"
    params = {"name": "search"}
    reply = Reply(document={"jsonrpc": "2.0", "id": 1, "result": {}})
    counts = sys.getrefcount(session), sys.getrefcount(params), sys.getrefcount(reply)
    for request_id in range(500):
        queue.frame(queue.begin(call_frame(session, request_id, params)), reply)
        if len(queue) >= 64:
            queue.take(64)
    queue.take(1000)
    assert (sys.getrefcount(session), sys.getrefcount(params), sys.getrefcount(reply)) == counts


def test_the_queue_hands_rows_on_in_order_a_batch_at_most_and_calls_full_at_the_batch() -> None:
    queue, recorder = make_queue(batch=3)
    for number in range(7):
        queue.put((float(number), "start", None, {}))
        assert recorder.full_calls == max(0, number - 1)  # every put with a batch or more queued
    assert len(queue) == 7
    assert [row[0] for row in queue.take(3)] == [0.0, 1.0, 2.0]
    assert [row[0] for row in queue.take(10)] == [3.0, 4.0, 5.0, 6.0]
    assert queue.take(5) == [] and len(queue) == 0


def test_count_sees_every_row_before_it_is_queued() -> None:
    queue, _ = make_queue()
    counted: list[tuple[Any, ...]] = []
    queue.count = counted.append
    queue.put((0.0, "start", None, {}))
    queue.frame(queue.begin(call_frame(Session())), None)
    assert counted == queue.take(10) and len(counted) == 2
    queue.count = None
    queue.put((1.0, "stop", None, {}))
    assert len(counted) == 2


def test_a_row_of_plain_values_is_not_tracked_by_the_collector() -> None:
    queue, _ = make_queue()
    session = Session()
    queue.frame(queue.begin(call_frame(session, params={"name": "search"})), None)
    queue.frame(queue.begin(call_frame(session, params={"name": "search", "_meta": {"agent_step": 1}})), None)
    plain, with_meta = queue.take(2)
    assert not gc.is_tracked(plain)
    assert gc.is_tracked(with_meta)  # it holds a dict


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda q: q.begin(("not", "a", "frame")), TypeError, "begin(frame): not a Frame"),
        (lambda q: q.frame(call_frame(Session()), None), TypeError, "the frame has no draft"),
        (lambda q: q.frame(call_frame(Session())), TypeError, "frame(frame, reply) takes 2 arguments"),
        (lambda q: q.frame(q.begin(call_frame(Session()))._replace(message=("x",)), None), TypeError, "not a Message"),
        (lambda q: q.put([1, 2]), TypeError, "a row is a tuple"),
        (lambda q: q.take(0), ValueError, "most is at least 1"),
        (lambda q: setattr(q, "count", 3), TypeError, "a callable or None"),
    ],
)
def test_arguments_of_the_wrong_shape_are_a_clear_error(call: Any, error: type[Exception], message: str) -> None:
    queue, _ = make_queue()
    with pytest.raises(error, match=re.escape(message)):
        call(queue)
    assert len(queue) == 0


def test_a_queue_is_made_with_a_batch_and_three_callables() -> None:
    with pytest.raises(ValueError, match="batch is at least 1"):
        RowQueue(batch=0, full=print, session_id=str, refused=print)
    with pytest.raises(TypeError, match="are callables"):
        RowQueue(batch=1, full=None, session_id=str, refused=print)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        RowQueue(1, print, str, print)  # type: ignore[misc]  # keywords only


def test_a_failing_callable_is_raised_to_the_caller_and_the_row_stays_queued() -> None:
    def broken() -> None:
        raise RuntimeError("writer gone")

    queue = RowQueue(batch=1, full=broken, session_id=str, refused=print)
    with pytest.raises(RuntimeError, match="writer gone"):
        queue.put((0.0, "start", None, {}))
    assert len(queue) == 1
