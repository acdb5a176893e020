"""The HTTP fronts as resource servers (issue 31; MCP authorization 2025-06-18 onward): `--auth
tokens:FILE` and `--auth jwt:ISSUER` on `gateway --listen http://...` and `serve --http`, the
`WWW-Authenticate` of each refusal, the protected resource metadata (RFC 9728), per-tool scopes, a
token of the front's never sent upstream, and no open door on an address other hosts reach.

Real processes: the gateway and `serve` under uvicorn, the test authorization server
(`tests/upstreams/auth_server.py`, the `mcp` SDK's server auth), the official SDK client with a
bearer header or with its own OAuth provider completing the flow through a real HTTP redirect.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

from mcp_server.core.errors import CanonicalError

from ..conftest import cli
from ..processes import free_port
from ..servers import serving
from .authorization import WAIT, assert_never_shown, authorization_server, gateway_vars, mint, protected_upstream
from .clients import oauth_provider, official_client
from .gateways import HEADERS, SDK_UPSTREAM, body_of, http_gateway, rpc

FRONT_TOKEN = "front-token-planted-8c1e77f0a9b2"
UPSTREAM_TOKEN = "upstream-token-planted-41d09e3c"
INITIALIZE = rpc(
    0,
    "initialize",
    {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
)


def _challenge(response: httpx.Response) -> dict[str, str]:
    """The parameters of a ``Bearer`` challenge (RFC 6750 §3)."""
    header = response.headers.get("www-authenticate", "")
    assert header.startswith("Bearer "), header
    return dict(re.findall(r'(\w+)="([^"]*)"', header))


def _tokens_file(tmp_path: Path, *tokens: str) -> Path:
    folder = tmp_path / "secrets"
    folder.mkdir(exist_ok=True)
    path = folder / "front.tokens"
    path.write_text("# who may call the gateway\n" + "\n".join(tokens) + "\n")
    return path


async def _echo(url: str, text: str = "hello", **credentials: Any) -> str:
    async with official_client(url, **credentials) as client:
        result = await client.call_tool("echo", {"text": text})
        return str(result.content[0].text)  # type: ignore[union-attr]


def _run(coroutine: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, WAIT))


def test_a_front_with_static_tokens_lets_a_holder_in_and_tells_everyone_else_how_to_authorize(tmp_path: Path) -> None:
    """Issue 31 / MCP authorization ("Access Token Usage", RFC 9728 §5.1): with `--auth tokens:FILE`
    the official client holding a token calls a tool; no token is 401 with `resource_metadata` and no
    error code (RFC 6750 §3.1), a wrong one 401 `invalid_token`; `/metrics` is closed, `/health` and
    the metadata open; the token shows in no output."""
    tokens = _tokens_file(tmp_path, FRONT_TOKEN, "a-second-token-of-the-file-0000")
    with http_gateway(tmp_path, "--auth", f"tokens:{tokens}", upstream=SDK_UPSTREAM, env=gateway_vars(tmp_path)) as gw:
        assert _run(_echo(gw.url, token=FRONT_TOKEN)) == "hello"
        with httpx.Client(timeout=WAIT) as http:
            missing = http.post(gw.url, json=INITIALIZE, headers=HEADERS)
            wrong = http.post(gw.url, json=INITIALIZE, headers={**HEADERS, "Authorization": "Bearer not-a-token-of-it"})
            basic = http.post(gw.url, json=INITIALIZE, headers={**HEADERS, "Authorization": "Basic dXNlcjpwYXNz"})
            metrics = http.get(gw.url.replace("/mcp", "/metrics"))
            health = http.get(gw.url.replace("/mcp", "/health"))
            metadata = http.get(gw.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"))
        gw.process.terminate()
        assert gw.process.stderr is not None
        stderr = gw.process.stderr.read().decode()
    for refused in (missing, wrong, basic, metrics):
        assert refused.status_code == CanonicalError.UNAUTHORIZED.http_status, refused.text
        assert refused.json()["error"]["code"] == CanonicalError.UNAUTHORIZED.mcp_code
    assert _challenge(missing) == {
        "resource_metadata": f"{gw.url.replace('/mcp', '')}/.well-known/oauth-protected-resource/mcp"
    }
    assert _challenge(wrong)["error"] == "invalid_token" and "error" not in _challenge(basic)
    assert health.status_code == 200 and metadata.status_code == 200
    assert metadata.json() == {"resource": gw.url, "bearer_methods_supported": ["header"]}
    assert_never_shown(FRONT_TOKEN, tmp_path, stderr)


def _forged(issuer: str, audience: str) -> str:
    """A token shaped like the issuer's (its key id, its claims) but signed with another key."""
    key = RSAKey.generate_key(2048, parameters={"kid": "test-as-1"})
    now = int(time.time())
    claims = {"iss": issuer, "aud": audience, "exp": now + 300, "iat": now, "scope": "mcp tools:admin"}
    return jwt.encode({"alg": "RS256", "kid": "test-as-1"}, claims, key)


