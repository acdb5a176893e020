"""An HTTP upstream that needs a token (issue 31): credentials from the upstream's own configuration
(`--header`, the configuration's `headers`, from the environment or a file), never shown; a refusal
of the credentials is a clear error at once, to the client and in `doctor`; `wrap` carries a remote
entry's headers. The upstream is the `mcp` SDK's MCPServer with its own bearer auth; the client the
official SDK client.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from mcp_server.core.errors import CanonicalError

from ..conftest import cli
from .authorization import (
    WAIT,
    assert_never_shown,
    gateway_env,
    gateway_vars,
    protected_upstream,
    refused_with,
    stdio_client,
)
from .gateways import HEADERS, body_of, http_gateway, rpc

PLANTED = "planted-upstream-token-5f2c9a71d3"
CLIENT_INFO = {"name": "raw", "version": "1"}
INITIALIZE = rpc(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT_INFO})


async def _echo(client_factory: object, text: str) -> str:
    async with client_factory as client:  # type: ignore[attr-defined]
        result = await client.call_tool("echo", {"text": text})
        return str(result.content[0].text)


def test_a_header_from_the_environment_carries_the_upstreams_token_and_is_never_shown(tmp_path: Path) -> None:
    """Issue 31: `--header 'Authorization: Bearer ${VAR}'` reaches the upstream (the official client's
    call is answered), and the token is in no output: stderr, event log, report, its page, ready file."""
    with protected_upstream(tmp_path, "--token", PLANTED) as url:
        options = ["--upstream", url, "--header", "Authorization: Bearer ${UPSTREAM_TOKEN}"]
        env = gateway_env(tmp_path, UPSTREAM_TOKEN=PLANTED, MCP_LOG_LEVEL="debug")
        client = stdio_client(tmp_path, options, env)
        assert asyncio.run(asyncio.wait_for(_echo(client, "through"), WAIT)) == "through"
    assert (tmp_path / "gateway.stderr").read_text()  # there was output to search
    assert_never_shown(PLANTED, tmp_path)


def test_a_header_from_a_file_named_in_the_configuration_reaches_an_http_upstream(tmp_path: Path) -> None:
    """Issue 31: the configuration's `headers`, a value read from a file beside it (`${file:...}`), on
    the gateway's HTTP front; the token shows nowhere, the ready line included."""
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "upstream.token").write_text(PLANTED + "\n")
    config = tmp_path / "gateway.toml"
    config.write_text('[headers]\nAuthorization = "Bearer ${file:secrets/upstream.token}"\n')
    with protected_upstream(tmp_path, "--token", PLANTED) as url:
        options = ["--upstream", url, "--config", str(config)]
        with http_gateway(tmp_path, *options, env=gateway_vars(tmp_path)) as front:
            opened = httpx.post(front.url, json=INITIALIZE, headers=HEADERS, timeout=WAIT)
            assert opened.status_code == 200 and "result" in body_of(opened), opened.text
            front.process.terminate()
            assert front.process.stderr is not None
            stderr = front.process.stderr.read().decode()
    assert_never_shown(PLANTED, tmp_path, stderr)


@pytest.mark.parametrize("front", ["stdio", "http"])
def test_a_refused_token_is_the_servers_challenge_at_once_not_a_time_out(tmp_path: Path, front: str) -> None:
    """Issue 31: the upstream's 401 answers the request that drew it with `upstream_unauthorized`,
    naming the `WWW-Authenticate` challenge (its resource metadata URL), never a time-out; over HTTP
    as a JSON-RPC error (the gateway asked for nothing), and the wrong token shows nowhere."""
    wrong = "a-wrong-token-that-is-planted-0123"
    with protected_upstream(tmp_path, "--token", PLANTED) as url:
        options = ["--upstream", url, "--header", f"Authorization: Bearer {wrong}"]
        if front == "stdio":
            client = stdio_client(tmp_path, options, gateway_env(tmp_path))
            refused = refused_with(lambda: asyncio.run(asyncio.wait_for(_echo(client, "x"), WAIT)))
            code, data = refused.error.code, refused.error.data
        else:
            with http_gateway(tmp_path, *options, env=gateway_vars(tmp_path)) as gateway:
                answer = httpx.post(gateway.url, json=INITIALIZE, headers=HEADERS, timeout=WAIT)
                assert answer.status_code == 200, answer.text
                code, data = body_of(answer)["error"]["code"], body_of(answer)["error"]["data"]
    assert code == CanonicalError.UPSTREAM_UNAUTHORIZED.mcp_code
    assert data["status"] == 401 and "resource_metadata=" in data["challenge"]
    assert data["errors"][0]["msg"].startswith("the server requires authorization: Bearer ")
    assert_never_shown(wrong, tmp_path)


