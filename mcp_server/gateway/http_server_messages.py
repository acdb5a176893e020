"""Where an upstream's message that is no reply goes on the gateway's HTTP front: the stream of the
request it belongs to (a subscription's, a progress token's), else an open POST stream, else the
session's GET stream, else a bounded backlog until one opens (spec: transports, "Streamable HTTP").
Stateless, it reaches only the exchange it can belong to, never another client's.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping
from typing import Any

from ..core.errors import CanonicalError, Rejection
from ..core.types import Message, Reply, RequestId
from ..registry.versions import SUBSCRIPTION_ID_META
from ..transport.streamable import MAX_HELD_STREAM_BYTES, Stream
from .http_renames import Renames, with_subscription, with_token

__all__ = ["ServerMessages"]

log = logging.getLogger("mcp_server.gateway")

# Server messages waiting for a GET stream that is not open yet: past this many, or past the bytes a
# stream holds for its client, the oldest go (and the drop is logged).
_BACKLOG = 10_000


class ServerMessages:
    """One HTTP session's streams for server messages: its requests' progress tokens, its GET
    stream and what waits for one (``waiting``: the POSTs waiting for replies, by wire id)."""

    def __init__(self, waiting: Mapping[RequestId, Stream], renames: Renames, *, stateless: bool) -> None:
        self.waiting, self.renames, self.stateless = waiting, renames, stateless
        self.progress: dict[Any, Stream] = {}
        self.get_stream: Stream | None = None
        self.backlog: deque[Reply] = deque()
        self._backlog_bytes = 0

    def forget(self, stream: Stream) -> None:
        """A POST's request is answered or ended: its progress tokens go."""
        for token in [token for token, held in self.progress.items() if held is stream]:
            del self.progress[token]
            self.renames.tokens.pop(token, None)

    def notify(self, reply: Reply, message: Message) -> None:
        """On the stream of the request it belongs to (a subscription's, a progress token's), else
        an open POST stream, else the GET stream, else kept until a GET stream opens."""
        params = message.params if isinstance(message.params, dict) else {}
        meta = params.get("_meta")
        if isinstance(meta, dict) and SUBSCRIPTION_ID_META in meta:
            self._to_subscription(reply, message, meta)
            return
        stream: Stream | None = None
        if message.method == "notifications/progress":
            token = params.get("progressToken")
            stream = self.progress.get(token)
            if stream is not None and not stream.sse:  # its POST takes one JSON reply
                if self.stateless:
                    return
                stream = None
            if stream is not None and token in self.renames.tokens:
                reply = with_token(reply, message, self.renames.tokens[token])
        if stream is None and self.stateless:
            # The requests in flight may be different clients': a message of no known request goes
            # only to the one request in flight (whose exchange it can only be), else to none.
            only = next(iter(self.waiting.values())) if len(self.waiting) == 1 else None
            if only is None or not only.sse:
                log.warning("gateway: a stateless server message of no known request was not delivered")
                return
            stream = only
        if stream is None:
            open_posts = [held for held in self.waiting.values() if held.sse]
            get_stream = self.get_stream if self.get_stream is not None and not self.get_stream.closed else None
            stream = open_posts[-1] if open_posts else get_stream
        if stream is not None:
            stream.put(reply)
            return
        self._keep(reply)

    def _keep(self, reply: Reply) -> None:
        self.backlog.append(reply)
        self._backlog_bytes += len(reply.to_bytes())
        dropped = 0
        while len(self.backlog) > _BACKLOG or (self._backlog_bytes > MAX_HELD_STREAM_BYTES and len(self.backlog) > 1):
            self._backlog_bytes -= len(self.backlog.popleft().to_bytes())
            dropped += 1
        if dropped:
            log.warning("gateway: session backlog full; the oldest server message was dropped")

    def _to_subscription(self, reply: Reply, message: Message, meta: dict[str, Any]) -> None:
        """A notification of a ``subscriptions/listen`` stream goes on that listen request's stream
        only (over STDIO every subscription shares one channel, told apart by this id), under the
        client's own id; one whose stream is gone goes nowhere, never to another client."""
        wire = meta[SUBSCRIPTION_ID_META]
        stream = self.waiting.get(wire) if isinstance(wire, str | int) else None
        if stream is None:
            log.warning("gateway: a notification of no open subscription (id %r) was not delivered", wire)
            return
        original = self.renames.ids.get(wire)
        stream.put(reply if original is None else with_subscription(reply, message, meta, original))

    def listen(self) -> Stream:
        """The session's GET stream (one at a time), with what waited for it."""
        if self.get_stream is not None and not self.get_stream.closed:
            raise Rejection(CanonicalError.STREAM_ALREADY_OPEN)
        stream = self.get_stream = Stream(sse=True)
        while self.backlog:
            stream.put(self.backlog.popleft())
        self._backlog_bytes = 0
        return stream

    def end(self) -> None:
        """The session is over: no token is followed any more, the GET stream ends."""
        self.progress.clear()
        if self.get_stream is not None:
            self.get_stream.end()
            self.get_stream = None
