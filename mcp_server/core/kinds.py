"""The words every per-frame module shares: message kinds, directions, request ids, and the
``Message`` the chain learns of a frame.

A leaf: imports nothing of the package, so the catalogue, the session and the frame types can all
use it without importing one another.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, NamedTuple, TypeGuard

__all__ = [
    "CLIENT_TO_SERVER",
    "ERROR_RESPONSE",
    "NOTIFICATION",
    "REQUEST",
    "RESPONSE",
    "SERVER_TO_CLIENT",
    "Direction",
    "Message",
    "MessageKind",
    "RequestId",
    "is_request_id",
]

RequestId = str | int


def is_request_id(value: Any) -> TypeGuard[RequestId]:
    """A JSON-RPC id as MCP allows it: a string or an integer, never null, a float or a bool."""
    kind = type(value)  # a parsed document's own types first: the per-frame case, and no bool
    if kind is str or kind is int:
        return True
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


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
