"""The gateway as an OAuth client, for a STDIO client in front of a remote server (issue 31; MCP
authorization, the client's side): the official SDK's OAuth flow (protected resource and
authorization server metadata, dynamic registration, PKCE, the resource indicator, refresh), the
user's browser (here `tests/upstreams/browser.py`, a real HTTP client following the redirect), the
tokens in a 0600 file per upstream, and `mcp-server login` ahead of time.

The authorization server (`auth_server.py`, the SDK's server auth) and the upstream that asks it
about each token (`protected_server.py --issuer`) are real processes on loopback.
"""

from __future__ import annotations

import asyncio
import json
import stat
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcp_server.core.errors import CanonicalError

from ..conftest import ROOT, cli, server_env
from ..node_tools import CONFORMANCE, node_command
from .authorization import (
    WAIT,
    assert_never_shown,
    authorization_server,
    gateway_env,
    protected_upstream,
    refused_with,
    stdio_client,
)
from .conformance import run_client

NO_BROWSER = "false"  # a browser that opens nothing: a run that would need the user fails


async def _echo(client: Any, text: str) -> str:
    async with client:
        result = await client.call_tool("echo", {"text": text})
        return str(result.content[0].text)


def _call(tmp_path: Path, url: str, text: str, **env: str) -> str:
    client = stdio_client(tmp_path, ["--upstream", url], gateway_env(tmp_path, **env))
    return str(asyncio.run(asyncio.wait_for(_echo(client, text), WAIT)))


def _token_file(tmp_path: Path) -> Path:
    [found] = (tmp_path / "oauth").glob("*.json")
    return found


def _access_token(tmp_path: Path) -> str:
    return str(json.loads(_token_file(tmp_path).read_text())["tokens"]["access_token"])


def test_the_gateway_logs_in_through_the_browser_when_the_upstream_asks_and_keeps_the_token(tmp_path: Path) -> None:
    """Issue 31: a STDIO client's first call makes the upstream answer 401; the gateway runs the
    OAuth flow (registration, the browser, PKCE, a token for the upstream's resource), the call is
    answered; the tokens are in a file only its owner reads; the next run needs no browser."""
    with authorization_server(tmp_path) as issuer, protected_upstream(tmp_path, "--issuer", issuer.rstrip("/")) as url:
        assert _call(tmp_path, url, "first") == "first"
        assert "mcp:authorize" in (tmp_path / "gateway.stderr").read_text()  # the user was sent to the browser
        assert _call(tmp_path, url, "again", BROWSER=NO_BROWSER) == "again"
    token_file = _token_file(tmp_path)
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(token_file.parent.stat().st_mode) == 0o700
    stored = json.loads(token_file.read_text())
    assert stored["client"]["client_id"] and stored["tokens"]["refresh_token"]
    assert_never_shown(stored["tokens"]["access_token"], tmp_path)
    assert_never_shown(stored["tokens"]["refresh_token"], tmp_path)


def test_login_ahead_of_time_then_a_refused_token_is_refreshed_without_the_user(tmp_path: Path) -> None:
    """Issue 31: `mcp-server login` runs the flow before any client starts the gateway; `doctor`
    uses that login and never opens a browser; once the authorization server stops honouring the
    access token, the gateway refreshes it (no browser) and the call is answered."""
    with authorization_server(tmp_path) as issuer, protected_upstream(tmp_path, "--issuer", issuer.rstrip("/")) as url:
        before = cli(tmp_path, "doctor", "--upstream", url, env=gateway_env(tmp_path), wait=WAIT)
        logged = cli(tmp_path, "login", "--upstream", url, env=gateway_env(tmp_path), wait=WAIT)
        first = _access_token(tmp_path)
        checked = cli(tmp_path, "doctor", "--upstream", url, env=gateway_env(tmp_path, BROWSER=NO_BROWSER), wait=WAIT)
        assert _call(tmp_path, url, "logged in", BROWSER=NO_BROWSER) == "logged in"
        httpx.post(f"{issuer.rstrip('/')}/testing/revoke-access", timeout=WAIT).raise_for_status()
        assert _call(tmp_path, url, "refreshed", BROWSER=NO_BROWSER) == "refreshed"
        second = _access_token(tmp_path)
    assert before.returncode == 1 and "mcp:authorize" not in before.stderr  # doctor never asks the user
    assert "the server requires authorization" in before.stdout
    assert logged.returncode == 0 and "mcp:login" in logged.stderr, logged.stderr
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert second != first
    assert_never_shown(first, tmp_path, before.stdout, logged.stdout, checked.stdout)
    assert_never_shown(second, tmp_path)


