"""What a gateway does before its first frame (issue 34: a client's connect through the gateway
within 0.1 s of the same connect direct): nothing a run does not use is imported or built at start,
and the upstream is started before the gateway's own loading, not after it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ..conftest import server_env

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
