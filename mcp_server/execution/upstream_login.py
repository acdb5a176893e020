"""The gateway logging in to an HTTP upstream that asks for OAuth (MCP authorization, the client's
side), with the official ``mcp`` SDK's OAuth client doing the protocol: protected resource and
authorization server metadata, dynamic registration (or a configured client id), authorization code
with PKCE, the RFC 8707 resource indicator, refresh. What a gateway adds: the tokens in a 0600 file
per upstream, the user's browser sent to the authorization page, a loopback listener for the
redirect, and one login shared by every session of the run.

Imported on the upstream's first refusal of the run's token, or by ``mcp-server login``
(``upstream_token.DeferredLogin``), when the SDK is installed (the ``oauth`` extra). Never writes a
token anywhere but its file.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError, OAuthRegistrationError, OAuthTokenError
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import AnyUrl, ValidationError

from ..core import jsonio
from ..core.errors import CanonicalError
from ..core.files import write_atomic
from .upstream_token import LoginSettings, read_token_file

__all__ = ["TokenFile", "UpstreamLogin", "login_now", "open_browser"]

log = logging.getLogger("mcp_server.gateway")

_CLIENT_NAME = "mcp-server gateway"
_PING = b'{"jsonrpc":"2.0","id":"mcp-server-login","method":"ping"}'
_CALLBACK_PATH = "/callback"
_PAGE = b"<!doctype html><title>mcp-server</title><p>Signed in: you may close this page.</p>\n"


class LoginNeeded(Exception):
    """The upstream wants a login and this run may not ask the user (``doctor``, ``lock``)."""


class TokenFile:
    """The SDK's token storage as one JSON file readable by its owner only: the tokens and the
    registered client. A configured client id stands for the registered one."""

    def __init__(self, path: Path, configured: OAuthClientInformationFull | None = None) -> None:
        self.path = path
        self.configured = configured

    def read(self) -> dict[str, Any]:
        try:
            return read_token_file(self.path)
        except (OSError, jsonio.JSONSyntaxError) as exc:
            log.warning("upstream login: %s is unreadable (%s); logging in again", self.path, type(exc).__name__)
            return {}

    def _write(self, key: str, value: Any) -> None:
        document = {**self.read(), key: value}
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomic(self.path, jsonio.dumps_pretty(document), mode=0o600)

    async def get_tokens(self) -> OAuthToken | None:
        try:
            return OAuthToken.model_validate(self.read()["tokens"])
        except (KeyError, ValidationError):
            return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._write("tokens", tokens.model_dump(mode="json", exclude_none=True))

    def client(self) -> OAuthClientInformationFull | None:
        """The configured client, else the one registered before."""
        if self.configured is not None:
            return self.configured
        try:
            return OAuthClientInformationFull.model_validate(self.read()["client"])
        except (KeyError, ValidationError):
            return None

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client()

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self.configured is None:
            self._write("client", client_info.model_dump(mode="json", exclude_none=True))

    def keep_discovery(self, context: Any) -> None:
        """What the flow found (the resource's and the authorization server's metadata): a later run
        refreshes its token at the right endpoint before it discovers anything (the SDK keeps these
        in memory only, and would refresh at the resource's own origin)."""
        found = {
            "resource": context.protected_resource_metadata,
            "authorization_server": context.oauth_metadata,
        }
        kept = {key: value.model_dump(mode="json", exclude_none=True) for key, value in found.items() if value}
        if kept and kept != self.read().get("discovered"):
            self._write("discovered", kept)

    def restore_discovery(self, context: Any) -> None:
        kept = self.read().get("discovered")
        if not isinstance(kept, dict):
            return
        with contextlib.suppress(ValidationError, TypeError):
            if context.protected_resource_metadata is None and "resource" in kept:
                resource = ProtectedResourceMetadata.model_validate(kept["resource"])
                context.protected_resource_metadata = resource
                context.auth_server_url = str(resource.authorization_servers[0])
            if context.oauth_metadata is None and "authorization_server" in kept:
                context.oauth_metadata = OAuthMetadata.model_validate(kept["authorization_server"])


class UpstreamLogin:
    """The upstream's bearer token for every session of the run (``transport/http_client.py``'s
    ``Authorizer``): read from the token file, renewed when the upstream refuses it (refresh first,
    else a login through the browser), one renewal at a time."""

    def __init__(self, settings: LoginSettings) -> None:
        self.settings = settings
        configured = _configured_client(settings)
        self.storage = TokenFile(settings.token_file, configured)
        self.redirect_uri = f"http://127.0.0.1:{_redirect_port(settings, self.storage)}{_CALLBACK_PATH}"
        metadata = OAuthClientMetadata(
            redirect_uris=[AnyUrl(self.redirect_uri)],
            client_name=_CLIENT_NAME,
            grant_types=["authorization_code", "refresh_token"],
            token_endpoint_auth_method="none",  # registered by the flow: a public client (PKCE)
            scope=settings.scope,
        )
        self._callback: _Callback | None = None
        self.provider = OAuthClientProvider(
            settings.url, metadata, self.storage, redirect_handler=self._redirect, callback_handler=self._returned
        )
        self._lock = asyncio.Lock()
        # The SDK logs a failed flow with its traceback; the gateway says it in one line (``renew``).
        logging.getLogger("mcp.client.auth").setLevel(logging.CRITICAL)
        stored = self.storage.read().get("tokens")
        token = stored.get("access_token") if isinstance(stored, dict) else None
        self._current: str | None = f"Bearer {token}" if isinstance(token, str) else None

    def authorization(self) -> str | None:
        return self._current

    async def renew(self, rejected: str | None, status: int, challenge: str | None) -> bool:
        async with self._lock:
            if self._current is not None and self._current != rejected:
                return True  # renewed meanwhile, by another session of this run
            stored = await self.storage.get_tokens()
            if stored is not None and f"Bearer {stored.access_token}" != rejected:
                self._current = f"Bearer {stored.access_token}"  # renewed meanwhile by `mcp-server login`
                return True
            try:
                await self._answer(stored, status, challenge)
            except (OAuthFlowError, OAuthTokenError, OAuthRegistrationError, LoginNeeded, httpx2.HTTPError) as exc:
                log.warning("upstream login: %s: %s", type(exc).__name__, _first_line(exc))
                return False
            tokens = self.provider.context.current_tokens
            self._current = None if tokens is None else f"Bearer {tokens.access_token}"
            return self._current is not None and self._current != rejected

    async def login(self) -> bool:
        """Log in now (``mcp-server login``), whatever the file holds; whether a token came. The flow
        starts from the upstream's own refusal of a ``ping`` without a token."""
        async with self._lock:
            self._prepare(None, expired=False)
            try:
                async with httpx2.AsyncClient(auth=self.provider, timeout=self._timeout()) as client:
                    await client.post(self.settings.url, content=_PING, headers=self._probe_headers())
            finally:
                self.storage.keep_discovery(self.provider.context)
            tokens = self.provider.context.current_tokens
            self._current = None if tokens is None else f"Bearer {tokens.access_token}"
            return self._current is not None

    async def _answer(self, stored: OAuthToken | None, status: int, challenge: str | None) -> None:
        """The SDK's flow, answering the upstream's refusal (``status``, its ``challenge``) of the
        token it had: a refresh when that token can be refreshed (a 401), else discovery, registration
        and the browser; a 403 asking for more scope is a step-up. The flow's own requests (metadata,
        registration, tokens) are sent; the request it authenticates is not: it is the refused one,
        which the HTTP client sends again once a new token is here."""
        self._prepare(stored, expired=status == CanonicalError.UPSTREAM_UNAUTHORIZED.http_status)
        original = httpx2.Request("POST", self.settings.url, headers=self._probe_headers(), content=_PING)
        refusal = httpx2.Response(status, headers={"WWW-Authenticate": challenge or "Bearer"}, request=original)
        refused_token = None if stored is None else stored.access_token
        flow = self.provider.async_auth_flow(original)
        answered = False
        try:
            async with httpx2.AsyncClient(timeout=self._timeout()) as http:
                request = await flow.__anext__()
                while True:
                    if request is original:
                        tokens = self.provider.context.current_tokens
                        if answered or (tokens is not None and tokens.access_token != refused_token):
                            return  # a new token (refreshed, or at the end of the flow)
                        response, answered = refusal, True
                    else:
                        response = await http.send(request)
                    request = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()
            self.storage.keep_discovery(self.provider.context)

    def _prepare(self, stored: OAuthToken | None, *, expired: bool) -> None:
        """The SDK's context from the file: the token the upstream refused (``expired``: refreshed
        before anything else), the registered client, what discovery found before."""
        context = self.provider.context
        context.current_tokens = stored
        context.client_info = self.storage.client()
        context.token_expiry_time = 1.0 if expired else None  # long past (0 would mean "never")
        self.storage.restore_discovery(context)

    def _probe_headers(self) -> dict[str, str]:
        return {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": self.settings.version,
        }

    def _timeout(self) -> httpx2.Timeout:
        return httpx2.Timeout(30.0, read=self.settings.wait_seconds + 30.0)

    async def _redirect(self, authorization_url: str) -> None:
        """The user is sent to the authorization page: its URL on stderr, and the browser opened."""
        if not self.settings.interactive:
            raise LoginNeeded(f"the upstream asks for a login: run `mcp-server login --upstream {self.settings.url}`")
        self._callback = await _Callback.listen(self.redirect_uri)
        sys.stderr.write(f"mcp:authorize upstream={self.settings.url} open={authorization_url}\n")
        sys.stderr.flush()
        open_browser(authorization_url)

    async def _returned(self) -> AuthorizationCodeResult:
        assert self._callback is not None
        try:
            return await asyncio.wait_for(self._callback.result, self.settings.wait_seconds)
        except TimeoutError:
            raise OAuthFlowError(f"no sign-in within {self.settings.wait_seconds:g} s") from None
        finally:
            self._callback.close()
            self._callback = None


def _configured_client(settings: LoginSettings) -> OAuthClientInformationFull | None:
    if settings.client_id is None:
        return None
    port = settings.redirect_port  # given with a client id (``LoginSettings`` checks it)
    return OAuthClientInformationFull(
        client_id=settings.client_id,
        client_secret=settings.client_secret,
        redirect_uris=[AnyUrl(f"http://127.0.0.1:{port}{_CALLBACK_PATH}")],
        # RFC 6749 §2.3.1: every authorization server takes a client password in HTTP Basic.
        token_endpoint_auth_method="none" if settings.client_secret is None else "client_secret_basic",
    )


def _redirect_port(settings: LoginSettings, storage: TokenFile) -> int:
    """The redirect URI's port: configured, else the one the stored registration names (the
    authorization server compares it), else a free one now."""
    if settings.redirect_port:
        return settings.redirect_port
    client = storage.read().get("client")
    uris = client.get("redirect_uris") if isinstance(client, dict) else None
    if isinstance(uris, list) and uris and isinstance(uris[0], str):
        port = urlsplit(uris[0]).port
        if port:
            return port
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [""])[0][:300]


