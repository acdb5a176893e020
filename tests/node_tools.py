"""npm packages the tests run for real, installed on first use into `.cache/node/` (git-ignored).

A test that needs one skips with a clear message only when npm itself is absent.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PREFIX = ROOT / ".cache" / "node"
SERVER_EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"


def npm_bin(package: str, binary: str) -> Path:
    """The installed binary of ``package`` (pinned spec), installing it once."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(f"npm is not installed: cannot install {package} from the npm registry")
    path = PREFIX / "node_modules" / ".bin" / binary
    if not path.exists():
        PREFIX.mkdir(parents=True, exist_ok=True)
        result = subprocess.run(
            [npm, "install", "--prefix", str(PREFIX), "--no-audit", "--no-fund", "--silent", package],
            capture_output=True,
            timeout=600,
        )
        assert result.returncode == 0, f"npm install {package} failed: {result.stderr.decode()[-2000:]}"
    assert path.exists(), f"{package} installed no {binary}"
    return path
