"""The lifecycle routes of a server: ``initialize``, ``notifications/initialized``, ``ping`` and
(2026-07-28) ``server/discover``. The handshake's routes are what commit a session's version.

Spec: basic/lifecycle (2024-11-05 … 2025-11-25); 2026-07-28 ``server/discover``.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import CanonicalError, Rejection
from ..core.types import Frame, Message
from ..registry.schemas import SchemaRegistry

__all__ = ["SERVER_NAME", "discover", "initialize", "initialized", "ping"]

SERVER_NAME = "mcp-server"


def _capabilities(tools: bool) -> dict[str, Any]:
    return {"tools": {"listChanged": False}} if tools else {}


def initialize(message: Message, frame: Frame, *, version_string: str, tools: bool = True) -> dict[str, Any]:
    """``initialize``: commit the negotiated version (chosen by ``resolve_version``) to the session."""
    session = frame.session
    if session.version is not None:
        raise Rejection(CanonicalError.ALREADY_INITIALIZED, message=message)
    params = message.params or {}
    session.negotiate(message.version, client_info=params.get("clientInfo"), capabilities=params.get("capabilities"))
    return {
        "protocolVersion": message.version,
        "capabilities": _capabilities(tools),
        "serverInfo": {"name": SERVER_NAME, "version": version_string},
    }


def initialized(message: Message, frame: Frame) -> None:
    """``notifications/initialized``: the client finished the handshake."""
    if frame.session.version is not None:
        frame.session.initialized = True


def ping(message: Message, frame: Frame) -> dict[str, Any]:
    return {}


def discover(message: Message, frame: Frame, *, registry: SchemaRegistry, tools: bool = True) -> dict[str, Any]:
    """``server/discover`` (2026-07-28): what this server speaks. Nothing user-specific: public."""
    return {
        "supportedVersions": list(registry.versions),
        "capabilities": _capabilities(tools),
        "cacheScope": "public",
        "ttlMs": 0,
    }
