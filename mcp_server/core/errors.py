"""The one catalogue of failures, and the exception a pipeline stage raises to reject a frame.

Every JSON-RPC code and HTTP status the project emits is written here and nowhere else.
Members are never renumbered or reused; the member name, lower-cased, is the stable slug.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum, StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .kinds import Message

__all__ = [
    "HTTP_REFUSALS",
    "MCP_RESERVED_CODES",
    "MCP_RESERVED_CODES_SINCE",
    "SERVER_ERROR_CODES",
    "STATELESS_SINCE",
    "STATELESS_STATUS_BY_CODE",
    "CanonicalError",
    "Plane",
    "Rejection",
    "reply_status",
]


class Plane(StrEnum):
    """Where the MCP spec puts a failure: a JSON-RPC error, or a tool result with ``isError``."""

    PROTOCOL = "protocol"
    TOOL_RESULT = "tool_result"


class CanonicalError(Enum):
    """code → (JSON-RPC code, HTTP status, message, reason, plane).

    ``reason`` is the category written to ``error.data.reason``; ``mcp_code`` is the code used
    on the MCP wire where the MCP spec names a different one than the generic JSON-RPC face
    (an unknown tool in ``tools/call`` is -32602 there, per the MCP tools spec).
    """

    # JSON-RPC 2.0 §5.1 standard errors.
    PARSE_ERROR = (-32700, 400, "Parse error", "parse_error")
    INVALID_ENVELOPE = (-32600, 400, "Invalid MCP envelope", "validation_failed")
    PAYLOAD_TOO_LARGE = (-32600, 413, "Payload too large", "validation_failed")
    METHOD_NOT_FOUND = (-32601, 404, "Method not found", "not_found")
    INVALID_PARAMS = (-32602, 400, "Invalid params", "validation_failed")
    INTERNAL_ERROR = (-32603, 500, "Internal error", "internal_error")
    # MCP lifecycle (basic/lifecycle): only ping may precede initialize; initialize happens once.
    NOT_INITIALIZED = (-32600, 400, "Session not initialized", "invalid_state")
    ALREADY_INITIALIZED = (-32600, 400, "Session already initialized", "invalid_state")
    # MCP 2026-07-28 named errors (schema: HeaderMismatchError, MissingRequiredClientCapabilityError,
    # UnsupportedProtocolVersionError); HTTP 400 as the schema descriptions require.
    HEADER_MISMATCH = (-32020, 400, "Header mismatch", "header_mismatch")
    MISSING_CLIENT_CAPABILITY = (-32021, 400, "Missing required client capability", "unsupported")
    UNSUPPORTED_PROTOCOL_VERSION = (-32022, 400, "Unsupported protocol version", "unsupported")
    # 2026-07-28: a request whose per-request ``_meta`` envelope is missing or invalid. Invalid params,
    # refused over HTTP with 400 as the version's transport requires (the request states nothing).
    INVALID_REQUEST_META = (-32602, 400, "Invalid params: request _meta", "validation_failed")
    # Tools.
    TOOL_NOT_FOUND = (-32001, 404, "Unknown tool", "not_found", Plane.PROTOCOL, -32602)
    INVALID_TOOL_INPUT = (-32602, 422, "Invalid tool input", "validation_failed", Plane.TOOL_RESULT)
    INVALID_TOOL_OUTPUT = (-32603, 502, "Invalid tool output", "validation_failed")
    # Frames a peer sent that break the session's own bookkeeping.
    UNKNOWN_RESPONSE_ID = (-32600, 400, "Response to an unknown request id", "validation_failed")
    # JSON-RPC 2.0 §4: a response is matched to its request by id, so a peer's second request under
    # an id its first still waits on could not be told from it; ``data.id`` names the id (ADR 43).
    DUPLICATE_REQUEST_ID = (-32600, 400, "Request id already in flight", "invalid_state")
    # Gateway: what the upstream did, reported to the client in its place.
    UPSTREAM_INVALID_REPLY = (-32603, 502, "Upstream reply violates the MCP schema", "validation_failed")
    UPSTREAM_UNAVAILABLE = (-32603, 503, "Upstream unavailable", "upstream_unavailable")
    MIXED_PROTOCOL_VERSIONS = (-32600, 400, "Protocol version differs from the session's", "validation_failed")
    # Streamable HTTP: refusals about the HTTP request itself, answered before a frame is read.
    HOST_NOT_ALLOWED = (-32600, 403, "Host or Origin not allowed", "forbidden")
    NOT_ACCEPTABLE = (-32600, 406, "Accept must allow application/json or text/event-stream", "invalid_request")
    UNSUPPORTED_MEDIA_TYPE = (-32600, 415, "Content-Type must be application/json", "invalid_request")
    HTTP_METHOD_NOT_ALLOWED = (-32600, 405, "HTTP method not allowed here", "invalid_request")
    ROUTE_NOT_FOUND = (-32601, 404, "No such endpoint", "not_found")
    SESSION_REQUIRED = (-32600, 400, "Mcp-Session-Id header required", "invalid_state")
    UNKNOWN_SESSION = (-32600, 404, "Unknown or expired session", "invalid_state")
    TOO_MANY_SESSIONS = (-32603, 503, "Too many open sessions", "unavailable")
    # Policy at the execution boundary (issue 6): every denial carries ``policy_violation: true``.
    POLICY_DENIED = (-32003, 403, "Denied by policy", "policy_denied")
    APPROVAL_DENIED = (-32004, 403, "Denied by the approver", "policy_denied")
    APPROVAL_EXPIRED = (-32005, 403, "Approval not given before the deadline", "policy_denied")
    APPROVAL_MISMATCH = (-32006, 409, "Approval is for other arguments", "policy_denied")
    APPROVAL_NOT_FOUND = (-32007, 404, "No such pending approval", "not_found")
    APPROVER_UNAUTHORIZED = (-32008, 401, "Approver token required", "forbidden")
    TOOL_TIMEOUT = (-32009, 504, "Tool execution timed out", "timeout")
    UPSTREAM_FAILURE = (-32010, 502, "Upstream call failed", "upstream_failure")
    # The REST face (POST /execute): a body that is not the documented request object.
    INVALID_REQUEST_BODY = (-32600, 400, "Invalid request body", "validation_failed")
    DEPENDENCY_UNAVAILABLE = (-32603, 503, "A dependency is unreachable", "unavailable")
    # Streamable HTTP: the session's GET stream is open already (one per session).
    STREAM_ALREADY_OPEN = (-32600, 409, "A GET stream is open for this session already", "invalid_state")
    # Gateway: what the client did, reported to the upstream in its place (its request is answered).
    CLIENT_INVALID_REPLY = (-32603, 502, "Client reply violates the MCP schema", "validation_failed")
    # Issue 24: a frame whose only faults are asserted ``format``s (asserting them is an option, off
    # by default: ``format`` is an annotation in the drafts the MCP schemas use).
    INVALID_FORMAT = (-32602, 400, "Invalid params: format", "validation_failed")
    # Gateway: the upstream did not answer a relayed request within the gateway's request timeout.
    UPSTREAM_TIMEOUT = (-32011, 504, "Upstream did not answer in time", "timeout")
    # Gateway with a tool lockfile (issue 21): a call of a tool the lock does not hold, or that the
    # upstream lists otherwise than locked. Hidden from the client's list, so unknown on the MCP wire.
    TOOL_NOT_LOCKED = (-32012, 403, "Tool not in the lockfile as listed", "tool_not_locked", Plane.PROTOCOL, -32602)
    # Gateway bridging the protocol eras (issue 22): what one era has and the other cannot carry;
    # ``data.feature`` names it (a method, a field, a capability). Never dropped in silence.
    NOT_BRIDGEABLE = (-32013, 501, "Feature cannot be bridged between protocol versions", "unsupported")
    # Issue 31: an HTTP upstream answered 401 (no credentials, or none it takes) or 403 (not allowed);
    # ``data.status`` and ``data.challenge`` (its WWW-Authenticate) say what it asked for. Relayed as
    # a JSON-RPC error; only the HTTP front in passthrough mode answers with the status itself.
    UPSTREAM_UNAUTHORIZED = (-32014, 401, "The server requires authorization", "unauthorized")
    UPSTREAM_FORBIDDEN = (-32015, 403, "The server refused access", "forbidden")
    # Issue 31: an HTTP front as a resource server (MCP authorization, RFC 6750 §3): no token or one it
    # does not accept (401), a token without the scope the tool needs (403); WWW-Authenticate says why.
    UNAUTHORIZED = (-32016, 401, "Authorization required", "unauthorized")
    INSUFFICIENT_SCOPE = (-32017, 403, "Insufficient scope", "forbidden")
    # Gateway (issue 29): a peer's reply over the frame limit of its direction, answered in its place to
    # the side that waits for it; ``data.size`` and ``data.limit`` say by how much (``--max-*-frame-bytes``).
    REPLY_TOO_LARGE = (-32018, 502, "Reply over the gateway's frame limit", "too_large")
    # Gateway in front of many servers (issue 33): a resource URI none of its servers lists or matches
    # (MCP server/resources, "Error Handling": resource not found is -32002).
    RESOURCE_NOT_FOUND = (-32002, 404, "Resource not found", "not_found")
    # Issue 41, one reading (ADR 40): JSON that reads, but not as one document for every parser. A member
    # named twice in one object (I-JSON, RFC 7493 §2.3; ``data.errors[0].path`` points at it) or a nesting
    # deeper than the reader goes (``data.limit``): invalid requests, refused as sent like a parse error.
    DUPLICATE_MEMBER_NAME = (-32600, 400, "A member name appears twice in one object", "validation_failed")
    NESTED_TOO_DEEP = (-32600, 400, "Nested deeper than the frame limit allows", "too_large")

    def __init__(
        self,
        jsonrpc_code: int,
        http_status: int,
        message: str,
        reason: str,
        plane: Plane = Plane.PROTOCOL,
        mcp_code: int | None = None,
    ) -> None:
        self.jsonrpc_code = jsonrpc_code
        self.http_status = http_status
        self.message = message
        self.reason = reason
        self.plane = plane
        self.mcp_code = jsonrpc_code if mcp_code is None else mcp_code

    @property
    def retryable(self) -> bool:
        """Whether the same request may succeed if sent again unchanged."""
        return self in _RETRYABLE

    @property
    def slug(self) -> str:
        """The stable machine name: the member name, lower-cased."""
        return self.name.lower()

    @classmethod
    def lookup(cls, slug: str) -> CanonicalError:
        """The member for ``slug``; an unknown slug raises ``KeyError`` (no silent fallback)."""
        return cls[slug.upper()]

    @classmethod
    def for_jsonrpc_code(cls, code: int) -> CanonicalError:
        """The first member carrying ``code``; ``KeyError`` when none does."""
        member = _BY_CODE.get(code)
        if member is None:
            raise KeyError(code)
        return member


_RETRYABLE = frozenset(
    {
        CanonicalError.TOOL_TIMEOUT,
        CanonicalError.UPSTREAM_FAILURE,
        CanonicalError.UPSTREAM_UNAVAILABLE,
        CanonicalError.UPSTREAM_TIMEOUT,
        CanonicalError.TOO_MANY_SESSIONS,
        CanonicalError.DEPENDENCY_UNAVAILABLE,
    }
)
_BY_CODE: Mapping[int, CanonicalError] = MappingProxyType({m.jsonrpc_code: m for m in reversed(list(CanonicalError))})

# -- The HTTP status of a Streamable HTTP response that carries a JSON-RPC error (ADR 0013) -------
# A JSON-RPC response to a POSTed request, error or not, travels with 200 (spec 2025-03-26 to
# 2025-11-25, transports "Sending Messages to the Server": the answer to a request is a JSON object
# or an SSE stream; HTTP error statuses are for input the server cannot accept at all). These
# members refuse the HTTP request itself, before any request of a live session is read, and keep
# their own status under every version: a body that is no JSON-RPC message (400) or too large (413),
# no session or an unknown one (400, 404), a bad MCP-Protocol-Version (400), what the transport
# refuses about the HTTP request (403, 405, 406, 409, 415), the session cap (503), and authorization:
# the front's own (401, 403) and, in passthrough mode only, the upstream's (issue 31; relayed to any
# other client those two are replies like any other, status 200).
HTTP_REFUSALS = frozenset(
    {
        CanonicalError.PARSE_ERROR,
        CanonicalError.INVALID_ENVELOPE,
        CanonicalError.DUPLICATE_MEMBER_NAME,
        CanonicalError.NESTED_TOO_DEEP,
        CanonicalError.PAYLOAD_TOO_LARGE,
        CanonicalError.NOT_INITIALIZED,
        CanonicalError.HEADER_MISMATCH,
        CanonicalError.UNSUPPORTED_PROTOCOL_VERSION,
        CanonicalError.INVALID_REQUEST_META,
        CanonicalError.HOST_NOT_ALLOWED,
        CanonicalError.NOT_ACCEPTABLE,
        CanonicalError.UNSUPPORTED_MEDIA_TYPE,
        CanonicalError.HTTP_METHOD_NOT_ALLOWED,
        CanonicalError.ROUTE_NOT_FOUND,
        CanonicalError.SESSION_REQUIRED,
        CanonicalError.UNKNOWN_SESSION,
        CanonicalError.TOO_MANY_SESSIONS,
        CanonicalError.STREAM_ALREADY_OPEN,
        CanonicalError.UNAUTHORIZED,
        CanonicalError.INSUFFICIENT_SCOPE,
        CanonicalError.UPSTREAM_UNAUTHORIZED,
        CanonicalError.UPSTREAM_FORBIDDEN,
    }
)
# MCP 2026-07-28 gives four JSON-RPC errors a status of their own, by code, whoever answers with them
# (a server, or an upstream whose reply a gateway relays): transports "Protocol Version Header" (an
# unimplemented method: 404 with -32601) and the schema's HeaderMismatchError,
# UnsupportedProtocolVersionError and MissingRequiredClientCapabilityError (400).
STATELESS_STATUS_BY_CODE: Mapping[int, int] = MappingProxyType(
    {
        member.mcp_code: member.http_status
        for member in (
            CanonicalError.METHOD_NOT_FOUND,
            CanonicalError.HEADER_MISMATCH,
            CanonicalError.MISSING_CLIENT_CAPABILITY,
            CanonicalError.UNSUPPORTED_PROTOCOL_VERSION,
        )
    }
)


def reply_status(error: CanonicalError | None, code: int | None, version: str | None) -> int:
    """The HTTP status of a POST's response carrying a reply: ``error`` is the member the replying side
    rendered it from (``None`` for a result or a relayed reply), ``code`` its JSON-RPC error code
    (``None`` for a result), ``version`` the protocol version the request was read under."""
    if error is not None and error in HTTP_REFUSALS:
        return error.http_status
    if code is not None and version is not None and version >= STATELESS_SINCE:  # versions are dates
        return STATELESS_STATUS_BY_CODE.get(code, 200)
    return 200


# Error-code ranges, (lowest, highest) inclusive. JSON-RPC 2.0 §5.1 reserves -32768..-32000 for
# pre-defined errors and leaves -32099..-32000 to implementation-defined server errors. MCP
# 2026-07-28 claims -32099..-32020 of that range for codes the spec defines, and leaves
# -32019..-32000 to implementations (validation.validate_error_code reads them).
SERVER_ERROR_CODES = (-32099, -32000)
MCP_RESERVED_CODES = (-32099, -32020)
MCP_RESERVED_CODES_SINCE = "2026-07-28"
STATELESS_SINCE = "2026-07-28"
"""The first version without sessions, whose HTTP statuses follow its errors (ADR 0013)."""


class Rejection(Exception):
    """Raised by a pipeline stage to refuse a frame; rendered once, at the boundary.

    ``errors`` are detail entries (``{"path", "msg", ...}``); ``extra`` adds fields to
    ``error.data`` that a spec prescribes (for example ``requested``/``supported`` of -32022).
    ``message`` is what the chain knew of the frame when it refused it (its kind and id decide
    whether and how the boundary answers); a stage that learns more sets it on the rejection as it
    passes and raises the same one, so what the rejection says of itself reaches the boundary whole.
    """

    def __init__(
        self,
        error: CanonicalError,
        errors: Sequence[Mapping[str, Any]] = (),
        *,
        extra: Mapping[str, Any] | None = None,
        message: Message | None = None,
    ) -> None:
        super().__init__(error.slug)
        self.error = error
        self.message = message
        self.errors: tuple[Mapping[str, Any], ...] = tuple(errors) or ({"path": "", "msg": error.slug},)
        self.extra: Mapping[str, Any] = extra or {}
        self.decision_logged = False  # the policy decision behind it is an event already (the gate told it)

    def data(self) -> dict[str, Any]:
        """The ``error.data`` object: ``{"ok": false, "reason", "errors", ...extra}``."""
        return {"ok": False, "reason": self.error.reason, "errors": list(self.errors), **self.extra}

    def summary(self) -> dict[str, Any]:
        """``{"code": slug, "message", "details"}``: the rejection as events and the REST face name it."""
        return {"code": self.error.slug, "message": self.error.message, "details": list(self.errors)}


def catalogue_markdown() -> str:
    """``docs/errors.md``, generated from the catalogue (a test keeps the file equal to this)."""
    lines = [
        "# Error catalogue",
        "",
        "Generated from `mcp_server/core/errors.py` by `python -m mcp_server.core.errors > docs/errors.md`; "
        "do not edit.",
        "",
        "`HTTP status` is the member's own (a refusal of the HTTP request, the REST face); the next",
        "column is the status of a Streamable HTTP response carrying it as a JSON-RPC error, up to",
        "2025-11-25 and under 2026-07-28 (`reply_status`, ADR 0013).",
        "",
        "| slug | JSON-RPC code | code on the MCP wire | HTTP status | as a reply (2025 / 2026) | message "
        "| `data.reason` | plane |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for member in CanonicalError:
        handshake = reply_status(member, member.mcp_code, "2025-11-25")
        stateless = reply_status(member, member.mcp_code, STATELESS_SINCE)
        lines.append(
            f"| `{member.slug}` | {member.jsonrpc_code} | {member.mcp_code} | {member.http_status} "
            f"| {handshake} / {stateless} | {member.message} | `{member.reason}` | {member.plane.value} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(catalogue_markdown())
