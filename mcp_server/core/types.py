"""The vocabulary of the per-frame path: kinds, directions, frames as they arrive, messages as the
chain reads them, and replies.

Values only; imports nothing above ``core``. A ``Frame`` is what a transport hands in (bytes and
where they came from); a ``Message`` is what the chain learnt of it (the verdict, or as much as it
knew when it refused the frame). The kinds, directions, ids and ``Message`` live in the leaf
``kinds`` (the catalogue and the session use them without importing this module) and are offered
here too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from . import jsonio
from .kinds import (
    CLIENT_TO_SERVER,
    ERROR_RESPONSE,
    NOTIFICATION,
    REQUEST,
    RESPONSE,
    SERVER_TO_CLIENT,
    Direction,
    Message,
    MessageKind,
    RequestId,
    is_request_id,
)

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
    "is_request_id",
]


class Frame(NamedTuple):
    """One frame as a transport hands it in: the bytes (without the NDJSON newline) and where they
    came from. Nothing here is parsed; the chain reads the frame and answers with a ``Message``."""

    raw: bytes
    transport: str
    session: Session
    size: int | None = None  # bytes received, when ``raw`` holds less (a drained oversized line)
    direction: Direction = Direction.CLIENT_TO_SERVER
    headers: Mapping[str, str] | None = None  # an HTTP request's headers (lower-case names)


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