def test_an_upstream_login_that_cannot_finish_is_the_challenge_not_a_hang(tmp_path: Path) -> None:
    """Issue 31: when the user cannot be sent to a browser (none here) and no token is stored, the
    request gets `upstream_unauthorized` with the upstream's challenge."""
    with authorization_server(tmp_path) as issuer, protected_upstream(tmp_path, "--issuer", issuer.rstrip("/")) as url:
        client = stdio_client(
            tmp_path,
            ["--upstream", url, "--config", str(_waiting(tmp_path))],
            gateway_env(tmp_path, BROWSER=NO_BROWSER),
        )
        refused = refused_with(lambda: asyncio.run(asyncio.wait_for(_echo(client, "x"), WAIT)))
    assert refused.error.code == CanonicalError.UPSTREAM_UNAUTHORIZED.mcp_code
    assert "resource_metadata=" in refused.error.data["challenge"]


def _waiting(tmp_path: Path) -> Path:
    """A configuration whose login waits a moment only for the user (none comes: no browser)."""
    config = tmp_path / "short-wait.toml"
    config.write_text("[oauth]\nwait_seconds = 1\n")
    return config


def test_login_with_nothing_to_log_in_to_exits_2(tmp_path: Path) -> None:
    """Issue 31 / brief (bad input gets a clear error): `login` when the configuration turns the
    login off (or names an Authorization header) says so, exit 2."""
    config = tmp_path / "off.toml"
    config.write_text("[oauth]\nenabled = false\n")
    done = cli(tmp_path, "login", "--upstream", "http://127.0.0.1:9/mcp", "--config", str(config))
    assert done.returncode == 2 and "nothing to log in with" in done.stderr and "Traceback" not in done.stderr


# The suite's authorization scenarios for a client (`conformance client --suite auth`), each run with
# the gateway as the OAuth client, and what it gets. `basic-cimd` warns: the gateway registers itself
# (or uses a configured client id) and publishes no client ID metadata document (an HTTPS URL of its
# own, which a gateway on a user's machine does not have; ADR 0028).
AUTH_SCENARIOS = {
    "auth/metadata-default": "pass",
    "auth/metadata-var1": "pass",
    "auth/metadata-var2": "pass",
    "auth/metadata-var3": "pass",
    "auth/basic-cimd": "warning",
    "auth/scope-from-www-authenticate": "pass",
    "auth/scope-from-scopes-supported": "pass",
    "auth/scope-omitted-when-undefined": "pass",
    "auth/scope-step-up": "pass",
    "auth/scope-retry-limit": "pass",
    "auth/token-endpoint-auth-basic": "pass",
    "auth/token-endpoint-auth-post": "pass",
    "auth/token-endpoint-auth-none": "pass",
    "auth/pre-registration": "pass",
}


@pytest.mark.conformance
@pytest.mark.slow
@pytest.mark.parametrize(("scenario", "expected"), AUTH_SCENARIOS.items(), ids=list(AUTH_SCENARIOS))
def test_the_conformance_suites_authorization_scenarios_pass_with_the_gateway_as_the_client(
    tmp_path: Path, scenario: str, expected: str
) -> None:
    """Issue 31: the official conformance suite's client authorization scenarios (discovery variants,
    scope selection and step-up, token endpoint authentication, pre-registration), the client being
    the official SDK client over STDIO with the gateway as the OAuth client in front of the suite's
    server; each scenario a test of its own (parallel workers share them out)."""
    suite = node_command(CONFORMANCE, "conformance")
    client = [sys.executable, str(ROOT / "tests" / "upstreams" / "conformance_auth_client.py")]
    out = tmp_path / scenario.replace("/", "-")
    assert run_client(suite, client, scenario, out, server_env(tmp_path)) == expected
