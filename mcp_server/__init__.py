"""mcp_server: an MCP conformance gateway and schema-validation server.

Every JSON-RPC frame is checked, in one compiled pass, against the official MCP schema of the
protocol version in force; every tool call against that tool's own input and output schemas.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .chain.compose import build_chain, compose
from .core.errors import CanonicalError, Plane, Rejection
from .core.types import Direction, Frame, Handler, Message, MessageKind, Middleware, Reply, Session
from .registry.schemas import SchemaError, SchemaRegistry

__all__ = [
    "CanonicalError",
    "Direction",
    "Frame",
    "Handler",
    "Message",
    "MessageKind",
    "Middleware",
    "Plane",
    "Rejection",
    "Reply",
    "SchemaError",
    "SchemaRegistry",
    "Session",
    "__version__",
    "build_chain",
    "compose",
]
