"""The package surface: __all__, __version__, and the image's static properties."""

from __future__ import annotations

import re
from pathlib import Path

import mcp_server

ROOT = Path(__file__).resolve().parent.parent


def test_all_names_exist_and_are_sorted() -> None:
    """STYLE (httpx): `__all__` in the package root, checked by a test."""
    assert sorted(mcp_server.__all__) == mcp_server.__all__
    for name in mcp_server.__all__:
        assert hasattr(mcp_server, name), name


def test_version_is_the_one_in_pyproject() -> None:
    """Issue 2 §1: `mcp_server.__version__`."""
    declared = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert declared is not None and declared.group(1) == mcp_server.__version__


def test_only_the_json_module_imports_the_json_library() -> None:
    """STYLE: all JSON goes through one small module; nothing else imports orjson or json."""
    pattern = re.compile(r"^\s*(import (orjson|json)\b|from (orjson|json) import)", re.M)
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "mcp_server").rglob("*.py")
        if path.name != "jsonio.py" and pattern.search(path.read_text())
    ]
    assert offenders == []


def test_the_image_runs_as_a_non_root_user_with_no_secrets() -> None:
    """Issue 4 (Dockerfile): non-root USER, entrypoint, EXPOSE, no secrets; checked statically."""
    text = (ROOT / "Dockerfile").read_text()
    users = re.findall(r"^USER\s+(\S+)", text, re.M)
    assert users and users[-1] not in ("root", "0")
    assert re.search(r'^ENTRYPOINT \["mcp-server"\]', text, re.M)
    assert re.search(r"^EXPOSE \d+", text, re.M)
    assert text.count("FROM ") >= 2
    assert not re.search(r"(?i)(password|secret|token|api[_-]?key)\s*=", text)
