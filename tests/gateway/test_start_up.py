"""What a gateway does before its first frame (issue 34: a client's connect through the gateway
within 0.1 s of the same connect direct): nothing a run does not use is imported or built at start,
and the upstream is started before the gateway's own loading, not after it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from ..conftest import server_env
from ..processes import alive, wait_gone
from .gateways import SDK_UPSTREAM, WAIT, Peer, handshake

# The SDK server, once it has written its pid to the file named first (then the same process runs it).
_STARTED = (
    "import os, sys; open(sys.argv[1], 'w').write(str(os.getpid()));"
    " os.execv(sys.executable, [sys.executable, *sys.argv[2:]])"
)

# A gateway's start-up in front of an HTTP upstream, as `mcp-server gateway --upstream URL` runs it up
# to its first frame, then what it imported.
_PREPARED = """
import os, sys
from mcp_server.core.settings import Settings
from mcp_server.gateway import startup
environ = dict(os.environ)
gateway = startup.prepare(Settings.from_env(environ), environ, None, upstream_url=sys.argv[1], command=[])
sdk = sorted(name for name in sys.modules if name == "mcp" or name.startswith(("mcp.", "pydantic")))
print(gateway.login is not None, sdk)
"""


def test_a_gateway_before_an_http_upstream_starts_without_the_sdks_oauth_client(tmp_path: Path) -> None:
    """Issue 34: the SDK's OAuth client (0.4 s to import) waits for the upstream's first refusal;
    the login is still configured (issue 31's flow runs on a 401, tests/gateway/test_upstream_login.py)."""
    env = server_env(tmp_path, MCP_OAUTH_DIR=str(tmp_path / "oauth"))
    probe = [sys.executable, "-c", _PREPARED, "http://127.0.0.1:9/mcp"]
    result = subprocess.run(probe, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split(None, 1) == ["True", "[]\n"]


def _started_upstream(tmp_path: Path) -> tuple[list[str], Path]:
    marker = tmp_path / "upstream.pid"
    return [sys.executable, "-c", _STARTED, str(marker), *SDK_UPSTREAM[1:]], marker


def _wait_for(marker: Path, peer: Peer) -> str:
    """The upstream's pid, once it has started (the gateway still waiting for its configuration)."""
    deadline = time.monotonic() + WAIT
    while not (marker.exists() and marker.read_text()):
        assert peer.process.poll() is None and time.monotonic() < deadline, "the upstream never started"
        time.sleep(0.02)
    return marker.read_text()


def test_the_upstream_starts_before_the_gateway_reads_its_configuration(tmp_path: Path) -> None:
    """Issue 34: the upstream boots while the gateway loads (its configuration here a pipe that stays
    empty until the upstream runs), and the session then runs through it as before."""
    config = tmp_path / "gateway.json"
    os.mkfifo(config)
    upstream, marker = _started_upstream(tmp_path)
    peer = Peer(tmp_path, "--config", str(config), upstream=upstream)
    try:
        pid = _wait_for(marker, peer)
        config.write_text('{"mode": "enforce"}')  # the gateway reads it now
        assert handshake(peer, "2025-11-25")["result"]["protocolVersion"] == "2025-11-25"
        assert peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"]["tools"]
        assert alive(pid)
    finally:
        status, stderr = peer.finish()
    assert status == 0, stderr
    wait_gone(pid)


def test_an_upstream_started_for_a_gateway_its_configuration_refuses_is_ended(tmp_path: Path) -> None:
    """Issue 34 (and the gateway's promise that a stopped run leaves no upstream behind): a setup
    error after the upstream started ends it, with the usual setup error and exit 2."""
    config = tmp_path / "gateway.json"
    os.mkfifo(config)
    upstream, marker = _started_upstream(tmp_path)
    peer = Peer(tmp_path, "--config", str(config), upstream=upstream)
    pid = _wait_for(marker, peer)
    config.write_text('{"mode": "loud"}')
    status, stderr = peer.finish()
    assert status == 2 and "mcp:error reason=setup_failed" in stderr
    wait_gone(pid)
