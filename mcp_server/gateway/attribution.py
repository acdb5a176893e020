"""What an HTTP upstream's reply whose own id is missing or wrong answers (ADR 25): the request on
whose response it came. Pure: given the verdict, the request it answers and the modes, what the
client gets and what is reported; the caller settles the request, sends and logs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.session import Pending, Session
from ..core.types import (
    CLIENT_TO_SERVER,
    ERROR_RESPONSE,
    NOTIFICATION,
    REQUEST,
    SERVER_TO_CLIENT,
    Frame,
    Message,
    Reply,
    RequestId,
)
from ..ledger.modes import Mode, Modes
from ..ledger.verdicts import Action, answer_in_place
from ..registry.schemas import SchemaRegistry

__all__ = ["Attribution", "attribute", "unmatched"]


class Attribution(NamedTuple):
    """An unmatched reply attributed: the request it answers (as the reply it gets, for the client
    side and the log), the client's answer, and how a refused reply is reported (``None``: the reply
    was valid and goes on as it came, under its request's id)."""

    stands_for: Message
    reply: Reply
    action: Action | None = None


def unmatched(verdict: Message | Rejection, request_id: RequestId, session: Session) -> bool:
    """A frame on the HTTP response of the request ``request_id`` (still waiting) that is a reply but
    not one to any request known: no id, a wrong id, or no JSON-RPC at all."""
    if session.peek(CLIENT_TO_SERVER, request_id) is None:
        return False
    message = verdict if isinstance(verdict, Message) else verdict.message
    if message is not None and (message.kind is REQUEST or message.kind is NOTIFICATION):
        return False
    if isinstance(verdict, Message):
        return message is not None and message.id is None
    return message is None or message.id is None or verdict.error is CanonicalError.UNKNOWN_RESPONSE_ID


def attribute(
    frame: Frame,
    verdict: Message | Rejection,
    request_id: RequestId,
    pending: Pending,
    modes: Modes,
    registry: SchemaRegistry,
) -> Attribution:
    """The answer to the request ``request_id`` (``pending``, now settled) that ``frame`` is. A valid
    reply without an id (2025-11-25 allows it) goes on under the request's id; a refused one is
    reported, and the client gets ``UPSTREAM_INVALID_REPLY`` with the upstream's code and message
    (enforce) or the upstream's error under its request's id (observe)."""
    version = frame.session.version or pending.version
    stands_for = Message(ERROR_RESPONSE, request_id, pending.method, version=version, tool=pending.tool)
    document = _reply_document(frame)
    if isinstance(verdict, Message):
        assert document is not None  # a valid reply is a reply object
        return Attribution(stands_for, _renumbered(document, request_id, version))
    if document is not None and modes.mode_for(SERVER_TO_CLIENT, pending.tool) is Mode.OBSERVE:
        return Attribution(stands_for, _renumbered(document, request_id, version), Action.OBSERVED)
    error = document.get("error") if document is not None else None
    said = {key: error[key] for key in ("code", "message") if key in error} if isinstance(error, dict) else {}
    invalid = Rejection(
        CanonicalError.UPSTREAM_INVALID_REPLY, verdict.errors, extra={**said, "rule": verdict.error.slug}
    )
    return Attribution(
        stands_for, answer_in_place(registry, invalid, request_id, pending.method, version), Action.ANSWERED
    )


def _reply_document(frame: Frame) -> dict[str, Any] | None:
    """The frame as a JSON-RPC reply object (a result or an error), when it is one."""
    if frame.size is not None:
        return None
    try:
        document = jsonio.loads(frame.raw)
    except jsonio.JSONSyntaxError:
        return None
    if type(document) is not dict or ("result" not in document and "error" not in document):
        return None
    return document


def _renumbered(document: Mapping[str, Any], request_id: RequestId, version: str | None) -> Reply:
    """An upstream's reply under the id of the request it answers."""
    error = document.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    renumbered = {**document, "jsonrpc": "2.0", "id": request_id}
    return Reply(document=renumbered, version=version, code=code if type(code) is int else None)
