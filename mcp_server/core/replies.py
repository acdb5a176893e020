"""A rejection rendered as a JSON-RPC error response: the one shape every refusal takes on the wire."""

from __future__ import annotations

from typing import Any

from .errors import Rejection
from .types import Reply

__all__ = ["error_reply"]


def error_reply(
    rejection: Rejection, request_id: Any = None, version: str | None = None, *, omit_id: bool = False
) -> Reply:
    """The JSON-RPC error response for ``rejection`` (``id`` null when the request's is unknown, or
    left out with ``omit_id``: the versions whose schema allows no null)."""
    error = rejection.error
    body = {"code": error.mcp_code, "message": error.message, "data": rejection.data()}
    if omit_id and request_id is None:
        return Reply(document={"jsonrpc": "2.0", "error": body}, error=error, version=version)
    return Reply(document={"jsonrpc": "2.0", "id": request_id, "error": body}, error=error, version=version)