def test_doctor_says_the_server_requires_authorization_once_and_at_once(tmp_path: Path) -> None:
    """Issue 31: `doctor` in front of a server that wants a token it was not given stops at the first
    version with "the server requires authorization: <challenge>" and what to do (exit 1), instead of
    a time-out per version; with the token it is ok."""
    with protected_upstream(tmp_path, "--token", PLANTED) as url:
        refused = cli(tmp_path, "doctor", "--upstream", url, env=gateway_env(tmp_path), wait=WAIT)
        found = cli(tmp_path, "doctor", "--format", "json", "--upstream", url, env=gateway_env(tmp_path), wait=WAIT)
        given = cli(
            tmp_path,
            "doctor",
            "--upstream",
            url,
            "--header",
            "Authorization: Bearer ${T}",
            env=gateway_env(tmp_path, T=PLANTED),
            wait=WAIT,
        )
    assert refused.returncode == 1, refused.stdout + refused.stderr
    versions = refused.stdout.splitlines()[1]
    assert versions.count(";") == 0 and "the server requires authorization: Bearer " in versions
    assert "mcp-server login" in refused.stdout.splitlines()[-1] and "Traceback" not in refused.stderr
    document = json.loads(found.stdout)
    assert len(document["versions"]) == 1 and document["unauthorized"].startswith("the server requires authorization")
    assert given.returncode == 0, given.stdout + given.stderr
    assert_never_shown(PLANTED, tmp_path, given.stdout, given.stderr)


@pytest.mark.parametrize(
    ("header", "env", "named"),
    [
        ("Authorization: Bearer ${UNSET_TOKEN}", {}, "${UNSET_TOKEN} is not set"),
        ("Authorization: Bearer ${file:absent.token}", {}, "absent.token"),
        ("no colon here", {}, "--header must be 'Name: value'"),
        ("Bad Name: x", {}, "--header must be 'Name: value'"),
        ("Mcp-Session-Id: mine", {}, "the gateway sets it itself"),
        ("Authorization: Bearer ${T}", {"T": "two\nlines-planted-secret"}, "line break"),
    ],
)
def test_a_header_that_cannot_be_read_exits_2_naming_it_not_its_value(
    tmp_path: Path, header: str, env: dict[str, str], named: str
) -> None:
    """Issue 31 / brief (bad input gets a clear error): a variable not set, a file not there, a header
    that is no `Name: value`, one the gateway writes itself, a value of two lines: exit 2, one line
    naming what is wrong, no traceback, no value."""
    done = cli(
        tmp_path,
        "gateway",
        "--upstream",
        "http://127.0.0.1:9/mcp",
        "--header",
        header,
        env=gateway_env(tmp_path, **env),
    )
    assert done.returncode == 2, done.stderr
    assert "reason=setup_failed" in done.stderr and named in done.stderr
    assert "Traceback" not in done.stderr and "lines-planted-secret" not in done.stderr + done.stdout


def test_a_header_for_a_command_upstream_exits_2(tmp_path: Path) -> None:
    """Issue 31: headers are for an HTTP upstream; given with a command they are refused, not ignored."""
    done = cli(tmp_path, "gateway", "--header", "X-Key: v", "--", "true", env=gateway_env(tmp_path))
    assert done.returncode == 2 and "for an HTTP upstream" in done.stderr


def test_wrap_carries_a_remote_entrys_headers_with_the_credential_out_of_the_arguments(tmp_path: Path) -> None:
    """Issue 31 (was: left alone): `wrap` puts a remote entry with `headers` behind the gateway; a
    literal value moves to the entry's `env` (never in the process's arguments), one naming a variable
    stays; the wrapped entry, started as a client would, reaches the upstream with the token."""
    config = tmp_path / "mcp.json"
    with protected_upstream(tmp_path, "--token", PLANTED) as url:
        headers = {"Authorization": f"Bearer {PLANTED}", "X-Tenant": "${TENANT}"}
        entries = {"remote": {"type": "http", "url": url, "headers": headers}, "old": {"type": "sse", "url": url}}
        config.write_text(json.dumps({"servers": entries}))
        done = cli(tmp_path, "wrap", str(config), "--gateway-command", "mcp-server")
        assert done.returncode == 0, done.stderr
        wrapped = json.loads(config.read_text())["servers"]
        assert wrapped["old"] == entries["old"]  # legacy SSE: still left alone
        remote = wrapped["remote"]
        assert PLANTED not in " ".join(remote["args"]) and "X-Tenant: ${TENANT}" in remote["args"]
        assert remote["env"]["MCP_HEADER_AUTHORIZATION"] == f"Bearer {PLANTED}"
        # As the client starts it: the entry's command line (this checkout's gateway) and its env.
        options = remote["args"][1:]
        variables = {k: v for k, v in remote["env"].items() if k != "MCP_RUNS_DIR"}  # the test's runs instead
        env = gateway_env(tmp_path, TENANT="t1", **variables)
        assert asyncio.run(asyncio.wait_for(_echo(stdio_client(tmp_path, options, env), "wrapped"), WAIT)) == "wrapped"
