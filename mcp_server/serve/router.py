"""The innermost handler: method name → route. Wraps a route's result into the JSON-RPC reply.

A route returns the ``result`` object (or ``None`` for a notification); the router completes
it with the fields the version in force requires (``resultType`` and cache hints under 2026-07-28).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Any

from ..core.errors import CanonicalError, Rejection
from ..core.types import Frame, MessageKind, Reply
from ..registry.schemas import SchemaRegistry

__all__ = ["Route", "Router", "complete_result"]

Route = Callable[[Frame], Awaitable[Mapping[str, Any] | None]]

# Neutral values for the result fields a version makes required: the result is final, and
# nothing this server returns is user-specific or worth caching (2026-07-28 CacheableResult).
_RESULT_DEFAULTS: Mapping[str, Any] = MappingProxyType({"resultType": "complete", "cacheScope": "public", "ttlMs": 0})


def complete_result(
    registry: SchemaRegistry, version: str | None, method: str, result: Mapping[str, Any]
) -> dict[str, Any]:
    completed = dict(result)
    if version is not None:
        for field in registry.protocol(version).result_required(method):
            if field not in completed and field in _RESULT_DEFAULTS:
                completed[field] = _RESULT_DEFAULTS[field]
    return completed


class Router:
    def __init__(self, routes: Mapping[str, Route], registry: SchemaRegistry) -> None:
        self.routes: Mapping[str, Route] = MappingProxyType(dict(routes))
        self.registry = registry

    async def __call__(self, frame: Frame) -> Reply | None:
        message = frame.message
        assert message is not None
        if message.kind not in (MessageKind.REQUEST, MessageKind.NOTIFICATION):
            return None  # a response to a request of ours: already checked, nothing to answer
        assert message.method is not None
        route = self.routes.get(message.method)
        if route is None:
            if message.kind is MessageKind.REQUEST:
                raise Rejection(
                    CanonicalError.METHOD_NOT_FOUND, [{"path": "/method", "msg": "method_not_found"}], frame=frame
                )
            return None
        try:
            result = await route(frame)
        except Rejection as rejection:
            if rejection.frame is None:
                rejection.frame = frame
            raise
        except Exception as exc:
            raise Rejection(CanonicalError.INTERNAL_ERROR, frame=frame) from exc
        if message.kind is MessageKind.NOTIFICATION:
            return None
        document = {
            "jsonrpc": "2.0",
            "id": message.id,
            "result": complete_result(self.registry, frame.version, message.method, result or {}),
        }
        return Reply(document=document)
