"""The official `mcp` SDK client in the sessions the gateway tests hold through it: a held call
approved then refused, a session at a given protocol version recording its HTTP statuses, a client
with a bearer token or its OAuth provider (holds no test)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import pytest
from mcp import types
from mcp.client.auth import OAuthClientProvider
from mcp.client.client import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp.shared.exceptions import MCPError
from pydantic import AnyUrl

from mcp_server.core.errors import CanonicalError

from .gateways import WAIT

STATELESS = "2026-07-28"


def approve_then_refuse(server: StdioServerParameters | str) -> list[str]:
    """Through the gateway at ``server`` (its STDIO command, or its HTTP URL), the official SDK client
    calls the held tool `echo` twice, its user answering yes then no, then a tool nobody holds.
    Returns the questions the user was asked."""
    answers = iter([True, False])
    asked: list[str] = []

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": next(answers)})

    async def session() -> None:
        async with Client(server, mode="legacy", read_timeout_seconds=WAIT, elicitation_callback=answer) as client:
            approved = await client.call_tool("echo", {"text": "hello"})
            assert approved.is_error is False and approved.content[0].text == "hello"
            with pytest.raises(MCPError) as refused:
                await client.call_tool("echo", {"text": "again"})
            assert refused.value.error.code == CanonicalError.APPROVAL_DENIED.mcp_code
            assert refused.value.error.data["policy_violation"] is True
            added = await client.call_tool("add", {"a": 1, "b": 2})  # not held: no approval rule
            assert added.structured_content == {"total": 3}

    asyncio.run(asyncio.wait_for(session(), WAIT))
    return asked


@asynccontextmanager
async def official_client(
    url: str, *, token: str | None = None, auth: httpx2.Auth | None = None
) -> AsyncIterator[Client]:
    """The official client over Streamable HTTP, sending ``Authorization: Bearer token`` or with an
    OAuth provider (``auth``); its HTTP client closed with it."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, auth=auth, timeout=httpx2.Timeout(WAIT)) as http:
        client = Client(streamable_http_client(url, http_client=http), mode="legacy", read_timeout_seconds=WAIT)
        async with client:
            yield client


class _Memory:
    """The official client's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def oauth_provider(url: str) -> tuple[OAuthClientProvider, _Memory]:
    """The official client with its OAuth provider: the "browser" is a real HTTP client that opens
    the authorization URL and follows the authorization server's redirect to the callback."""
    redirected: list[str] = []
    redirect_uri = "http://127.0.0.1:9/callback"  # never listened on: the redirect is read, not followed there

    async def open_page(authorization_url: str) -> None:
        async with httpx.AsyncClient(timeout=WAIT, follow_redirects=False) as browser:
            response = await browser.get(authorization_url)
        assert response.is_redirect, response.text
        redirected.append(response.headers["location"])

    async def come_back() -> AuthorizationCodeResult:
        query = {key: values[0] for key, values in parse_qs(urlsplit(redirected.pop()).query).items()}
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    storage = _Memory()
    metadata = OAuthClientMetadata(redirect_uris=[AnyUrl(redirect_uri)], client_name="sdk-test-client")
    provider = OAuthClientProvider(url, metadata, storage, redirect_handler=open_page, callback_handler=come_back)
    return provider, storage


@asynccontextmanager
async def sdk_session(url: str, version: str, statuses: list[tuple[str, int]]) -> AsyncIterator[ClientSession]:
    """The official client's session at ``version`` (a handshake offering it, or `server/discover`);
    the method and HTTP status of every POST it makes are appended to ``statuses``."""

    async def record(response: httpx2.Response) -> None:
        if response.request.method == "POST":
            statuses.append((json.loads(response.request.content).get("method"), response.status_code))

    timeout = httpx2.Timeout(WAIT)
    async with (
        httpx2.AsyncClient(timeout=timeout, event_hooks={"response": [record]}) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, read_timeout_seconds=WAIT) as session,
    ):
        if version == STATELESS:
            await session.discover()
        else:
            offer = types.InitializeRequestParams(
                protocol_version=version,
                capabilities=types.ClientCapabilities(),
                client_info=types.Implementation(name="status-test", version="1"),
            )
            session.adopt(await session.send_request(types.InitializeRequest(params=offer), types.InitializeResult))
            await session.send_notification(types.InitializedNotification())
        assert session.protocol_version == version
        yield session