def test_a_jwt_front_refuses_forged_expired_wrong_audience_and_missing_tokens_each_as_specified(tmp_path: Path) -> None:
    """Issue 31 / RFC 6750 §3.1 / MCP authorization ("Token Audience Binding", "Scope Challenge
    Handling"): `--auth jwt:ISSUER` takes a token of that issuer for the gateway's own resource URL;
    forged, expired and wrong-audience tokens are 401 `invalid_token`, none is 401 without an error;
    a tool whose `scopes` the token lacks is 403 `insufficient_scope` naming them."""
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"tools": {"add": {"scopes": ["tools:admin"]}}}))
    with authorization_server(tmp_path) as issuer:
        options = ["--auth", f"jwt:{issuer}", "--config", str(config)]
        with http_gateway(tmp_path, *options, upstream=SDK_UPSTREAM, env=gateway_vars(tmp_path)) as gw:
            good = mint(issuer, aud=gw.url, scope="mcp")
            admin = mint(issuer, aud=gw.url, scope="mcp tools:admin")
            tokens = {
                "forged": _forged(issuer, gw.url),
                "expired": mint(issuer, -600, aud=gw.url, scope="mcp"),
                "wrong audience": mint(issuer, aud="http://127.0.0.1:9/mcp", scope="mcp"),
                "missing": None,
            }
            assert _run(_echo(gw.url, token=good)) == "hello"
            refused = {}
            with httpx.Client(timeout=WAIT) as http:
                for name, token in tokens.items():
                    headers = HEADERS if token is None else {**HEADERS, "Authorization": f"Bearer {token}"}
                    refused[name] = http.post(gw.url, json=INITIALIZE, headers=headers)
            scoped = _run(_call_add(gw.url, good)), _run(_call_add(gw.url, admin))
    for name, response in refused.items():
        assert response.status_code == CanonicalError.UNAUTHORIZED.http_status, name
        assert _challenge(response).get("error") == (None if name == "missing" else "invalid_token"), name
        assert _challenge(response)["resource_metadata"].endswith("/.well-known/oauth-protected-resource/mcp")
    lacking, allowed = scoped
    assert lacking[0] == CanonicalError.INSUFFICIENT_SCOPE.http_status
    assert lacking[1]["error"] == "insufficient_scope" and "tools:admin" in lacking[1]["scope"].split()
    assert allowed == (200, {}, 3)


async def _call_add(url: str, token: str) -> tuple[int, dict[str, str], int | None]:
    """``tools/call add`` with ``token`` on a raw session: the status, the challenge, the sum."""
    headers = {**HEADERS, "Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(timeout=WAIT) as http:
        opened = await http.post(url, json=INITIALIZE, headers=headers)
        session = {**headers, "Mcp-Session-Id": opened.headers["mcp-session-id"]}
        await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        called = await http.post(
            url, json=rpc(1, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}), headers=session
        )
    if called.status_code != 200:
        return called.status_code, _challenge(called), None
    return 200, {}, body_of(called)["result"]["structuredContent"]["total"]


