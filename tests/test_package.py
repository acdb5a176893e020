"""The package surface: __all__, __version__, and the image's static properties."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import mcp_server

ROOT = Path(__file__).resolve().parent.parent


def documented_surface() -> dict[str, list[str]]:
    """The library guide's "public surface" block: module → the names it offers."""
    text = (ROOT / "docs" / "library.md").read_text()
    block = text.split("## The public surface", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    return {module: names.split() for module, names in (line.split(":", 1) for line in block.splitlines())}


@pytest.mark.parametrize("module", ["mcp_server", "mcp_server.validation", "mcp_server.testing"])
def test_each_public_module_offers_exactly_its_documented_names(module: str) -> None:
    """Issue 20 (httpx): `__all__` of a public module equals the documented surface, sorted, and each
    name is there."""
    imported = importlib.import_module(module)
    assert imported.__all__ == documented_surface()[module] == sorted(imported.__all__)
    for name in imported.__all__:
        assert getattr(imported, name) is not None, name


def test_the_import_layers_hold() -> None:
    """Issue 20: each part imports only the parts below it; a transport moves bytes (import-linter
    contracts in pyproject.toml)."""
    linter = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run([str(linter)], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "0 broken" in result.stdout


def test_no_module_imports_itself_back() -> None:
    """Issue 32: no import circle anywhere in the package, annotations included (the core's kinds
    are a leaf module that imports nothing, as Starlette's types.py)."""
    import grimp

    graph = grimp.build_graph("mcp_server")  # imports under TYPE_CHECKING count: a circle of annotations is one
    circles = sorted(
        f"{importer} -> {imported}"
        for importer in graph.modules
        for imported in graph.find_modules_directly_imported_by(importer)
        if imported.startswith("mcp_server") and graph.find_shortest_chain(importer=imported, imported=importer)
    )
    assert circles == []


def test_no_function_is_longer_than_60_lines() -> None:
    """Issue 20: a house others can live in (a function reads on one screen)."""
    long = []
    for path in (ROOT / "mcp_server").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno + 1 > 60:
                long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert long == []


_TEST_HELPERS = {"upstreams"}  # servers the tests start, not tests of a part


def test_the_tests_mirror_the_package() -> None:
    """Issue 20: a part's tests live in the folder of the same name, and every part has one;
    tests of the whole (golden logs, exactness, install, this file) stay at the top."""
    parts = {p.name for p in (ROOT / "mcp_server").iterdir() if (p / "__init__.py").exists()}
    folders = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders - _TEST_HELPERS == parts


def _imported_modules(path: Path) -> list[str]:
    """The modules ``path`` imports, relative ones resolved to their dotted names under `tests`."""
    package = ".".join(path.relative_to(ROOT).parent.parts)
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            module = node.module or ""
            found.append((f"{base}.{module}" if node.level else module).rstrip("."))
            found += [f"{found[-1]}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
    return found


def test_no_test_module_imports_another() -> None:
    """Issue 32: what tests share lives in modules that hold no test (`tests/processes.py`,
    `tests/gateway/gateways.py` ...), never in a test module another imports."""
    importing = sorted(
        f"{path.relative_to(ROOT)} imports {module}"
        for path in (ROOT / "tests").rglob("*.py")
        for module in _imported_modules(path)
        if module.rsplit(".", 1)[-1].startswith("test_")
    )
    assert importing == []


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


def test_the_image_builds_from_every_folder_the_package_is_built_from() -> None:
    """Issue 32: the image ships the schemas as the wheel does: its build stage copies the package,
    the top-level `schemas/` the build maps inside it, and the files pip needs; checked statically."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    setuptools = project["tool"]["setuptools"]
    needed = {"pyproject.toml", project["project"]["readme"]}
    needed |= {package.split(".")[0] for package in setuptools["packages"]} | set(setuptools["package-dir"].values())
    copied = {
        source.rstrip("/")
        for line in re.findall(r"^COPY (?!--from)(.+)$", (ROOT / "Dockerfile").read_text(), re.M)
        for source in line.split()[:-1]
    }
    assert needed == {"pyproject.toml", "README.md", "mcp_server", "schemas"} and needed <= copied
