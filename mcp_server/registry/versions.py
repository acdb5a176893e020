"""Protocol versions: their order, and which one governs a frame. Pure; no I/O.

Spec: basic/lifecycle (2024-11-05 … 2025-11-25), and for 2026-07-28 the per-request ``_meta``
envelope (a request states its own version; there is no handshake).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..core.errors import CanonicalError, Rejection
from ..core.session import Pending, Session
from ..core.types import CLIENT_TO_SERVER, SERVER_TO_CLIENT, Direction, Message, MessageKind
from .schemas import ProtocolSchema, SchemaRegistry

__all__ = [
    "CLIENT_CAPABILITIES_META",
    "CLIENT_INFO_META",
    "LOG_LEVEL_META",
    "PROTOCOL_VERSION_META",
    "SERVER_INFO_META",
    "SUBSCRIPTION_ID_META",
    "answered_version",
    "is_at_least",
    "reply_version",
    "resolve_version",
    "result_defaults",
    "sender_of",
    "stated_version",
    "stateless_version",
]

PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
# The other reserved ``_meta`` keys of 2026-07-28: a request's client and log level, a result's
# server, a notification's subscription.
CLIENT_INFO_META = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_META = "io.modelcontextprotocol/logLevel"
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID_META = "io.modelcontextprotocol/subscriptionId"

# Only ping may precede the handshake (basic/lifecycle: "The client SHOULD NOT send requests
# other than pings before the server has responded to the initialize request").
_PRE_HANDSHAKE_METHODS = frozenset({"initialize", "ping"})


def result_defaults(protocol: ProtocolSchema, method: str, *, scope: str) -> dict[str, Any]:
    """Neutral values for the fields ``protocol`` requires of ``method``'s result that the stateful era
    never says (2026-07-28 ``CacheableResult``): the result is final and not worth caching, its
    ``cacheScope`` is ``scope``: ``public`` for a server's own results, ``private`` for an
    upstream's (the gateway cannot tell whether it is user-specific)."""
    neutral = {"resultType": "complete", "cacheScope": scope, "ttlMs": 0}
    required = protocol.result_required(method)
    return {field: value for field, value in neutral.items() if field in required}


def sender_of(method: str, tables: Iterable[Mapping[tuple[Direction, str], Any]]) -> Direction | None:
    """The one side that sends ``method`` by the schemas' method tables (keyed by direction and
    method), ``None`` when both sides may (``ping``, ``notifications/progress``, …) or neither does."""
    sides = {side for table in tables for side in (CLIENT_TO_SERVER, SERVER_TO_CLIENT) if (side, method) in table}
    return next(iter(sides)) if len(sides) == 1 else None


def is_at_least(registry: SchemaRegistry, version: str | None, floor: str) -> bool:
    """Whether ``version`` is ``floor`` or later, by position among the bundled versions."""
    if version is None or version not in registry.protocols or floor not in registry.protocols:
        return False
    return registry.versions.index(version) >= registry.versions.index(floor)


def stated_version(params: Mapping[str, Any] | None) -> Any:
    """What a request's ``_meta`` states as its protocol version (2026-07-28), unchecked; ``None`` if nothing."""
    if type(params) is not dict and not isinstance(params, Mapping):  # (a parsed frame's dict first)
        return None
    meta = params.get("_meta")
    if type(meta) is not dict and not isinstance(meta, Mapping):
        return None
    return meta.get(PROTOCOL_VERSION_META)


def stateless_version(params: Mapping[str, Any] | None, registry: SchemaRegistry) -> str | None:
    """The stateless version a request states for itself (2026-07-28 ``_meta``), when it names one
    ``registry`` has; ``None`` for none, or for a value that is no such version (a list is none)."""
    version = stated_version(params)
    return version if type(version) is str and version in registry.stateless_versions else None


def reply_version(registry: SchemaRegistry, pending: Pending | None) -> str:
    """The version whose schema governs a reply in a session that has none: the version its request
    stated, when that is a stateless one (2026-07-28), else the newest handshake version. (A session's
    own version, when it has one, governs every frame of it.)"""
    stated = None if pending is None else pending.version
    return stated if stated is not None and stated in registry.stateless_versions else registry.latest_handshake


def answered_version(registry: SchemaRegistry, result: Any) -> str | None:
    """The version an ``initialize`` result names, when a session can be held to it: a handshake
    version bundled here (basic/lifecycle, version negotiation: the client goes on at the version the
    server answered, or disconnects; 2026-07-28 has no handshake). It is read whatever else the result
    gets wrong: a reply refused for another field still says which version the server speaks (ADR 42).
    ``None`` when it names no such version."""
    named = result.get("protocolVersion") if isinstance(result, Mapping) else None
    return named if type(named) is str and named in registry.handshake_versions else None


def _stateless_version_of(message: Message, registry: SchemaRegistry) -> str | None:
    """The newest stateless version that defines the client's ``message`` (its method, its kind)."""
    for version in reversed(registry.stateless_versions):
        protocol = registry.protocol(version)
        methods = protocol.request_methods if message.kind is MessageKind.REQUEST else protocol.notification_methods
        if message.method in methods:
            return version
    return None


def resolve_version(
    message: Message,
    direction: Direction,
    session: Session,
    registry: SchemaRegistry,
    *,
    announced: str | None = None,
) -> str:
    """The protocol version whose schema governs ``message``.

    A session that completed a handshake keeps its version. Otherwise a request that names a
    stateless version in ``_meta`` is governed by it (2026-07-28: no handshake); ``initialize``
    by the version it negotiates; a pre-handshake ping by the newest handshake version. Any other
    request or notification of the client's that the newest stateless version defines is governed
    by that version, the only one in which it can be valid without a handshake: its schema names
    the ``_meta`` key that is missing or malformed (-32602), unless an HTTP ``MCP-Protocol-Version``
    header (``announced``) names a handshake version. A server's message is of the version of the
    client's open stateless request, if any. Any other request before the handshake is refused.
    """
    if session.version is not None:
        return session.version
    requested = stated_version(message.params)
    if requested is not None:
        if not isinstance(requested, str):
            raise Rejection(
                CanonicalError.INVALID_REQUEST_META,
                [{"path": "/params/_meta/" + PROTOCOL_VERSION_META.replace("/", "~1"), "msg": "must be a string"}],
            )
        if requested not in registry.stateless_versions:
            raise Rejection(
                CanonicalError.UNSUPPORTED_PROTOCOL_VERSION,
                # The versions a request of this era may state: what ``server/discover`` lists.
                extra={"requested": requested, "supported": list(registry.stateless_versions)},
            )
        return requested
    if message.method == "initialize":
        offered = message.params.get("protocolVersion") if isinstance(message.params, Mapping) else None
        return offered if offered in registry.handshake_versions else registry.latest_handshake
    if message.method in _PRE_HANDSHAKE_METHODS:
        return registry.latest_handshake
    if direction is Direction.SERVER_TO_CLIENT:
        # A server's message while a stateless request of the client is open is of that request's version.
        stated = (p.version for _, _, p in session.waiting(Direction.CLIENT_TO_SERVER) if p.version is not None)
        return next(stated, registry.latest_handshake)
    if announced not in registry.handshake_versions:
        stateless = _stateless_version_of(message, registry)
        if stateless is not None:
            return stateless
    if message.kind is not MessageKind.REQUEST:
        return registry.latest_handshake
    if message.method not in registry.protocol(registry.latest_handshake).request_methods:
        return registry.latest_handshake  # unknown everywhere: the schema check answers -32601
    raise Rejection(CanonicalError.NOT_INITIALIZED)
