"""Pipeline stage 3: tell request, notification, response and error response apart (JSON-RPC 2.0 §4-5).

Pure core; no I/O. A frame whose shape is wrong is refused with -32600; the id is echoed when
it is readable, and a would-be notification or response is refused without a reply. A frame that
came with HTTP headers has its routing headers checked against the body here (-32020). The fast
check passes the common shapes (a request, a notification, a result) on as ``classify`` reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.errors import CanonicalError, Rejection
from ..core.types import (
    ERROR_RESPONSE,
    NOTIFICATION,
    REQUEST,
    RESPONSE,
    Frame,
    Message,
    MessageKind,
    is_request_id,
)
from .routing_headers import check_routing_headers
from .stage import Document, Doubt, FastCheck, Id, Inspection, Kind, Name, Params

__all__ = ["Classify", "called_tool", "classify", "is_request_id", "shape_of"]

_ABSENT: Any = object()  # a member the document does not have (``None`` is a value it can have)


def _kind(document: Mapping[str, Any]) -> MessageKind:
    if "method" in document:
        return REQUEST if "id" in document else NOTIFICATION
    if "error" in document:
        return ERROR_RESPONSE
    if "result" in document:
        return RESPONSE
    return REQUEST


def shape_of(document: Mapping[str, Any]) -> Message:
    """The kind the sender meant, before any rule is checked (decides whether to answer), with its
    id and method where they can be read (a refused frame is told by the method it names)."""
    rid, method = document.get("id"), document.get("method")
    return Message(_kind(document), rid if is_request_id(rid) else None, method if isinstance(method, str) else None)


def _problems(document: Mapping[str, Any], kind: MessageKind) -> list[dict[str, str]]:
    """Every shape problem: ``{path, msg, rule}``; ``rule`` is a stable slug per check (the library's reason)."""
    found: list[dict[str, str]] = []
    if document.get("jsonrpc") != "2.0":
        found.append({"path": "/jsonrpc", "msg": 'must be the string "2.0"', "rule": "invalid_jsonrpc_version"})
    if kind is REQUEST or kind is NOTIFICATION:
        if not isinstance(document.get("method"), str):
            # No method, result or error at all: not a JSON-RPC message of any kind.
            rule = "invalid_method" if "method" in document else "unknown_message_kind"
            found.append({"path": "/method", "msg": "must be a string", "rule": rule})
        if kind is REQUEST and not is_request_id(document.get("id")):
            found.append({"path": "/id", "msg": "must be a string or an integer", "rule": "invalid_request_id"})
        if "params" in document and not isinstance(document["params"], dict):
            found.append({"path": "/params", "msg": "must be an object", "rule": "invalid_params"})
        for member in ("result", "error"):
            if member in document:
                found.append(
                    {
                        "path": f"/{member}",
                        "msg": "not allowed in a request or notification",
                        "rule": "mixed_message_kind",
                    }
                )
    else:
        if "result" in document and "error" in document:
            found.append(
                {"path": "", "msg": "a response has exactly one of result and error", "rule": "result_and_error"}
            )
        rid = document.get("id")
        if kind is RESPONSE and not is_request_id(rid):
            found.append({"path": "/id", "msg": "must be a string or an integer", "rule": "invalid_request_id"})
        if kind is ERROR_RESPONSE and rid is not None and not is_request_id(rid):
            found.append({"path": "/id", "msg": "must be a string, an integer or null", "rule": "invalid_request_id"})
        if kind is RESPONSE and not isinstance(document.get("result"), dict):
            found.append({"path": "/result", "msg": "must be an object", "rule": "invalid_result"})
        if kind is ERROR_RESPONSE:
            error = document.get("error")
            if not isinstance(error, dict):
                found.append({"path": "/error", "msg": "must be an object", "rule": "invalid_error"})
            else:
                code = error.get("code")
                if not isinstance(code, int) or isinstance(code, bool):
                    found.append({"path": "/error/code", "msg": "must be an integer", "rule": "invalid_error_code"})
                if not isinstance(error.get("message"), str):
                    found.append({"path": "/error/message", "msg": "must be a string", "rule": "invalid_error"})
    return found


def classify(document: Mapping[str, Any]) -> Message:
    """The message ``document`` is, or ``Rejection(INVALID_ENVELOPE)`` listing every problem."""
    kind = _kind(document)
    problems = _problems(document, kind)
    if problems:
        raise Rejection(CanonicalError.INVALID_ENVELOPE, sorted(problems, key=lambda p: (p["path"], p["msg"])))
    if kind is REQUEST or kind is NOTIFICATION:
        method, params = document["method"], document.get("params")
        return Message(kind, document.get("id"), method, params, tool=called_tool(method, params), document=document)
    rid = document.get("id")
    return Message(kind, rid if is_request_id(rid) else None, document=document)


def called_tool(method: str, params: Mapping[str, Any] | None) -> str | None:
    """The tool a ``tools/call`` names (``None`` for any other method, or a name that is no string)."""
    tool = params.get("name") if method == "tools/call" and params is not None else None
    return tool if isinstance(tool, str) else None


_ID_TYPES = frozenset({int, str})  # a parsed id's common types: ``is_request_id`` asked only of others


def _routed(message: Message, headers: Mapping[str, str]) -> bool:
    """Whether an HTTP request's routing headers agree with its body."""
    try:
        check_routing_headers(message, headers)
    except Rejection:
        return False
    return True


class Classify:
    """Stage 3: the message kind (and, for a frame that came with HTTP headers, its routing headers)."""

    __slots__ = ()

    def fast_check(self, after: FastCheck, doubt: Doubt) -> FastCheck:
        """A request, a notification or a result whose shape ``_problems`` finds nothing wrong with,
        read as ``classify`` reads it; anything else (an error response included) is the stages'."""
        absent = _ABSENT
        id_types = _ID_TYPES

        def check(
            frame: Frame,
            document: Document,
            kind: Kind,
            rid: Id,
            method: Name,
            params: Params,
            version: Name,
            tool: Name,
        ) -> Message | None:
            if document is None or document.get("jsonrpc") != "2.0":
                return doubt(frame, document)
            read = document.get("method", absent)
            if read is absent:  # a reply: a result, or (rare, and the stages read it exactly) an error
                kind, rid = RESPONSE, document.get("id")
                if (
                    type(document.get("result")) is not dict
                    or "error" in document
                    or (type(rid) not in id_types and not is_request_id(rid))
                ):
                    return doubt(frame, document)
                return after(frame, document, kind, rid, None, None, None, None)
            if type(read) is not str or "result" in document or "error" in document:
                return doubt(frame, document)
            params = document.get("params", absent)
            if params is absent:
                params = None
            elif type(params) is not dict:  # (``"params": null`` too)
                return doubt(frame, document)
            rid = document.get("id", absent)
            if rid is absent:
                kind, rid = NOTIFICATION, None
            elif type(rid) in id_types or is_request_id(rid):
                kind = REQUEST
            else:
                return doubt(frame, document)
            tool = called_tool(read, params) if read == "tools/call" else None
            if frame.headers is not None and not _routed(Message(kind, rid, read, params), frame.headers):
                return doubt(frame, document)
            return after(frame, document, kind, rid, read, params, None, tool)

        return check

    def inspect(self, inspection: Inspection) -> None:
        document = inspection.document
        assert document is not None, "classify runs after json_syntax"
        try:
            message = classify(document)
        except Rejection as rejection:
            rejection.message = shape_of(document)
            raise
        inspection.message = message
        headers = inspection.frame.headers
        if headers is not None:  # a frame that came with HTTP headers: they route it
            try:
                check_routing_headers(message, headers)
            except Rejection as rejection:
                rejection.message = message
                raise
