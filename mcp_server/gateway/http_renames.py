"""The stateless HTTP session's renames: a request is known by the exchange (the POST) that carried
it, never by what its client chose, so an id or progress token another exchange holds is given one
of the gateway's, and the client gets its own back. Decides names only; it sends nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Container
from typing import Any, NamedTuple

from ..core import jsonio
from ..core.types import Frame, Message, Reply, RequestId, is_request_id
from ..registry.versions import SUBSCRIPTION_ID_META

__all__ = ["Renamed", "Renames", "with_id", "with_subscription", "with_token"]

_renames = itertools.count(1)


class Renamed(NamedTuple):
    """A request as it goes on: its frame, the client's own id when renamed, the id it goes with
    (``wire``) and its progress token."""

    frame: Frame
    original: RequestId | None = None
    wire: RequestId | None = None
    token: Any = None


class Renames:
    """The names the gateway gave (wire id → the client's id, renamed token → the client's), and the
    ids and tokens of requests still in the chain (taken meanwhile)."""

    __slots__ = ("checking", "checking_tokens", "ids", "tokens")

    def __init__(self) -> None:
        self.ids: dict[RequestId, RequestId] = {}
        self.tokens: dict[Any, Any] = {}
        self.checking: set[RequestId] = set()
        self.checking_tokens: set[Any] = set()

    def unique(self, frame: Frame, document: Any, waiting: Container[RequestId], progress: Container[Any]) -> Renamed:
        """A request (``document``: the frame as read) whose id or progress token another client's
        request holds, upstream (``waiting``, ``progress``) or in the chain, gets one of the gateway's
        (the one case where a valid frame is re-serialised)."""
        request_id = document.get("id") if isinstance(document, dict) and "method" in document else None
        if not is_request_id(request_id):
            return Renamed(frame)
        assert isinstance(document, dict)
        params = document.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        token = token if isinstance(token, str | int) else None
        id_taken = request_id in waiting or request_id in self.checking
        token_taken = token is not None and (token in progress or token in self.checking_tokens)
        if not id_taken and not token_taken:
            return Renamed(frame, None, request_id, token)
        wire = f"renamed-{next(_renames)}" if id_taken else request_id
        if id_taken:
            self.ids[wire] = request_id
        if token_taken:
            assert isinstance(params, dict) and isinstance(meta, dict)
            renamed_token = f"renamed-{next(_renames)}"
            self.tokens[renamed_token] = token
            document = {**document, "params": {**params, "_meta": {**meta, "progressToken": renamed_token}}}
            token = renamed_token
        raw = jsonio.dumps({**document, "id": wire})
        return Renamed(frame._replace(raw=raw), request_id if id_taken else None, wire, token)


def with_id(reply: Reply, document: Any, request_id: RequestId) -> Reply:
    """``reply`` under the client's own id (a stateless request the gateway renamed)."""
    if not isinstance(document, dict):
        document = jsonio.loads(reply.to_bytes())
    return Reply(document={**document, "id": request_id}, error=reply.error, version=reply.version, code=reply.code)


def with_token(reply: Reply, message: Message, token: Any) -> Reply:
    """A progress notification under the client's own progress token (a request the gateway renamed)."""
    document = message.document if isinstance(message.document, dict) else jsonio.loads(reply.to_bytes())
    return Reply(document={**document, "params": {**document["params"], "progressToken": token}}, version=reply.version)


def with_subscription(reply: Reply, message: Message, meta: dict[str, Any], request_id: RequestId) -> Reply:
    """A subscription's notification under the client's own listen id (a request the gateway renamed)."""
    document = message.document if isinstance(message.document, dict) else jsonio.loads(reply.to_bytes())
    params = {**document["params"], "_meta": {**meta, SUBSCRIPTION_ID_META: request_id}}
    return Reply(document={**document, "params": params}, version=reply.version)
