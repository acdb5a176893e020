"""The vocabulary of the pipeline: frames, messages, replies, handlers and middleware.

Values only; no I/O and no logic beyond trivial accessors.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

from . import jsonio
from .errors import CanonicalError

if TYPE_CHECKING:
    from .peer import PeerChannel

__all__ = [
    "CLIENT_TO_SERVER",
    "ERROR_RESPONSE",
    "NOTIFICATION",
    "REQUEST",
    "RESPONSE",
    "SERVER_TO_CLIENT",
    "Direction",
    "Frame",
    "Handler",
    "Message",
    "MessageKind",
    "Middleware",
    "Reply",
    "RequestId",
    "Session",
]

RequestId = str | int


class MessageKind(StrEnum):
    REQUEST = "request"
    NOTIFICATION = "notification"
    RESPONSE = "response"
    ERROR_RESPONSE = "error_response"


class Direction(StrEnum):
    """Who sent the frame. A server receives client→server frames; a gateway sees both."""

    CLIENT_TO_SERVER = "client_to_server"
    SERVER_TO_CLIENT = "server_to_client"


# The members as module constants, for the per-frame path: reading an Enum class attribute costs a
# descriptor call each time.
REQUEST, NOTIFICATION = MessageKind.REQUEST, MessageKind.NOTIFICATION
RESPONSE, ERROR_RESPONSE = MessageKind.RESPONSE, MessageKind.ERROR_RESPONSE
CLIENT_TO_SERVER, SERVER_TO_CLIENT = Direction.CLIENT_TO_SERVER, Direction.SERVER_TO_CLIENT


class Message(NamedTuple):
    """A classified JSON-RPC 2.0 message. ``id`` is ``None`` for a notification.

    For a response, ``method`` is the method of the request it answers, once the schema check
    has matched it (``None`` before, or when no request of that id is known).
    """

    kind: MessageKind
    id: RequestId | None = None
    method: str | None = None
    params: Mapping[str, Any] | None = None

    @property
    def expects_reply(self) -> bool:
        return self.kind is MessageKind.REQUEST


_session_ids = itertools.count(1)

_ABANDONED_KEPT = 1024
"""Abandoned requests a session remembers, for their late replies (the oldest are forgotten)."""


class Session:
    """Per-connection protocol state, owned by one transport connection.

    Deliberately mutable: it is the state machine of the MCP lifecycle (basic/lifecycle),
    touched only by the router's lifecycle handlers and read by the schema check.
    """

    __slots__ = (
        "abandoned",
        "client_capabilities",
        "client_info",
        "id",
        "initialized",
        "log_id",
        "peer",
        "pending",
        "pending_tools",
        "pending_versions",
        "protocol_version",
    )

    def __init__(self, *, session_id: str | None = None) -> None:
        self.id: str = session_id or f"s{next(_session_ids)}"
        self.protocol_version: str | None = None
        self.initialized = False
        self.log_id: str | None = None  # the session's id in the event log, given on its first event
        self.client_info: Mapping[str, Any] | None = None
        self.client_capabilities: Mapping[str, Any] | None = None
        # Requests sent towards a peer and not answered yet: (direction of the request, id) → method.
        self.pending: dict[tuple[Direction, RequestId], str] = {}
        # The tool named by each pending ``tools/call``, so its result meets the tool's outputSchema.
        self.pending_tools: dict[tuple[Direction, RequestId], str] = {}
        # How to send the client a request of the server's own (elicitation), on transports that can.
        self.peer: PeerChannel | None = None
        # The version each pending request stated for itself (2026-07-28: no session version).
        self.pending_versions: dict[tuple[Direction, RequestId], str] = {}
        # Requests settled without their peer's reply (cancelled, or answered in the peer's place): a
        # reply that still comes is late, not unknown. The most recent ``_ABANDONED_KEPT`` only.
        self.abandoned: dict[tuple[Direction, RequestId], None] = {}

    def expect_reply(
        self,
        direction: Direction,
        request_id: RequestId,
        method: str,
        tool: str | None = None,
        *,
        version: str | None = None,
    ) -> None:
        """Record a request sent in ``direction`` so its response is checked against its result type
        (of ``version``, when the request stated its own)."""
        self.pending[(direction, request_id)] = method
        if tool is not None:
            self.pending_tools[(direction, request_id)] = tool
        if version is not None:
            self.pending_versions[(direction, request_id)] = version

    def settle(self, direction: Direction, request_id: RequestId) -> tuple[str | None, str | None]:
        """The request sent in ``direction`` is answered (or answered for): no longer pending.
        Returns its method and tool (``None`` when it was not pending)."""
        key = (direction, request_id)
        self.pending_versions.pop(key, None)
        return self.pending.pop(key, None), self.pending_tools.pop(key, None)

    def abandon(self, direction: Direction, request_id: RequestId) -> tuple[str | None, str | None]:
        """Settle a pending request that its peer will not be heard on (cancelled, timed out):
        its reply, should it come, is late. Returns its method and tool (``None``: not pending)."""
        method, tool = self.settle(direction, request_id)
        if method is not None:
            if len(self.abandoned) >= _ABANDONED_KEPT:
                del self.abandoned[next(iter(self.abandoned))]
            self.abandoned[(direction, request_id)] = None
        return method, tool

    def late(self, direction: Direction, request_id: RequestId) -> bool:
        """Whether a reply to ``request_id`` (a request sent in ``direction``) answers an abandoned
        request; it is forgotten (one reply per request)."""
        key = (direction, request_id)
        if key not in self.abandoned:
            return False
        del self.abandoned[key]
        return True


_NO_ANNOTATIONS: Mapping[str, Any] = MappingProxyType({})


class Frame(NamedTuple):
    """One frame as it moves through the chain; each stage hands on a new frame.

    ``raw`` is the bytes as received (without the NDJSON newline); ``document`` is set once
    by the JSON syntax stage, ``message`` by classify, ``version`` by the schema check.
    ``draft`` is what the event log learns of the frame on its way (``events.Draft``): given by
    the error boundary when there is a log, and carried by every frame a stage makes of this one.
    A named tuple: immutable, and cheap to copy (several stages copy it per frame).
    """

    raw: bytes
    transport: str
    session: Session
    size: int | None = None  # bytes received, when ``raw`` holds less (a drained oversized line)
    direction: Direction = Direction.CLIENT_TO_SERVER
    headers: Mapping[str, str] | None = None
    document: Mapping[str, Any] | None = None
    message: Message | None = None
    version: str | None = None
    annotations: Mapping[str, Any] = _NO_ANNOTATIONS
    draft: list[Any] | None = None

    def evolve(
        self,
        *,
        raw: bytes | None = None,
        document: Mapping[str, Any] | None = None,
        message: Message | None = None,
        version: str | None = None,
        annotations: Mapping[str, Any] | None = None,
    ) -> Frame:
        """A new frame with the given fields changed (``None`` keeps a field as it is)."""
        old_raw, transport, session, size, direction, headers, old_doc, old_msg, old_version, old_notes, draft = self
        return tuple.__new__(
            Frame,
            (
                old_raw if raw is None else raw,
                transport,
                session,
                size,
                direction,
                headers,
                old_doc if document is None else document,
                old_msg if message is None else message,
                old_version if version is None else version,
                old_notes if annotations is None else annotations,
                draft,
            ),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """What goes back on the wire for a frame: a JSON-RPC document, or bytes forwarded as is.

    ``error`` names the catalogue member when the reply is a rejection (the HTTP transport
    takes its status from it). ``to_peer`` sends it on to the other side instead of back to the
    sender (a gateway relaying a frame).
    """

    document: Mapping[str, Any] | None = None
    raw: bytes | None = None
    error: CanonicalError | None = None
    to_peer: bool = False
    # The document serialised, once: the event log measures the reply and the transport sends it.
    _encoded: bytes | None = field(default=None, init=False, repr=False, compare=False)

    def to_bytes(self) -> bytes:
        if self.raw is not None:
            return self.raw
        encoded = self._encoded
        if encoded is None:
            encoded = jsonio.dumps(self.document)
            object.__setattr__(self, "_encoded", encoded)  # a cache, not a change of the reply
        return encoded


Handler = Callable[[Frame], Awaitable[Reply | None]]
"""Handles a frame; ``None`` means no reply (a notification, or a response)."""

Middleware = Callable[[Handler], Handler]
"""Wraps a handler; the chain is a composition of these."""
