"""The vocabulary of the per-frame path: kinds, directions, frames as they arrive, messages as the
chain reads them, and replies.

Values only; imports nothing above ``core``. A ``Frame`` is what a transport hands in (bytes and
where they came from); a ``Message`` is what the chain learnt of it (the verdict, or as much as it
knew when it refused the frame).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple

from . import jsonio

if TYPE_CHECKING:
    from .errors import CanonicalError
    from .session import Session

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
    "Reply",
    "RequestId",
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

    @property
    def opposite(self) -> Direction:
        return SERVER_TO_CLIENT if self is CLIENT_TO_SERVER else CLIENT_TO_SERVER


# The members as module constants, for the per-frame path: reading an Enum class attribute costs a
# descriptor call each time.
REQUEST, NOTIFICATION = MessageKind.REQUEST, MessageKind.NOTIFICATION
RESPONSE, ERROR_RESPONSE = MessageKind.RESPONSE, MessageKind.ERROR_RESPONSE
CLIENT_TO_SERVER, SERVER_TO_CLIENT = Direction.CLIENT_TO_SERVER, Direction.SERVER_TO_CLIENT


class Frame(NamedTuple):
    """One frame as a transport hands it in: the bytes (without the NDJSON newline) and where they
    came from. Nothing here is parsed; the chain reads the frame and answers with a ``Message``."""

    raw: bytes
    transport: str
    session: Session
    size: int | None = None  # bytes received, when ``raw`` holds less (a drained oversized line)
    direction: Direction = Direction.CLIENT_TO_SERVER
    headers: Mapping[str, str] | None = None  # an HTTP request's headers (lower-case names)


class Message(NamedTuple):
    """What the chain learnt of a frame: for a valid frame, its verdict; for a refused one, as much
    as was known when it was refused (``kind`` and ``id`` decide whether and how to answer).

    ``method`` is, for a response, the method of the request it answers; ``version`` the protocol
    version whose schema governed the frame; ``tool`` the tool a ``tools/call`` names (or that the
    answered call named); ``document`` the parsed frame.
    """

    kind: MessageKind
    id: RequestId | None = None
    method: str | None = None
    params: Mapping[str, Any] | None = None
    version: str | None = None
    tool: str | None = None
    document: Mapping[str, Any] | None = None


@dataclass(slots=True, kw_only=True)
class Reply:
    """What goes on the wire for a frame: a JSON-RPC document, or bytes forwarded as they are.

    ``error`` names the catalogue member when the reply is a rejection, ``code`` the error code of a
    peer's error reply passed on; the HTTP transport takes its status from them and ``version``, the
    version the request was read under. Not frozen: one is made per frame, and a frozen dataclass's
    ``__init__`` costs twice as much; nothing changes a reply once made.
    """

    document: Mapping[str, Any] | None = None
    raw: bytes | None = None
    error: CanonicalError | None = None
    version: str | None = None
    code: int | None = None  # the JSON-RPC error code of an error reply relayed as it came (``error``: ours)
    # HTTP headers of its own (a refusal's WWW-Authenticate), for an HTTP front answering with it.
    headers: tuple[tuple[bytes, bytes], ...] = ()
    # The document serialised, once: the event log measures the reply and the transport sends it.
    _encoded: bytes | None = field(default=None, init=False, repr=False, compare=False)

    def to_bytes(self) -> bytes:
        if self.raw is not None:
            return self.raw
        encoded = self._encoded
        if encoded is None:
            encoded = jsonio.dumps(self.document)
            self._encoded = encoded  # a cache, not a change of the reply
        return encoded


Handler = Callable[[Frame], Awaitable[Reply | None]]
"""An application's entry: a frame in, its reply out (``None``: nothing to answer)."""