def test_the_official_client_with_its_oauth_provider_authorizes_at_a_jwt_front_and_calls_a_tool(tmp_path: Path) -> None:
    """Issue 31 / MCP authorization (the whole flow): from the gateway's 401 the official client finds
    its protected resource metadata, the authorization server's, registers, is sent through the
    (real HTTP) browser, gets a token for the gateway's resource (RFC 8707) and calls a tool."""
    with authorization_server(tmp_path) as issuer:
        options = ["--auth", f"jwt:{issuer}"]
        with http_gateway(tmp_path, *options, upstream=SDK_UPSTREAM, env=gateway_vars(tmp_path)) as gw:
            metadata = httpx.get(gw.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"), timeout=WAIT)
            provider, storage = oauth_provider(gw.url)
            assert _run(_echo(gw.url, "authorized", auth=provider)) == "authorized"
    assert metadata.json()["authorization_servers"] == [issuer]
    assert storage.tokens is not None
    assert _claims_of(storage.tokens.access_token)["aud"] == gw.url  # asked for the gateway's resource


def _claims_of(token: str) -> dict[str, Any]:
    """A JWT's claims, read without checking it (what the client was given, not whether it is good)."""
    payload = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


def test_a_token_the_front_checked_never_reaches_the_upstream(tmp_path: Path) -> None:
    """Issue 31 / MCP authorization ("Token Passthrough" is forbidden): the client's token is the
    gateway's own; the upstream receives only the credential of its own configuration."""
    seen = tmp_path / "seen.tokens"
    tokens = _tokens_file(tmp_path, FRONT_TOKEN)
    with protected_upstream(tmp_path, "--token", UPSTREAM_TOKEN, "--seen", str(seen)) as upstream:
        options = ["--upstream", upstream, "--auth", f"tokens:{tokens}", "--header", "Authorization: Bearer ${UP}"]
        with http_gateway(tmp_path, *options, env=gateway_vars(tmp_path, UP=UPSTREAM_TOKEN)) as gw:
            assert _run(_echo(gw.url, "relayed", token=FRONT_TOKEN)) == "relayed"
    presented = set(seen.read_text().split())
    assert presented == {UPSTREAM_TOKEN}


def test_serve_over_http_checks_tokens_on_mcp_and_its_rest_face_and_leaves_health_open(tmp_path: Path) -> None:
    """Issue 31: `serve --http --auth tokens:FILE`: `/mcp`, `/tools` and `/execute` need the token
    (401 and the challenge without it), `/health` and the metadata do not; the official client with
    the token lists the tools."""
    tokens = _tokens_file(tmp_path, FRONT_TOKEN)
    with serving(tmp_path, ["--http", "127.0.0.1:0", "--auth", f"tokens:{tokens}"]) as server:
        url = server.address
        base = url.removesuffix("/mcp")

        async def listed() -> list[str]:
            async with official_client(url, token=FRONT_TOKEN) as client:
                return [tool.name for tool in (await client.list_tools()).tools]

        names = _run(listed())
        with httpx.Client(timeout=WAIT) as http:
            refused = [
                http.post(url, json=INITIALIZE, headers=HEADERS),
                http.get(f"{base}/tools"),
                http.post(f"{base}/execute", json={}),
            ]
            allowed = http.get(f"{base}/tools", headers={"Authorization": f"Bearer {FRONT_TOKEN}"})
            health = http.get(f"{base}/health")
            metadata = http.get(f"{base}/.well-known/oauth-protected-resource/mcp")
        stderr = server.stderr()
    assert "validate_tool_output" in names or names
    for response in refused:
        assert response.status_code == CanonicalError.UNAUTHORIZED.http_status
        assert _challenge(response)["resource_metadata"] == f"{base}/.well-known/oauth-protected-resource/mcp"
    assert allowed.status_code == 200 and health.status_code == 200
    assert metadata.json()["resource"] == url
    assert FRONT_TOKEN not in stderr


@pytest.mark.parametrize(
    "args",
    [
        ["gateway", "--listen", "http://0.0.0.0:0/mcp", "--", "true"],
        ["gateway", "--listen", "http://[::]:0/mcp", "--", "true"],
        ["serve", "--http", "0.0.0.0:0"],
    ],
)
def test_listening_where_other_hosts_reach_with_no_authentication_exits_2(tmp_path: Path, args: list[str]) -> None:
    """Issue 31 (no open door by default): a front on a non-loopback address with no `--auth` refuses
    to start, saying how to configure one or to pass `--allow-unauthenticated`."""
    done = cli(tmp_path, *args)
    assert done.returncode == 2, done.stderr
    assert "reason=setup_failed" in done.stderr and "--auth" in done.stderr
    assert "--allow-unauthenticated" in done.stderr and "Traceback" not in done.stderr


def test_the_image_environment_binding_every_address_needs_authentication_too(tmp_path: Path) -> None:
    """Issue 31 / Dockerfile: `MCP_ENDPOINT=http` with `MCP_HTTP_HOST=0.0.0.0` (the image's) is refused
    like the flag; `MCP_AUTH` is the flag's variable."""
    env = {"MCP_ENDPOINT": "http", "MCP_HTTP_HOST": "0.0.0.0", "MCP_HTTP_PORT": "0"}
    done = cli(tmp_path, "serve", env=_env(tmp_path, **env))
    assert done.returncode == 2 and "MCP_ALLOW_UNAUTHENTICATED=1" in done.stderr
    missing = cli(tmp_path, "serve", env=_env(tmp_path, **env, MCP_AUTH=f"tokens:{tmp_path / 'absent'}"))
    assert missing.returncode == 2 and "absent" in missing.stderr  # MCP_AUTH was read: its file is missing


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    from ..conftest import server_env

    return server_env(tmp_path, **extra)


def test_the_open_door_rule_knows_loopback_from_every_other_address() -> None:
    """Issue 31: loopback names and addresses pass unauthenticated; any other address needs `--auth`
    or `--allow-unauthenticated`."""
    from mcp_server.execution.access import refuse_open_door

    for host in ("127.0.0.1", "127.0.0.2", "localhost", "[::1]"):
        refuse_open_door(host, authenticated=False, allowed=False, flag="--listen")
    for host in ("0.0.0.0", "[::]", "192.0.2.7", "gateway.example"):
        refuse_open_door(host, authenticated=True, allowed=False, flag="--listen")
        refuse_open_door(host, authenticated=False, allowed=True, flag="--listen")
        with pytest.raises(Exception, match="--allow-unauthenticated"):
            refuse_open_door(host, authenticated=False, allowed=False, flag="--listen")


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        ("bogus", "--auth must be"),
        ("jwt:not-a-url", "--auth must be"),
        ("tokens:{absent}", "absent.tokens"),
        ("tokens:{empty}", "no token in the file"),
        ("tokens:{short}", "shorter than 16"),
        ("passthrough", "give --upstream URL"),
    ],
)
def test_an_auth_setting_that_cannot_work_exits_2_naming_it(tmp_path: Path, spec: str, named: str) -> None:
    """Issue 31 / brief (bad input gets a clear error): an unknown form, a tokens file absent, empty or
    with a guessable token, passthrough without an HTTP upstream: exit 2 before anything listens."""
    (tmp_path / "empty.tokens").write_text("# none\n\n")
    (tmp_path / "short.tokens").write_text("short\n")
    files = {
        "absent": tmp_path / "absent.tokens",
        "empty": tmp_path / "empty.tokens",
        "short": tmp_path / "short.tokens",
    }
    done = cli(tmp_path, "gateway", "--listen", "http://127.0.0.1:0/mcp", "--auth", spec.format(**files), "--", "true")
    assert done.returncode == 2, done.stderr
    assert "reason=setup_failed" in done.stderr and named in done.stderr and "Traceback" not in done.stderr


