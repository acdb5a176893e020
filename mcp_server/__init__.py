"""mcp_server: an MCP conformance gateway and schema-validation server.

Every JSON-RPC frame is checked, in one compiled pass, against the official MCP schema of the
protocol version in force; every tool call against that tool's own input and output schemas.
The names below load on first use (``import mcp_server`` alone costs nothing: the command line
starts fast).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .chain.compose import Chain, build_chain
    from .core.errors import CanonicalError, Plane, Rejection
    from .core.session import Session
    from .core.types import Direction, Frame, Handler, Message, MessageKind, Reply
    from .registry.schemas import SchemaError, SchemaRegistry

__all__ = [
    "CanonicalError",
    "Chain",
    "Direction",
    "Frame",
    "Handler",
    "Message",
    "MessageKind",
    "Plane",
    "Rejection",
    "Reply",
    "SchemaError",
    "SchemaRegistry",
    "Session",
    "__version__",
    "build_chain",
]

_HOMES = {
    "Chain": "chain.compose",
    "build_chain": "chain.compose",
    "CanonicalError": "core.errors",
    "Plane": "core.errors",
    "Rejection": "core.errors",
    "Session": "core.session",
    "Direction": "core.types",
    "Frame": "core.types",
    "Handler": "core.types",
    "Message": "core.types",
    "MessageKind": "core.types",
    "Reply": "core.types",
    "SchemaError": "registry.schemas",
    "SchemaRegistry": "registry.schemas",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'mcp_server' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{home}", __name__), name)
