"""mcp_server: an MCP conformance gateway and schema-validation server.

Every JSON-RPC frame is checked, in one compiled pass, against the official MCP schema of the
protocol version in force; every tool call against that tool's own input and output schemas.
"""

from __future__ import annotations

__version__ = "0.1.0"

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
