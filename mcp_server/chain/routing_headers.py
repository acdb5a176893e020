"""The 2026-07-28 HTTP routing headers against the body they route (spec: transports, "Routing headers").

Pure; no I/O. A request that carries its protocol version in ``_meta`` (the stateless protocol)
and arrives with HTTP headers must repeat that version in ``MCP-Protocol-Version``, its method in
``Mcp-Method`` and, for the methods that name something, that name in ``Mcp-Name``; any
difference, or a header missing, is HEADER_MISMATCH (-32020, HTTP 400).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ..core.errors import CanonicalError, Rejection
from ..core.types import Message
from ..registry.versions import PROTOCOL_VERSION_META

__all__ = ["NAME_BEARING_METHODS", "check_routing_headers", "decode_header_value"]

NAME_BEARING_METHODS: Mapping[str, str] = MappingProxyType(
    {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
)
"""Method → the ``params`` member mirrored in ``Mcp-Name``."""

# A value that is not plain visible ASCII travels as ``=?base64?<payload>?=``.
_BASE64_VALUE = re.compile(r"^=\?base64\?(?P<payload>.*)\?=$")


def decode_header_value(value: str | None) -> str | None:
    if value is None:
        return None
    match = _BASE64_VALUE.match(value)
    if match is None:
        return value
    try:
        return base64.b64decode(match["payload"], validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def _mismatch(header: str, member: str) -> Rejection:
    return Rejection(
        CanonicalError.HEADER_MISMATCH, [{"path": member, "msg": f"{header} header does not match the body"}]
    )


def check_routing_headers(message: Message, headers: Mapping[str, str]) -> None:
    """Raise HEADER_MISMATCH when the routing headers (lower-case names) disagree with ``message``."""
    params = message.params if isinstance(message.params, Mapping) else {}
    meta = params.get("_meta")
    if not isinstance(meta, Mapping) or PROTOCOL_VERSION_META not in meta:
        return  # a session-based request: its version is the session's, checked by the transport
    version: Any = meta[PROTOCOL_VERSION_META]
    if headers.get("mcp-protocol-version") is None or headers.get("mcp-protocol-version") != version:
        raise _mismatch("MCP-Protocol-Version", "/params/_meta/" + PROTOCOL_VERSION_META.replace("/", "~1"))
    if headers.get("mcp-method") != message.method:
        raise _mismatch("Mcp-Method", "/method")
    member = NAME_BEARING_METHODS.get(message.method or "")
    named = params.get(member) if member is not None else None
    if named is not None and decode_header_value(headers.get("mcp-name")) != named:
        raise _mismatch("Mcp-Name", f"/params/{member}")
