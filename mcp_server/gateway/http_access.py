"""Who may use the gateway's HTTP front, and what it answers when they may not (issue 31): a tool's
scope refused, the upstream's refusal passed through as its challenge, the protected resource
metadata of passthrough. Holds no session's state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..chain.classify import called_tool
from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.replies import error_reply
from ..core.types import Frame, Reply
from ..execution.access import FrontAuth, Refusal, UpstreamResource
from ..transport.http import Receive, Scope, Send, respond

__all__ = ["FrontAccess", "challenged", "scope_refusal", "scoped", "upstream_metadata"]

_UPSTREAM_REFUSALS = {
    member.mcp_code: member for member in (CanonicalError.UPSTREAM_UNAUTHORIZED, CanonicalError.UPSTREAM_FORBIDDEN)
}


@dataclass(frozen=True, slots=True)
class FrontAccess:
    """Who may use the front (issue 31): its own check of tokens (``auth``), or the upstream's, the
    client authenticating to it through the gateway (``passthrough``); neither: anyone on loopback."""

    auth: FrontAuth | None = None
    passthrough: UpstreamResource | None = None


def scoped(access: FrontAccess, frame: Frame) -> bool:
    """Whether the frame's tool decides its admission (tool scopes are configured; it came over HTTP)."""
    return access.auth is not None and bool(access.auth.tool_scopes) and frame.headers is not None


async def scope_refusal(access: FrontAccess, frame: Frame, document: Any) -> Reply | None:
    """A ``tools/call`` (``document``: the frame as read, ``None`` unreadable) whose token lacks a
    scope the tool needs: 403 with the scopes to ask for (MCP authorization, "Scope Challenge
    Handling"), before anything is relayed."""
    auth = access.auth
    if auth is None or not scoped(access, frame):
        return None
    assert frame.headers is not None
    tool = _called_tool(document)
    admitted = await auth.admit(frame.headers) if tool is not None else None
    refusal = admitted if isinstance(admitted, Refusal) or admitted is None else auth.scope_refusal(admitted, tool)
    if refusal is None:
        return None
    reply = error_reply(refusal.rejection)
    reply.headers = refusal.headers
    return reply


def _called_tool(document: Any) -> str | None:
    """The tool a ``tools/call`` document names (``None`` for anything else)."""
    if not isinstance(document, dict):
        return None
    method, params = document.get("method"), document.get("params")
    return called_tool(method, params) if isinstance(method, str) and isinstance(params, dict) else None


def challenged(passthrough: UpstreamResource, reply: Reply) -> Reply:
    """Passthrough: the upstream's refusal of the client's credentials goes back as its status and
    its ``WWW-Authenticate``, pointing to the gateway's resource metadata (issue 31)."""
    document = reply.document if isinstance(reply.document, dict) else jsonio.loads(reply.to_bytes())
    error = document.get("error") if isinstance(document, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    member = _UPSTREAM_REFUSALS.get(code) if isinstance(code, int) else None
    if member is None or not isinstance(error, dict):
        return reply
    data = error.get("data")
    challenge = str(data.get("challenge") or "Bearer") if isinstance(data, dict) else "Bearer"
    header = passthrough.rewrite(challenge).encode()
    return Reply(document=document, error=member, version=reply.version, headers=((b"www-authenticate", header),))


def upstream_metadata(passthrough: UpstreamResource, refused: Callable[..., Any]) -> Callable[..., Any]:
    """Passthrough: the gateway's protected resource metadata, the upstream's authorization servers."""

    async def route(scope: Scope, receive: Receive, send: Send, headers: Mapping[str, str]) -> None:
        document = await passthrough.metadata() if scope["method"] == "GET" else None
        if document is not None:
            await respond(send, 200, document, b"application/json")
        elif scope["method"] == "GET":
            await refused(send, Rejection(CanonicalError.ROUTE_NOT_FOUND), ())
        else:
            await refused(send, Rejection(CanonicalError.HTTP_METHOD_NOT_ALLOWED), ((b"allow", b"GET"),))

    return route
