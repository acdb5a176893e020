"""The protocol validator as a library: one message in, one ``ValidationResult`` out, no server.

Built on the chain's own pure cores (``json_syntax.parse``, ``classify``, ``schema_check.check_message``
and the registry's compiled validators), so a verdict here is the chain's verdict. No I/O; never
raises on bad input (an unknown ``version`` is a result too).

    >>> from mcp_server.validation import validate_request
    >>> bool(validate_request("tools/call", {"name": "add"}, version="2025-11-25"))
    True
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..chain.classify import classify, is_request_id
from ..chain.json_syntax import parse
from ..chain.schema_check import check_message
from ..core import jsonio
from ..core.errors import MCP_RESERVED_CODES, MCP_RESERVED_CODES_SINCE, SERVER_ERROR_CODES, CanonicalError, Rejection
from ..core.pointer import pointer
from ..core.session import Session
from ..core.types import CLIENT_TO_SERVER, SERVER_TO_CLIENT, Direction, Message, MessageKind
from ..registry.schemas import ProtocolSchema, SchemaError, SchemaRegistry, accepts, violations
from ..registry.versions import is_at_least, sender_of

__all__ = [
    "ValidationResult",
    "default_registry",
    "error_code_problem",
    "format_validation_error",
    "rejection_result",
    "validate_definition",
    "validate_error_code",
    "validate_field_type",
    "validate_jsonrpc",
    "validate_message",
    "validate_method_name",
    "validate_notification",
    "validate_notification_name",
    "validate_request",
    "validate_required_fields",
    "validate_response",
]


# JSON-RPC 2.0 §5.1: the five pre-defined codes, read from the catalogue (never written here).
_STANDARD_CODES = frozenset(
    member.jsonrpc_code
    for member in (
        CanonicalError.PARSE_ERROR,
        CanonicalError.INVALID_ENVELOPE,
        CanonicalError.METHOD_NOT_FOUND,
        CanonicalError.INVALID_PARAMS,
        CanonicalError.INTERNAL_ERROR,
    )
)

# When classify finds several problems, the reason is the first of these present (the most basic
# fault first); every problem is still listed in ``details["errors"]``.
_ENVELOPE_PRIORITY = (
    "invalid_jsonrpc_version",
    "unknown_message_kind",
    "mixed_message_kind",
    "result_and_error",
    "invalid_method",
    "invalid_request_id",
    "invalid_params",
    "invalid_result",
    "invalid_error",
    "invalid_error_code",
)

_JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "object", "array", "null"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationResult:
    """A verdict: ``ok``, or a stable ``reason`` slug with ``details`` (context and ``errors``).

    Truthy exactly when ``ok``. ``details["errors"]``, when present, lists every violation as
    ``{"path", "msg", ...}`` with ``path`` an absolute RFC 6901 pointer into the message.
    """

    ok: bool
    reason: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.ok


_OK = ValidationResult(ok=True)


def _fail(reason: str, errors: Iterable[Mapping[str, Any]] = (), **context: Any) -> ValidationResult:
    details: dict[str, Any] = dict(context)
    listed = [dict(error) for error in errors]
    if listed:
        details["errors"] = listed
    return ValidationResult(ok=False, reason=reason, details=details)


@functools.cache
def default_registry() -> SchemaRegistry:
    """The bundled schemas, compiled once on first use and shared by every call."""
    return SchemaRegistry()


def _protocol(registry: SchemaRegistry | None, version: str | None) -> tuple[SchemaRegistry, ProtocolSchema | None]:
    registry = registry or default_registry()
    protocol = registry.protocols.get(registry.latest if version is None else version)
    return registry, protocol


def _unknown_version(registry: SchemaRegistry, version: str | None) -> ValidationResult:
    return _fail("unknown_version", version=version, supported=list(registry.versions))


def rejection_result(rejection: Rejection, *, notification: bool = False) -> ValidationResult:
    """A chain ``Rejection`` as a result: the classify rule, or the catalogue slug, as reason."""
    errors = rejection.errors
    error = rejection.error
    if error is CanonicalError.INVALID_ENVELOPE:
        rules = {entry.get("rule") or entry.get("msg") for entry in errors}
        reason = next((rule for rule in _ENVELOPE_PRIORITY if rule in rules), None)
        if reason is None:  # json_syntax: not_an_object, batch_not_supported
            reason = str(errors[0].get("msg"))
        return _fail(reason, errors)
    if error is CanonicalError.METHOD_NOT_FOUND:
        return _fail("unknown_notification" if notification else "unknown_method", errors)
    return _fail(error.slug, errors, **rejection.extra)


def _parse(document: Any) -> Mapping[str, Any]:
    """The document as json_syntax sees it: bytes or text are parsed, any other non-object refused."""
    if isinstance(document, Mapping):
        return document
    if isinstance(document, str):
        return parse(document.encode("utf-8", "surrogatepass"))
    if isinstance(document, (bytes, bytearray, memoryview)):
        return parse(bytes(document))
    return parse(jsonio.dumps(document))  # a list, a number…: json_syntax's own verdict


# jsonschema-rs and orjson refuse a Python value JSON cannot hold (a set, an object) this way.
_NOT_JSON = (TypeError, ValueError)


def _direction_of(method: str, table: Mapping[tuple[Direction, str], str]) -> Direction:
    """The side that sends ``method`` (the client's, when both may or neither does)."""
    return sender_of(method, [table]) or CLIENT_TO_SERVER


def _check(
    registry: SchemaRegistry,
    protocol: ProtocolSchema,
    document: Any,
    *,
    direction: Direction | None,
    session: Session | None = None,
) -> ValidationResult:
    """The chain's parse → classify → schema check of one document, as a result."""
    message: Message | None = None
    try:
        document = _parse(document)
        message = classify(document)
        if message.kind is MessageKind.REQUEST or message.kind is MessageKind.NOTIFICATION:
            assert message.method is not None
            table = protocol.requests if message.kind is MessageKind.REQUEST else protocol.notifications
            if direction is None:
                direction = _direction_of(message.method, table)
        elif direction is None:
            direction = SERVER_TO_CLIENT
        check_message(
            registry,
            document,
            message,
            version=protocol.version,
            direction=direction,
            session=session or Session(),
        )
    except Rejection as rejection:
        notification = message is not None and message.kind is MessageKind.NOTIFICATION
        return rejection_result(rejection, notification=notification)
    except _NOT_JSON:  # a value JSON cannot hold (a set, an object): not a JSON-RPC message at all
        return _fail("not_json", [{"path": "", "msg": "holds a value JSON cannot represent"}])
    return _OK


def validate_jsonrpc(
    message: Any, *, version: str | None = None, registry: SchemaRegistry | None = None
) -> ValidationResult:
    """JSON-RPC 2.0 shape only: an object, ``jsonrpc`` "2.0", kind, id, exactly one of result/error.

    Reasons: ``parse_error`` (bytes or text that is not JSON), ``not_an_object``,
    ``batch_not_supported``, ``invalid_jsonrpc_version``, ``invalid_request_id``,
    ``unknown_message_kind``, ``mixed_message_kind``, ``result_and_error``, ``invalid_method``,
    ``invalid_params``, ``invalid_result``, ``invalid_error``, ``invalid_error_code``. On success
    ``details`` names the ``kind``. The JSON-RPC shape is the same in every version; ``version``
    is taken for a uniform signature (an unknown one is ``unknown_version``).
    """
    if version is not None:
        registry, protocol = _protocol(registry, version)
        if protocol is None:
            return _unknown_version(registry, version)
    try:
        kind = classify(_parse(message)).kind
    except Rejection as rejection:
        return rejection_result(rejection)
    except _NOT_JSON:
        return _fail("not_json", [{"path": "", "msg": "holds a value JSON cannot represent"}])
    return ValidationResult(ok=True, details={"kind": kind.value})


def validate_message(
    message: Any,
    *,
    version: str | None = None,
    direction: Direction | None = None,
    registry: SchemaRegistry | None = None,
) -> ValidationResult:
    """A whole frame, exactly as the chain checks it once a session runs ``version``.

    A request or notification is checked against its definition for ``direction`` (by default
    the side that sends the method); a response is checked as an envelope only (which request
    it answers is not known here: use :func:`validate_response`).
    """
    registry, protocol = _protocol(registry, version)
    if protocol is None:
        return _unknown_version(registry, version)
    try:
        document = _parse(message)
    except Rejection as rejection:
        return rejection_result(rejection)
    except _NOT_JSON:
        return _fail("not_json", [{"path": "", "msg": "holds a value JSON cannot represent"}])
    if "method" not in document and ("result" in document or "error" in document):
        shape = validate_jsonrpc(document)
        return _envelope(protocol, document) if shape else shape
    return _check(registry, protocol, document, direction=direction)


def _envelope(protocol: ProtocolSchema, document: Mapping[str, Any]) -> ValidationResult:
    name = protocol.error_response_def if "error" in document else protocol.result_response_def
    try:
        found = violations(protocol.envelope_validator(name), document)
    except _NOT_JSON:
        return _fail("not_json", [{"path": "", "msg": "holds a value JSON cannot represent"}])
    return _fail("invalid_params", found) if found else _OK


def _frame(method: str, params: Any, request_id: Any = None) -> dict[str, Any]:
    document: dict[str, Any] = {"jsonrpc": "2.0"}
    if request_id is not None:
        document["id"] = request_id
    document["method"] = method
    if params is not None:
        document["params"] = params
    return document


def validate_request(
    method: str,
    params: Mapping[str, Any] | None = None,
    *,
    version: str | None = None,
    direction: Direction | None = None,
    request_id: str | int = 0,
    registry: SchemaRegistry | None = None,
) -> ValidationResult:
    """A request against the official schema of ``version``.

    Reasons: ``unknown_method`` (not a request of that version, in ``direction`` when given),
    ``invalid_params`` listing every violation, ``invalid_request_id``, ``unknown_version``.
    """
    registry, protocol = _protocol(registry, version)
    if protocol is None:
        return _unknown_version(registry, version)
    if not isinstance(method, str):
        return _fail("invalid_method", [{"path": "/method", "msg": "must be a string"}], method=method)
    return _check(registry, protocol, _frame(method, params, request_id), direction=direction)


def validate_notification(
    name: str,
    params: Mapping[str, Any] | None = None,
    *,
    version: str | None = None,
    direction: Direction | None = None,
    registry: SchemaRegistry | None = None,
) -> ValidationResult:
    """A notification against the official schema of ``version``.

    Reasons: ``unknown_notification``, ``invalid_params`` listing every violation, ``unknown_version``.
    """
    registry, protocol = _protocol(registry, version)
    if protocol is None:
        return _unknown_version(registry, version)
    if not isinstance(name, str):
        return _fail("invalid_method", [{"path": "/method", "msg": "must be a string"}], method=name)
    return _check(registry, protocol, _frame(name, params), direction=direction)


def validate_response(
    request_id: Any,
    result_or_error: Any,
    *,
    method: str | None = None,
    error: bool | None = None,
    version: str | None = None,
    registry: SchemaRegistry | None = None,
) -> ValidationResult:
    """A response to a ``method`` request: its ``result`` against that method's result type.

    ``result_or_error`` is taken for a JSON-RPC error object when ``error`` says so or, by
    default, when it carries both ``code`` and ``message``. An error's code must be one
    :func:`validate_error_code` accepts. Without ``method`` only the envelope is checked.
    Reasons: ``invalid_request_id``, ``invalid_result``, ``invalid_params`` (the result, or
    error, violates the schema), ``invalid_error_code``, ``unknown_method``, ``unknown_version``.
    """
    registry, protocol = _protocol(registry, version)
    if protocol is None:
        return _unknown_version(registry, version)
    if error is None:
        error = isinstance(result_or_error, Mapping) and "code" in result_or_error and "message" in result_or_error
    document = {"jsonrpc": "2.0", "id": request_id, "error" if error else "result": result_or_error}
    shape = validate_jsonrpc(document)
    if not shape:
        return shape
    if method is None:
        verdict = _envelope(protocol, document)
    elif method not in protocol.request_methods:
        return _fail("unknown_method", [{"path": "/method", "msg": "method_not_found"}], method=method)
    else:
        session = Session()
        requester = _direction_of(method, protocol.requests)
        if is_request_id(request_id):
            session.expect(requester, request_id, method)
        responder = SERVER_TO_CLIENT if requester is CLIENT_TO_SERVER else CLIENT_TO_SERVER
        verdict = _check(registry, protocol, document, direction=responder, session=session)
    if verdict and error:
        return validate_error_code(result_or_error["code"], version=protocol.version, registry=registry)
    return verdict


def validate_method_name(
    name: Any, *, version: str | None = None, direction: Direction | None = None, registry: SchemaRegistry | None = None
) -> ValidationResult:
    """A request method ``version`` defines (for ``direction``, when given): else ``invalid_method``."""
    return _defined_name(name, "request", version=version, direction=direction, registry=registry)


def validate_notification_name(
    name: Any, *, version: str | None = None, direction: Direction | None = None, registry: SchemaRegistry | None = None
) -> ValidationResult:
    """A notification ``version`` defines (for ``direction``, when given): else ``invalid_notification``."""
    return _defined_name(name, "notification", version=version, direction=direction, registry=registry)


def _defined_name(
    name: Any, kind: str, *, version: str | None, direction: Direction | None, registry: SchemaRegistry | None
) -> ValidationResult:
    registry, protocol = _protocol(registry, version)
    if protocol is None:
        return _unknown_version(registry, version)
    by_direction, names = (
        (protocol.requests, protocol.request_methods)
        if kind == "request"
        else (protocol.notifications, protocol.notification_methods)
    )
    if isinstance(name, str) and ((direction, name) in by_direction if direction is not None else name in names):
        return _OK
    reason = "invalid_method" if kind == "request" else "invalid_notification"
    return _fail(reason, method=name, version=protocol.version)


def validate_definition(
    name: str, value: Any, *, version: str | None = None, registry: SchemaRegistry | None = None
) -> ValidationResult:
    """``value`` against one definition of the schema of ``version`` (``CallToolResult``, ``Tool``, …).

    Reasons: ``unknown_definition``, ``schema_violation`` listing every violation (paths relative
    to ``value``), ``not_json``, ``unknown_version``.
    """
    registry, protocol = _protocol(registry, version)
    if protocol is None:
        return _unknown_version(registry, version)
    if name not in protocol.definitions:
        return _fail("unknown_definition", definition=name, version=protocol.version)
    try:
        found = violations(protocol.definition_validator(name), value)
    except _NOT_JSON:
        return _fail("not_json", [{"path": "", "msg": "holds a value JSON cannot represent"}])
    return _fail("schema_violation", found, definition=name) if found else _OK


def _const_codes(node: Any, under_code: bool = False) -> Iterable[int]:
    if isinstance(node, Mapping):
        const = node.get("const")
        if under_code and isinstance(const, int) and not isinstance(const, bool):
            yield const
        for key, value in node.items():
            if key == "properties" and isinstance(value, Mapping) and "code" in value:
                yield from _const_codes(value["code"], True)
            yield from _const_codes(value)
    elif isinstance(node, list):
        for item in node:
            yield from _const_codes(item)


@functools.cache
def _spec_codes(protocol: ProtocolSchema) -> frozenset[int]:
    """The error codes ``protocol``'s schema itself defines: ``code`` consts, and ``*Error`` integer consts."""
    codes = set(_const_codes(protocol.definitions))
    for name, definition in protocol.definitions.items():
        if name.endswith("Error") and isinstance(definition, Mapping):
            const = definition.get("const")
            if isinstance(const, int) and not isinstance(const, bool):
                codes.add(const)
    return frozenset(codes)


def error_code_problem(
    registry: SchemaRegistry, version: str, code: Any, allow: Sequence[tuple[int, int]] = ()
) -> str | None:
    """Why ``code`` is not an error code of ``version`` (``None`` when it is one). Pure."""
    if not isinstance(code, int) or isinstance(code, bool):
        return "must be an integer"
    if code in _STANDARD_CODES or code in _spec_codes(registry.protocol(version)):
        return None
    if any(min(lo, hi) <= code <= max(lo, hi) for lo, hi in allow):
        return None
    low, high = SERVER_ERROR_CODES
    if low <= code <= high:
        reserved_low, reserved_high = MCP_RESERVED_CODES
        if reserved_low <= code <= reserved_high and is_at_least(registry, version, MCP_RESERVED_CODES_SINCE):
            return "reserved for the MCP spec, and not defined by it"
        return None
    return "neither a JSON-RPC, server-range nor MCP-defined code"


def validate_error_code(
    code: Any,
    *,
    version: str | None = None,
    allow: Sequence[tuple[int, int]] = (),
    registry: SchemaRegistry | None = None,
) -> ValidationResult:
    """An error code ``version`` allows: JSON-RPC's five, the server range, or one the spec defines.

    The server range is -32099..-32000 (JSON-RPC 2.0 §5.1); from 2026-07-28 on, -32099..-32020
    holds only the codes the spec defines. ``allow`` adds inclusive ``(lo, hi)`` ranges.
    Reason: ``invalid_error_code``.
    """
    registry, protocol = _protocol(registry, version)
    if protocol is None:
        return _unknown_version(registry, version)
    why = error_code_problem(registry, protocol.version, code, allow)
    if why is None:
        return _OK
    return _fail("invalid_error_code", [{"path": "/error/code", "msg": why}], code=code, version=protocol.version)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


def validate_field_type(
    name: str,
    value: Any,
    types: str | Iterable[str],
    *,
    version: str | None = None,
    registry: SchemaRegistry | None = None,
) -> ValidationResult:
    """``value`` is one of the JSON Schema ``types`` (``"string"``, ``"integer"``, …): else ``type_mismatch``.

    JSON Schema's own semantics, through a compiled validator (``1.0`` is an integer, ``true``
    is not). A type name JSON Schema does not know raises ``ValueError``: a programming error.
    JSON types are the same in every version; ``version`` is taken for a uniform signature.
    """
    expected = [types] if isinstance(types, str) else list(types)
    unknown = [t for t in expected if t not in _JSON_TYPES]
    if unknown or not expected:
        raise ValueError(f"not JSON Schema type names: {unknown or expected}")
    registry, protocol = _protocol(registry, version)
    if protocol is None:
        return _unknown_version(registry, version)
    try:
        validator = registry.compile({"type": sorted(set(expected))}, name=f"type of {name}")
    except SchemaError as exc:  # pragma: no cover - the names were checked above
        raise ValueError(str(exc)) from None
    try:
        if accepts(validator, value):
            return _OK
    except _NOT_JSON:  # a value JSON cannot hold: no JSON type matches it
        pass
    return _fail(
        "type_mismatch",
        [{"path": pointer([name]), "msg": f"expected {' or '.join(expected)}, got {_json_type(value)}"}],
        field=name,
        expected=expected,
        actual=_json_type(value),
    )


def validate_required_fields(
    message: Any, fields: Iterable[str], *, version: str | None = None, registry: SchemaRegistry | None = None
) -> ValidationResult:
    """Every one of ``fields`` is present in the object ``message``: else ``missing_required_fields``.

    ``version`` is taken for a uniform signature (the check is the same in every version).
    """
    if version is not None:
        registry, protocol = _protocol(registry, version)
        if protocol is None:
            return _unknown_version(registry, version)
    if not isinstance(message, Mapping):
        return _fail("not_an_object", [{"path": "", "msg": f"expected object, got {_json_type(message)}"}])
    missing = [name for name in fields if name not in message]
    if not missing:
        return _OK
    return _fail(
        "missing_required_fields",
        [{"path": pointer([name]), "msg": "required"} for name in missing],
        missing=missing,
    )


def _show(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return jsonio.dumps(value).decode()
    except TypeError:
        return repr(value)


_SHOWN_ERRORS = 5


def format_validation_error(error: ValidationResult) -> str:
    """One line for a log or a test failure: ``invalid_method: method=bad``.

    Context first (``key=value``), then up to five violations as ``path msg``; ``ok`` when ok.
    """
    if error.ok:
        return "ok"
    parts = [f"{key}={_show(value)}" for key, value in error.details.items() if key != "errors"]
    errors = list(error.details.get("errors", ()))
    shown = [f"{entry.get('path') or '/'} {entry.get('msg')}" for entry in errors[:_SHOWN_ERRORS]]
    if len(errors) > _SHOWN_ERRORS:
        shown.append(f"(+{len(errors) - _SHOWN_ERRORS} more)")
    if shown:
        parts.append("; ".join(shown))
    text = f"{error.reason}: {' '.join(parts)}" if parts else str(error.reason)
    return " ".join(text.split())  # one line, whatever the messages hold
