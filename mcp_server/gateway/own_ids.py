"""A peer's request under an id a request of the gateway's own holds on the same way (the client's
``gateway-3`` while the gateway's ``tools/list`` of that id waits upstream; the upstream's ``srv-1``
while the gateway's elicitation of that id waits on the client): the peer did nothing wrong, so its
request goes on under a fresh id and its answer comes back under its own (ADR 43).

Frames only: which ids are held and renamed is the ``Session``'s table; the gateway session calls
these where a frame crosses.
"""

from __future__ import annotations

import itertools

from ..core import jsonio
from ..core.session import Session
from ..core.types import NOTIFICATION, REQUEST, Direction, Frame, Message, Reply, RequestId, is_request_id
from .http_renames import with_id

__all__ = ["restored", "unique"]

_fresh = itertools.count(1)


def _fresh_id() -> str:
    return f"gateway-renamed-{next(_fresh)}"


def unique(session: Session, direction: Direction, frame: Frame, message: Message) -> tuple[Frame, Message]:
    """``message`` (sent in ``direction``) as it goes on: a request under an id the session holds
    there, under a fresh one; a cancellation naming a request so renamed, naming it as it went;
    anything else as it came."""
    if message.kind is REQUEST:
        if message.id is None or not session.given(direction, message.id):
            return frame, message
        return _with(frame, message, "id", session.rename(direction, message.id, _fresh_id))
    if message.kind is NOTIFICATION and message.method == "notifications/cancelled" and message.params:
        cancelled = message.params.get("requestId")
        wire = session.renamed_to(direction, cancelled) if is_request_id(cancelled) else None
        if wire is not None:
            return _with(frame, message, "requestId", wire)
    return frame, message


def _with(frame: Frame, message: Message, key: str, wire: RequestId) -> tuple[Frame, Message]:
    """The frame with its id (``key`` ``id``) or its cancelled request's (``requestId``) as ``wire``."""
    document = dict(message.document) if message.document is not None else jsonio.loads(frame.raw)
    if key == "id":
        document["id"] = wire
        message = message._replace(id=wire, document=document)
    else:
        params = {**document["params"], key: wire}
        document["params"] = params
        message = message._replace(params=params, document=document)
    return frame._replace(raw=jsonio.dumps(document)), message


def restored(session: Session, direction: Direction, reply: Reply, request_id: RequestId | None) -> Reply:
    """``reply``, the answer to the request ``request_id`` sent in ``direction``, going back to its
    sender: under the sender's own id when ``unique`` renamed that request (the rename is over)."""
    original = None if request_id is None else session.restore(direction, request_id)
    return reply if original is None else with_id(reply, None, original)