def test_in_passthrough_the_official_client_authorizes_with_the_upstreams_server_through_the_gateway(
    tmp_path: Path,
) -> None:
    """Issue 31 (passthrough, chosen by the operator): the upstream's 401 comes back with its
    `WWW-Authenticate` pointing to the gateway's own protected resource metadata, which names the
    gateway's resource and the upstream's authorization server; the official client with its OAuth
    provider authorizes there and calls a tool, its token going upstream."""
    seen = tmp_path / "seen.tokens"
    port = free_port()
    front = f"http://127.0.0.1:{port}/mcp"
    with authorization_server(tmp_path) as issuer:
        accepted = ["--audience", front]  # the upstream takes tokens issued for its public face
        with protected_upstream(tmp_path, "--issuer", issuer.rstrip("/"), *accepted, "--seen", str(seen)) as upstream:
            options = ["--listen", front, "--upstream", upstream, "--auth", "passthrough"]
            with http_gateway(tmp_path, *options, env=gateway_vars(tmp_path)) as gw:
                challenged = httpx.post(gw.url, json=INITIALIZE, headers=HEADERS, timeout=WAIT)
                metadata = httpx.get(_challenge(challenged)["resource_metadata"], timeout=WAIT)
                provider, storage = oauth_provider(gw.url)
                assert _run(_echo(gw.url, "passed through", auth=provider)) == "passed through"
    assert challenged.status_code == CanonicalError.UNAUTHORIZED.http_status
    assert (
        _challenge(challenged)["resource_metadata"]
        == f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
    )
    assert metadata.json()["resource"] == front and metadata.json()["authorization_servers"] == [issuer]
    assert storage.tokens is not None and storage.tokens.access_token in seen.read_text().split()


def test_an_auth_resource_that_is_no_url_exits_2(tmp_path: Path) -> None:
    """Issue 31 / brief (bad input gets a clear error): `--auth-resource` must be the URL clients use."""
    tokens = _tokens_file(tmp_path, FRONT_TOKEN)
    options = ["--auth", f"tokens:{tokens}", "--auth-resource", "mcp.example.com/mcp"]
    done = cli(tmp_path, "gateway", "--listen", "http://127.0.0.1:0/mcp", *options, "--", "true")
    assert done.returncode == 2 and "--auth-resource must be" in done.stderr and "Traceback" not in done.stderr
