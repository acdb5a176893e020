"""One connection's protocol state: the version in force and the requests waiting for an answer.

The Session owns request/response matching: a request sent towards a peer is expected, the
response that answers it settles it; nothing else changes these tables (the chain only reads
them). No I/O.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Container, Iterator, Mapping
from typing import Any, NamedTuple, Protocol

from .errors import CanonicalError, Rejection
from .kinds import ERROR_RESPONSE, REQUEST, RESPONSE, Direction, Message, RequestId

__all__ = ["Peer", "Pending", "Session", "duplicate_request"]

_session_ids = itertools.count(1)

_ABANDONED_KEPT = 1024
"""Abandoned requests a session remembers, for their late replies (the oldest are forgotten)."""


def duplicate_request(request_id: RequestId, message: Message | None = None) -> Rejection:
    """The refusal of a request sent under an id a request of the same sender still waits on
    (JSON-RPC 2.0 §4: the id is how a response finds its request; ADR 43); ``data.id`` names it."""
    return Rejection(
        CanonicalError.DUPLICATE_REQUEST_ID,
        [{"path": "/id", "msg": "duplicate_request_id"}],
        extra={"id": request_id},
        message=message if message is not None else Message(REQUEST, request_id),
    )


class Pending(NamedTuple):
    """A request waiting for its answer: its method, the tool a ``tools/call`` named, and the version
    it stated for itself (2026-07-28: a request carries its own)."""

    method: str
    tool: str | None = None
    version: str | None = None


_new = tuple.__new__
_OPPOSITE = {d: d.opposite for d in Direction}  # (``opposite`` is a property: a Python call per frame)


class Peer(Protocol):
    """How a server asks its client something on a connection that carries both ways (elicitation)."""

    def deliver(self, request_id: Any, document: Mapping[str, Any]) -> bool:
        """A checked reply from the client; ``True`` when a request of ours waited for it."""

    def elicit_approval(self, session: Session) -> Callable[[str, Mapping[str, Any], str], Awaitable[bool]]:
        """Ask the client's user to approve one call (tool, arguments, their digest)."""


