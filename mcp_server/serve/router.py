"""The innermost handler: method name → route. Wraps a route's result into the JSON-RPC reply.

A route returns the ``result`` object (or ``None`` for a notification); the router completes
it with the fields the version in force requires (``resultType`` and cache hints under 2026-07-28).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from inspect import isawaitable
from types import MappingProxyType
from typing import Any

from ..core.errors import CanonicalError, Rejection
from ..core.types import Frame, Message, MessageKind, Reply
from ..registry.schemas import SchemaRegistry

__all__ = ["Route", "Router", "complete_result"]

Route = Callable[[Message, Frame], Mapping[str, Any] | Awaitable[Mapping[str, Any] | None] | None]

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
    """Method → route. A route takes the checked message and its frame and returns the ``result``
    object (``None`` for a notification), directly or as an awaitable (only what must wait awaits)."""

    def __init__(self, routes: Mapping[str, Route], registry: SchemaRegistry) -> None:
        self.routes: Mapping[str, Route] = MappingProxyType(dict(routes))
        self.registry = registry

    async def __call__(self, message: Message, frame: Frame) -> Reply | None:
        kind = message.kind
        if kind is not MessageKind.REQUEST and kind is not MessageKind.NOTIFICATION:
            return None  # a response to a request of ours: already checked, nothing to answer
        assert message.method is not None
        route = self.routes.get(message.method)
        if route is None:
            if kind is MessageKind.REQUEST:
                raise Rejection(
                    CanonicalError.METHOD_NOT_FOUND, [{"path": "/method", "msg": "method_not_found"}], message=message
                )
            return None
        try:
            result = route(message, frame)
            if isawaitable(result):
                result = await result
        except Rejection as rejection:
            if rejection.message is None:
                rejection.message = message
            raise
        except Exception as exc:
            raise Rejection(CanonicalError.INTERNAL_ERROR, message=message) from exc
        if kind is MessageKind.NOTIFICATION:
            return None
        completed = complete_result(self.registry, message.version, message.method, result or {})
        return Reply(document={"jsonrpc": "2.0", "id": message.id, "result": completed}, version=message.version)
