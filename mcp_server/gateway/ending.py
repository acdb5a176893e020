"""How a gateway session's requests end without their peer's answer: a session's end by its cause,
and a request past its time. Every request is answered for, and the report says who was at fault.

Decisions only: the gateway session sends what these return.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.errors import CanonicalError, Rejection
from ..core.session import Session
from ..core.types import CLIENT_TO_SERVER, ERROR_RESPONSE, NOTIFICATION, SERVER_TO_CLIENT, Message, Reply, RequestId
from ..ledger.verdicts import Verdicts, answer_in_place, emit

__all__ = ["Cancel", "end_pending", "expire"]

_CANCELLED_BECAUSE = {"client_closed": "client closed", "gateway_stopped": "gateway stopped"}


class Cancel:
    """``notifications/cancelled`` for the upstream, and the message it is read as."""

    __slots__ = ("document", "message")

    def __init__(self, request_id: RequestId, reason: str, version: str | None) -> None:
        params = {"requestId": request_id, "reason": reason}
        self.document: Mapping[str, Any] = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}
        self.message = Message(NOTIFICATION, None, "notifications/cancelled", params, version)


def end_pending(session: Session, verdicts: Verdicts, reason: str) -> tuple[list[Cancel], list[tuple[Message, Reply]]]:
    """The session ends, for ``reason``; every request still pending in it is settled. Returns the
    cancellations for the upstream and the answers for the client (with the reply each stands for).

    * ``upstream_gone``: the client's requests get ``UPSTREAM_UNAVAILABLE``, each a violation by the
      upstream (nobody else will answer them);
    * ``gateway_stopped``: the client's requests get ``UPSTREAM_UNAVAILABLE`` too, and are cancelled
      upstream, a violation by nobody;
    * ``client_closed`` (the client ended its session or its input): cancelled upstream, and the
      client, who asked for the end, is sent nothing.

    Each request that ends without its peer's answer, and no violation for it, is listed in the
    report (``unanswered``)."""
    cancels: list[Cancel] = []
    answers: list[tuple[Message, Reply]] = []
    report = verdicts.report
    for direction, request_id, pending in sorted(session.waiting(), key=lambda item: str(item[1])):
        session.settle(direction, request_id)
        method, tool, version = pending.method, pending.tool, pending.version or session.version
        if direction is CLIENT_TO_SERVER and reason == "upstream_gone":
            report.violation(
                "upstream_unavailable",
                direction=SERVER_TO_CLIENT,
                method=method,
                tool=tool,
                request_id=request_id,
                action="answered",
                session=session,
            )
        else:
            report.ended_unanswered(session, direction, request_id, method, reason, tool)
        if direction is not CLIENT_TO_SERVER:
            continue
        if reason in _CANCELLED_BECAUSE:
            cancels.append(Cancel(request_id, _CANCELLED_BECAUSE[reason], version))
        if reason != "client_closed":
            unavailable = Rejection(CanonicalError.UPSTREAM_UNAVAILABLE)
            answer = answer_in_place(verdicts.registry, unavailable, request_id, method, version)
            answers.append((Message(ERROR_RESPONSE, request_id, method, version=version, tool=tool), answer))
    return cancels, answers


def expire(
    session: Session, verdicts: Verdicts, request: Message, error: CanonicalError
) -> tuple[Cancel, Message, Reply] | None:
    """A relayed request past its time: abandoned (its reply, should it come, is late), counted in
    the report as the upstream's; returns the ``notifications/cancelled`` for the upstream, and the
    retryable error for the client with the reply it stands for (``None``: the request was answered
    or cancelled meanwhile)."""
    assert request.id is not None
    pending = session.abandon(CLIENT_TO_SERVER, request.id)
    if pending is None:
        return None
    version = pending.version or session.version
    emit(
        verdicts.report.violation(
            error.slug,
            direction=SERVER_TO_CLIENT,
            method=pending.method,
            tool=pending.tool,
            request_id=request.id,
            action="cancelled",
            session=session,
        )
    )
    answer = answer_in_place(
        verdicts.registry, Rejection(error, extra={"retryable": True}), request.id, pending.method, version
    )
    stands_for = Message(ERROR_RESPONSE, request.id, pending.method, version=version, tool=pending.tool)
    return Cancel(request.id, "timeout", version), stands_for, answer