class Session:
    """Per-connection state of the MCP lifecycle (basic/lifecycle), owned by one connection.

    ``version`` is the negotiated protocol version (``None`` before ``initialize``, and always under
    the stateless 2026-07-28). The pending table is keyed by (direction the request went, its id).
    """

    __slots__ = (
        "_abandoned",
        "_own",
        "_pending",
        "_renamed",
        "_wire",
        "client_capabilities",
        "client_info",
        "id",
        "initialized",
        "log_id",
        "peer",
        "version",
    )

    def __init__(self, *, session_id: str | None = None) -> None:
        self.id: str = session_id or f"s{next(_session_ids)}"
        self.version: str | None = None
        self.initialized = False
        self.log_id: str | None = None  # the session's id in the event log, given on its first event
        self.client_info: Mapping[str, Any] | None = None
        self.client_capabilities: Mapping[str, Any] | None = None
        # How a server sends its client a request of its own (elicitation), on transports that can.
        self.peer: Peer | None = None
        self._pending: dict[tuple[Direction, RequestId], Pending] = {}
        # Requests settled without their peer's reply (cancelled, or answered in the peer's place): a
        # reply that still comes is late, not unknown. The most recent ``_ABANDONED_KEPT`` only.
        self._abandoned: dict[tuple[Direction, RequestId], None] = {}
        # One request per id in flight each way (ADR 43). The session's own requests (a gateway's, a
        # server's question to its client), and a peer's requests that went on under another id
        # because one of those held theirs: the id they went under → the peer's own, and back.
        self._own: set[tuple[Direction, RequestId]] = set()
        self._renamed: dict[tuple[Direction, RequestId], RequestId] = {}
        self._wire: dict[tuple[Direction, RequestId], RequestId] = {}

    # -- the handshake -------------------------------------------------------------------------

    def negotiate(
        self,
        version: str | None,
        *,
        client_info: Mapping[str, Any] | None = None,
        capabilities: Mapping[str, Any] | None = None,
    ) -> None:
        """``initialize`` settled the session's version (and, on a server, what the client declared)."""
        self.version = version
        if client_info is not None:
            self.client_info = client_info
        if capabilities is not None:
            self.client_capabilities = capabilities

    def follow(self, direction: Direction, message: Message) -> None:
        """What a frame that goes on (sent in ``direction``) changes here, the one rule the gateway and
        ``check`` both follow: a request waits for its answer, with the version it states for itself
        while the session has none (2026-07-28: each request carries its own, and none makes the
        session's, so a ``server/discover`` refused and then an ``initialize`` is a handshake
        session); an ``initialize`` result settles the session's version."""
        if message.kind is REQUEST:
            assert message.id is not None and message.method is not None
            stated = message.version if self.version is None else None
            # ``expect``'s one line, without its call (a request per frame takes this path)
            self._pending[(direction, message.id)] = _new(Pending, (message.method, message.tool, stated))
        elif message.kind is RESPONSE and message.method == "initialize" and message.document is not None:
            result = message.document.get("result")
            version = result.get("protocolVersion") if isinstance(result, Mapping) else None
            self.negotiate(version if isinstance(version, str) else None)

    # -- request/response matching ---------------------------------------------------------------

    def expect(
        self,
        direction: Direction,
        request_id: RequestId,
        method: str,
        tool: str | None = None,
        version: str | None = None,
        *,
        own: bool = False,
    ) -> None:
        """A request went out in ``direction``: its response is checked against its result type.
        ``own``: the session's own request, not a peer's it relays (a peer's under its id is renamed).
        Raises ``duplicate_request`` when a request of that id still waits there (ADR 43), but for one
        of the session's own, stated again as it is sent (the version its bytes state)."""
        key = (direction, request_id)
        if key in self._pending and key not in self._own:
            raise duplicate_request(request_id, Message(REQUEST, request_id, method))
        # (built as a tuple: a NamedTuple's own ``__new__`` is a Python call more per request)
        self._pending[key] = _new(Pending, (method, tool, version))
        if own:
            self._own.add(key)

    def answered(self, direction: Direction, message: Message | None) -> Pending | None:
        """A reply sent in ``direction`` that the chain read as the answer to a waiting request (its
        ``method`` names it), valid or refused: that request waits no more. The application calls this
        with each verdict, as it calls ``follow``; returns the request (``None``: the frame answered none)."""
        if message is None or message.method is None or message.id is None:
            return None
        if message.kind is not RESPONSE and message.kind is not ERROR_RESPONSE:
            return None
        return self._pending.pop((_OPPOSITE[direction], message.id), None)

    def peek(self, direction: Direction, request_id: RequestId) -> Pending | None:
        """The request of ``request_id`` sent in ``direction``, if it still waits (nothing changes)."""
        return self._pending.get((direction, request_id))

    def settle(self, direction: Direction, request_id: RequestId) -> Pending | None:
        """The request sent in ``direction`` is answered (or answered for): it no longer waits.
        Returns it (``None`` when no such request waited)."""
        if self._own:
            self._own.discard((direction, request_id))
        return self._pending.pop((direction, request_id), None)

    def abandon(self, direction: Direction, request_id: RequestId) -> Pending | None:
        """Settle a pending request that its peer will not be heard on (cancelled, timed out): its
        reply, should it come, is late. Returns it (``None``: it was not pending)."""
        pending = self.settle(direction, request_id)
        if pending is not None:
            if len(self._abandoned) >= _ABANDONED_KEPT:
                del self._abandoned[next(iter(self._abandoned))]
            self._abandoned[(direction, request_id)] = None
        return pending

    def late(self, direction: Direction, request_id: RequestId) -> bool:
        """Whether a reply to ``request_id`` (a request sent in ``direction``) answers an abandoned
        request; it is forgotten (one reply per request)."""
        key = (direction, request_id)
        if key not in self._abandoned:
            return False
        del self._abandoned[key]
        return True

    # -- one request per id in flight (ADR 43) ------------------------------------------------------

    def in_flight(self, direction: Direction, request_id: RequestId) -> bool:
        """Whether a request the peer sent in ``direction`` under ``request_id`` still waits (under
        it, or renamed): a second one is refused, its reply could not be told from the first's."""
        key = (direction, request_id)
        if key in self._pending and key not in self._own and key not in self._renamed:
            return True
        return key in self._wire  # (renamed: one of the session's own may wait under that id meanwhile)

    def given(self, direction: Direction, request_id: RequestId) -> bool:
        """Whether the session itself holds ``request_id`` in ``direction`` (a request of its own, or
        the id it renamed a peer's to): a peer's request under it did nothing wrong, it is renamed."""
        key = (direction, request_id)
        return key in self._own or key in self._renamed

    def free_id(
        self,
        direction: Direction,
        wanted: RequestId,
        fresh: Callable[[], RequestId],
        taken: Container[RequestId] = (),
    ) -> RequestId:
        """The id a request sent in ``direction`` goes under: ``wanted``, unless a request under it
        still waits there, the session holds it, or ``taken`` (a table of the caller's) has it; then
        the first of ``fresh`` that is free. The one rule every table of ids in flight follows."""
        request_id = wanted
        while (
            (direction, request_id) in self._pending
            or self.given(direction, request_id)
            or request_id in taken
        ):
            request_id = fresh()
        return request_id

    def rename(self, direction: Direction, request_id: RequestId, fresh: Callable[[], RequestId]) -> RequestId:
        """A peer's request sent in ``direction`` under an id the session holds there (``given``): the
        id it goes on under, until ``restore`` gives the peer's own back."""
        wire = self.free_id(direction, request_id, fresh)
        self._renamed[(direction, wire)] = request_id
        self._wire[(direction, request_id)] = wire
        return wire

    def renamed_to(self, direction: Direction, request_id: RequestId) -> RequestId | None:
        """The id the peer's request ``request_id`` went on under, when ``rename`` gave it one."""
        return self._wire.get((direction, request_id)) if self._wire else None

    def restore(self, direction: Direction, wire: RequestId) -> RequestId | None:
        """The peer's own id of its request renamed to ``wire`` in ``direction``, given back once (its
        answer goes to it now, or none will); ``None``: that request was not renamed."""
        original = self._renamed.pop((direction, wire), None) if self._renamed else None
        if original is not None:
            del self._wire[(direction, original)]
        return original

    def waiting(self, direction: Direction | None = None) -> Iterator[tuple[Direction, RequestId, Pending]]:
        """The requests still waiting (of one direction, or both), oldest first."""
        for (went, request_id), pending in list(self._pending.items()):
            if direction is None or went is direction:
                yield went, request_id, pending

    def __len__(self) -> int:
        return len(self._pending)
