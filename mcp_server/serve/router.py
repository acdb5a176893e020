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
from ..registry.versions import result_defaults

__all__ = ["Route", "Router"]

Route = Callable[[Message, Frame], Mapping[str, Any] | Awaitable[Mapping[str, Any] | None] | None]


class Router:
    """Method → route. A route takes the checked message and its frame and returns the ``result``
    object (``None`` for a notification), directly or as an awaitable (only what must wait awaits).
    Calling the router answers the same way: the reply at once, or an awaitable of it."""

    def __init__(self, routes: Mapping[str, Route], registry: SchemaRegistry) -> None:
        self.routes: Mapping[str, Route] = MappingProxyType(dict(routes))
        self.registry = registry
        self._added: dict[tuple[str | None, str], Mapping[str, Any]] = {}  # the result fields a version requires

    def __call__(self, message: Message, frame: Frame) -> Reply | Awaitable[Reply | None] | None:
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
        except Rejection as rejection:
            _own(rejection, message)
            raise
        except Exception as failure:
            raise Rejection(CanonicalError.INTERNAL_ERROR, message=message) from failure
        if result is None or type(result) is dict or not isawaitable(result):
            return self._reply(message, result)
        return self._later(message, result)

    async def _later(self, message: Message, pending: Awaitable[Mapping[str, Any] | None]) -> Reply | None:
        try:
            result = await pending
        except Rejection as rejection:
            _own(rejection, message)
            raise
        except Exception as failure:
            raise Rejection(CanonicalError.INTERNAL_ERROR, message=message) from failure
        return self._reply(message, result)

    def _reply(self, message: Message, result: Mapping[str, Any] | None) -> Reply | None:
        """The route's ``result`` as the reply, with the fields the version in force requires."""
        if message.kind is MessageKind.NOTIFICATION:
            return None
        version, method = message.version, message.method
        assert method is not None
        added = self._added.get((version, method))
        if added is None:
            # Nothing this server returns is user-specific: its results are public.
            protocol = None if version is None else self.registry.protocol(version)
            added = {} if protocol is None else result_defaults(protocol, method, scope="public")
            self._added[(version, method)] = added
        result = result if type(result) is dict else dict(result or {})
        missing = {field: value for field, value in added.items() if field not in result}
        if missing:
            result = {**result, **missing}
        return Reply(document={"jsonrpc": "2.0", "id": message.id, "result": result}, version=version)


def _own(rejection: Rejection, message: Message) -> None:
    """A route's own rejection answers ``message``."""
    if rejection.message is None:
        rejection.message = message
