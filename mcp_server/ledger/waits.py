"""What a client frame waits for before it can be checked: the one rule of the live gateway's waits
(``gateway/readiness.py``, which waits on the upstream) and of the frames ``check`` holds back in a
capture (``offline/check.py``, ADR 42). Pure; no I/O.

A frame behind the client's pending ``initialize`` waits for its reply, which settles the version
that checks it (spec basic/lifecycle). A ``tools/call`` of a tool not listed yet, while the list may
still name it, waits for the ``tools/list`` pending: the tool's schemas check the call.
"""

from __future__ import annotations

from ..chain.tool_listed import unlisted_call
from ..core.session import Session
from ..core.types import CLIENT_TO_SERVER, MessageKind, RequestId
from ..registry.tools import UpstreamTools

__all__ = ["awaited", "awaits_listing", "pending_request", "still_pending"]


def still_pending(session: Session, request_id: RequestId | None, method: str) -> bool:
    """Whether the client's ``method`` request ``request_id`` (``None``: none) still waits for its answer."""
    if request_id is None:
        return False
    pending = session.peek(CLIENT_TO_SERVER, request_id)
    return pending is not None and pending.method == method


def awaits_listing(tools: UpstreamTools, kind: MessageKind | None, method: str | None, tool: str | None) -> bool:
    """A ``tools/call`` naming a tool not listed yet, while the upstream's list may still name it."""
    return tool is not None and not tools.complete and unlisted_call(tools, kind, method, tool)


def pending_request(session: Session, method: str) -> RequestId | None:
    """The oldest request of ``method`` the client sent that still waits for its answer."""
    for _, request_id, pending in session.waiting(CLIENT_TO_SERVER):
        if pending.method == method:
            return request_id
    return None


def awaited(
    session: Session,
    tools: UpstreamTools,
    kind: MessageKind | None,
    method: str | None,
    tool: str | None,
    *,
    handshake: RequestId | None,
    listing: RequestId | None,
) -> RequestId | None:
    """The client request whose answer a client frame (of ``kind`` and ``method``, naming ``tool``)
    waits for before it is checked: the client's ``initialize`` (``handshake``) while it is pending,
    else for a call of a tool not listed yet its ``tools/list`` (``listing``) while that is pending.
    ``None``: it is checked now."""
    if still_pending(session, handshake, "initialize"):
        return handshake
    if awaits_listing(tools, kind, method, tool) and still_pending(session, listing, "tools/list"):
        return listing
    return None