def open_browser(url: str) -> None:
    """Open ``url`` in the user's browser: the ``BROWSER`` command (``%s`` is the URL, else it comes
    last), else the desktop's opener when there is a desktop. Its output goes to stderr: the
    gateway's stdout may be the protocol's."""
    command: list[str] | None = None
    if os.environ.get("BROWSER"):
        words = shlex.split(os.environ["BROWSER"])
        command = [word.replace("%s", url) for word in words] if any("%s" in w for w in words) else [*words, url]
    elif sys.platform == "darwin":
        command = ["open", url]
    elif os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        command = ["xdg-open", url]
    if command is None:
        sys.stderr.write("mcp:authorize no browser here: open the URL above on this machine\n")
        return
    with contextlib.suppress(OSError):
        subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=sys.stderr, stderr=sys.stderr)


class _Callback:
    """The loopback listener the authorization server sends the browser back to (RFC 8252 §7.3):
    one ``GET /callback?code=…&state=…``, answered with a short page."""

    def __init__(self) -> None:
        self.result: asyncio.Future[AuthorizationCodeResult] = asyncio.get_running_loop().create_future()
        self.server: asyncio.Server | None = None

    @classmethod
    async def listen(cls, redirect_uri: str) -> _Callback:
        callback = cls()
        port = urlsplit(redirect_uri).port
        try:
            callback.server = await asyncio.start_server(callback._serve, "127.0.0.1", port)
        except OSError as exc:
            raise OAuthFlowError(f"cannot listen on {redirect_uri} for the sign-in: {exc.strerror}") from None
        return callback

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10.0)
            target = head.split(b"\r\n", 1)[0].split(b" ")[1].decode("latin-1")
            parts = urlsplit(target)
            query = {key: values[0] for key, values in parse_qs(parts.query).items()}
            found = parts.path == _CALLBACK_PATH and ("code" in query or "error" in query)
            status = b"200 OK" if found else b"404 Not Found"
            body = _PAGE if found else b"not found\n"
            writer.write(b"HTTP/1.1 " + status + b"\r\ncontent-type: text/html; charset=utf-8\r\n")
            writer.write(b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body) + body)
            await writer.drain()
            if found and not self.result.done():
                if "error" in query:
                    self.result.set_exception(OAuthFlowError(f"the sign-in was refused: {query['error']}"))
                else:
                    self.result.set_result(
                        AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))
                    )
        except (OSError, IndexError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    def close(self) -> None:
        if self.server is not None:
            self.server.close()


async def login_now(login: UpstreamLogin, upstream: str) -> int:
    """``mcp-server login``: the flow now; 0 and where the tokens are, or 1 and why not (no token is
    ever printed)."""
    try:
        logged_in = await login.login()
    except (OAuthFlowError, OAuthTokenError, OAuthRegistrationError, httpx2.HTTPError) as exc:
        sys.stderr.write(f"mcp:error reason=login_failed upstream={upstream} detail={_first_line(exc)}\n")
        return 1
    if not logged_in:
        sys.stderr.write(f"mcp:error reason=login_failed upstream={upstream} detail=no token was issued\n")
        return 1
    sys.stderr.write(f"mcp:login upstream={upstream} tokens={login.settings.token_file}\n")
    return 0
