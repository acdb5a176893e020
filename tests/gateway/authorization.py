"""What the authentication tests share (issue 31): the test authorization server and the protected
upstream as real processes on loopback, the test browser, the official client over STDIO through the
gateway, and the check that a planted secret shows in no output. Holds no test.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from ..conftest import ROOT, cli, server_env
from ..processes import free_port, running

WAIT = 60.0
AUTH_SERVER = [sys.executable, str(ROOT / "tests" / "upstreams" / "auth_server.py")]
PROTECTED = [sys.executable, str(ROOT / "tests" / "upstreams" / "protected_server.py")]
BROWSER = shlex.join([sys.executable, str(ROOT / "tests" / "upstreams" / "browser.py")])
GATEWAY = [sys.executable, "-m", "mcp_server", "gateway"]


@contextmanager
def protected_upstream(tmp_path: Path, *options: str) -> Iterator[str]:
    """``protected_server.py`` (``--token T`` or ``--issuer URL``, ...) until the block ends: its URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with running([*PROTECTED, str(port), *options], url, server_env(tmp_path)):
        yield url


@contextmanager
def authorization_server(tmp_path: Path, *options: str) -> Iterator[str]:
    """``auth_server.py`` until the block ends: its issuer identifier, as its metadata writes it (RFC
    8414 compares issuers as strings)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with running([*AUTH_SERVER, str(port), *options], f"{base}/jwks.json", server_env(tmp_path)):
        yield str(httpx.get(f"{base}/.well-known/oauth-authorization-server", timeout=WAIT).json()["issuer"])


def mint(issuer: str, seconds: int = 300, **claims: Any) -> str:
    """A token of the test authorization server with these claims (an audience, a scope, an expiry)."""
    asked = {"claims": claims, "seconds": seconds}
    response = httpx.post(f"{issuer.rstrip('/')}/testing/mint", json=asked, timeout=WAIT)
    return str(response.raise_for_status().json()["token"])


def gateway_vars(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The gateway's own variables: its tokens under ``tmp_path``, the test browser, ``extra``."""
    return {"MCP_OAUTH_DIR": str(tmp_path / "oauth"), "BROWSER": BROWSER, **extra}


def gateway_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The gateway's whole environment: its runs under ``tmp_path`` and ``gateway_vars``."""
    return server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"), **gateway_vars(tmp_path, **extra))


def stdio_client(tmp_path: Path, options: Sequence[str], env: dict[str, str], **client: Any) -> Client:
    """The official client over STDIO with ``mcp-server gateway OPTIONS``; the gateway's stderr kept
    in ``tmp_path/gateway.stderr`` (appended, run after run)."""
    stderr = tmp_path / "gateway.stderr"
    command = f"exec {shlex.join([*GATEWAY, *options])} 2>>{shlex.quote(str(stderr))}"
    parameters = StdioServerParameters(command="sh", args=["-c", command], env=env)
    return Client(parameters, mode="legacy", read_timeout_seconds=WAIT, **client)


def assert_never_shown(secret: str, tmp_path: Path, *outputs: str) -> None:
    """Issue 31: ``secret`` is in none of ``outputs`` and no file under ``tmp_path`` (event logs,
    reports, stderr kept, ready files), nor in the HTML page of any report written there. Where it
    belongs is left out: ``secrets/`` (what the test gave) and ``oauth/`` (the 0600 token files)."""
    assert len(secret) >= 8
    for report in tmp_path.rglob("*-report.json"):
        page = report.with_suffix(".html")
        done = cli(tmp_path, "report", str(report), "--html", str(page))
        assert done.returncode == 0, done.stderr
    found = [
        str(path.relative_to(tmp_path))
        for path in tmp_path.rglob("*")
        if path.is_file() and secret.encode() in path.read_bytes() and path.parent.name not in ("oauth", "secrets")
    ]
    assert found == [], found
    assert not [output for output in outputs if secret in output]


def refused_with(run: Callable[[], object]) -> MCPError:
    """The ``MCPError`` that ``run()`` ended with (the SDK client raises it inside exception groups)."""
    try:
        run()
    except BaseException as exc:
        found: BaseException | None = exc
        while isinstance(found, BaseExceptionGroup):
            found = found.exceptions[0]
        if isinstance(found, MCPError):
            return found
        raise
    raise AssertionError("no MCPError: the request was answered")
