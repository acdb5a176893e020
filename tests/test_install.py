"""The package as a user installs it: a wheel built from the repository, in a fresh virtual environment."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, initialize_frame

WAIT = 600.0  # building the wheel and installing its dependencies from the package index


def _tracked_files(root: Path) -> list[Path]:
    """What a clean clone holds: git's tracked files (links included), else the tree without local state."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=False)
    if listed.returncode == 0 and listed.stdout:
        return [root / name for name in listed.stdout.decode().split("\0") if name]
    skip = {".git", ".venv", ".cache", "build", "runs", "__pycache__"}
    return [p for p in root.rglob("*") if not skip & set(p.relative_to(root).parts) and not p.is_dir()]


def _copy_source(destination: Path) -> Path:
    for path in _tracked_files(ROOT):
        target = destination / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink():
            target.symlink_to(os.readlink(path))
        elif path.is_file():
            shutil.copy2(path, target)
    return destination


def _clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_", "SYN_", "PYTHON"))}
    env["MCP_RUNS_DIR"] = str(tmp_path / "runs")
    env["MCP_READY_FILE"] = str(tmp_path / "ready")
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip install`` of the wheel built from this repository into a new venv: its ``bin`` folder."""
    work = tmp_path_factory.mktemp("install")
    source = _copy_source(work / "source")
    wheels = work / "wheels"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(source)],
        capture_output=True,
        timeout=WAIT,
        check=False,
    )
    assert built.returncode == 0, built.stderr.decode()[-2000:]
    [wheel] = wheels.glob("*.whl")
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=WAIT)
    pip = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", str(wheel)], capture_output=True, timeout=WAIT, check=False
    )
    assert pip.returncode == 0, pip.stderr.decode()[-2000:]
    return venv / "bin"


@pytest.mark.slow
def test_the_installed_wheel_carries_its_schemas_and_serves(installed: Path, tmp_path: Path) -> None:
    """Issue 18: `pip install .` (not editable) used to install a server that exits 2 with "no MCP
    schemas"; the official schemas are package data, so the installed server answers."""
    frames = [initialize_frame("2025-11-25", 1), {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    result = subprocess.run(
        [str(installed / "mcp-server"), "serve"],
        input=b"".join(json.dumps(frame).encode() + b"\n" for frame in frames),
        capture_output=True,
        cwd=tmp_path,
        env=_clean_env(tmp_path),
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()
    replies = [json.loads(line) for line in result.stdout.splitlines()]
    assert [reply["id"] for reply in replies] == [1, 2]
    assert "validate_asset" in {tool["name"] for tool in replies[1]["result"]["tools"]}


@pytest.mark.slow
def test_the_installed_wheel_validates_a_file_and_checks_a_capture(installed: Path, tmp_path: Path) -> None:
    """Issue 18: the offline commands of the installed package work on the bundled schemas."""
    asset = tmp_path / "text.json"
    asset.write_text(json.dumps({"type": "text", "text": "hello"}))
    validated = subprocess.run(
        [str(installed / "mcp-server"), "validate", str(asset), "--schema", "TextContent"],
        capture_output=True,
        cwd=tmp_path,
        env=_clean_env(tmp_path),
        timeout=60,
        check=False,
    )
    assert validated.returncode == 0, validated.stderr.decode()
    assert json.loads(validated.stdout)["ok"] is True
    capture = tmp_path / "session.ndjson"
    capture.write_text(
        json.dumps(initialize_frame("2025-11-25", 1))
        + "\n"
        + json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "serverInfo": {"name": "s", "version": "1"},
                },
            }
        )
        + "\n"
    )
    checked = subprocess.run(
        [str(installed / "mcp-server"), "check", str(capture), "--format", "json"],
        capture_output=True,
        cwd=tmp_path,
        env=_clean_env(tmp_path),
        timeout=60,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()
    assert json.loads(checked.stdout)["ok"] is True
