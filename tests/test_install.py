"""The package as a user installs it: a wheel built from the repository, in a fresh virtual environment."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from mcp_server import __version__

from .conftest import ROOT, initialize_frame
from .processes import made_once

WAIT = 600.0  # building the wheel and installing its dependencies from the package index


def _clone(destination: Path) -> Path:
    """A ``git clone`` of the repository: what is committed, and nothing a working tree holds besides."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the package is built from a clone of the repository")
    cloned = subprocess.run(
        ["git", "clone", "--quiet", str(ROOT), str(destination)], capture_output=True, timeout=WAIT, check=False
    )
    assert cloned.returncode == 0, cloned.stderr.decode()[-2000:]
    return destination


def _clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_", "SYN_", "PYTHON"))}
    env["MCP_RUNS_DIR"] = str(tmp_path / "runs")
    env["MCP_READY_FILE"] = str(tmp_path / "ready")
    return env


def _no_compiler(env: dict[str, str]) -> dict[str, str]:
    """An environment where any attempt to compile C fails: the package must need none."""
    return {**env, "CC": "/bin/false", "CXX": "/bin/false"}


def _shared(factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder of the whole run (its parallel workers' too): the built package is made once for all."""
    base = factory.getbasetemp()
    return (base.parent if "PYTEST_XDIST_WORKER" in os.environ else base) / name


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clean clone of the repository: only committed files count."""
    return made_once(_shared(tmp_path_factory, "repository"), lambda folder: _clone(folder / "source")) / "source"


def _build(source: Path, wheels: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(source)],
        capture_output=True,
        env=_no_compiler(dict(os.environ)),
        timeout=WAIT,
        check=False,
    )
    assert built.returncode == 0, built.stderr.decode()[-2000:]


@pytest.fixture(scope="module")
def wheel(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from the repository, once for the run."""
    wheels = made_once(_shared(tmp_path_factory, "wheels"), lambda folder: _build(source, folder))
    [wheel] = wheels.glob("*.whl")
    return wheel


def _install(wheel: Path, venv: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=WAIT)
    pip = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", str(wheel)], capture_output=True, timeout=WAIT, check=False
    )
    assert pip.returncode == 0, pip.stderr.decode()[-2000:]


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip install`` of the wheel built from this repository into a new venv (once for the run, the
    tests only run what it installed): its ``bin`` folder."""
    work = made_once(_shared(tmp_path_factory, "install"), lambda folder: _install(wheel, folder / "venv"))
    return work / "venv" / "bin"


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


@pytest.mark.slow
def test_the_wheel_built_from_a_clone_carries_every_module_and_the_top_level_schemas(source: Path, wheel: Path) -> None:
    """Issue 32 (the design card's layout): the schemas live in `schemas/` at the top of the
    repository, and the wheel built from a clean clone carries them inside the package, with every
    module of it."""
    assert (source / "schemas" / "mcp").is_dir() and not (source / "mcp_server" / "schemas").exists()
    modules = {p.relative_to(source).as_posix() for p in (source / "mcp_server").rglob("*.py")}
    schemas = {
        f"mcp_server/schemas/{p.relative_to(source / 'schemas').as_posix()}"
        for p in (source / "schemas").rglob("*")
        if p.is_file()
    }
    with zipfile.ZipFile(wheel) as archive:
        carried = set(archive.namelist())
    assert len(schemas) > 100 and modules - carried == set() and schemas - carried == set()


_PRINT_SCHEMAS = (
    "import mcp_server; from mcp_server.registry.schemas import BUNDLED_SCHEMAS; "
    "print(mcp_server.__file__); print(BUNDLED_SCHEMAS)"
)


@pytest.mark.slow
def test_the_installed_wheel_reads_the_schemas_inside_its_package(installed: Path, tmp_path: Path) -> None:
    """Issue 32: an installed package finds its schemas wherever it is installed: inside itself,
    never in a folder beside it."""
    found = subprocess.run(
        [str(installed / "python"), "-c", _PRINT_SCHEMAS],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_clean_env(tmp_path),
        timeout=60,
        check=False,
    )
    assert found.returncode == 0, found.stderr
    package, schemas = (Path(line) for line in found.stdout.splitlines())
    assert package.parent.is_relative_to(installed.parent) and schemas == package.parent / "schemas"


@pytest.mark.slow
def test_an_editable_install_of_a_clone_reads_the_repositorys_own_schemas(tmp_path: Path) -> None:
    """Issue 32: an editable install (`pip install -e .`, as CI and the Quick start install) reads
    the repository's top-level `schemas/`, so an edit there is seen at once; its validate works."""
    clone = _clone(tmp_path / "clone")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=WAIT)
    [site] = venv.glob("lib/python*/site-packages")
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # this venv's, not the package
    pip = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "--no-deps", "-e", str(clone)],
        capture_output=True,
        env=_no_compiler(dict(os.environ)),
        timeout=WAIT,
        check=False,
    )
    assert pip.returncode == 0, pip.stderr.decode()[-2000:]
    env = _clean_env(tmp_path)
    found = subprocess.run(
        [str(venv / "bin" / "python"), "-c", _PRINT_SCHEMAS],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
        check=False,
    )
    assert found.returncode == 0, found.stderr
    assert [Path(line) for line in found.stdout.splitlines()] == [
        clone / "mcp_server" / "__init__.py",
        clone / "schemas",
    ]
    asset = tmp_path / "text.json"
    asset.write_text(json.dumps({"type": "text", "text": "hello"}))
    validated = subprocess.run(
        [str(venv / "bin" / "mcp-server"), "validate", str(asset), "--schema", "TextContent"],
        capture_output=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
        check=False,
    )
    assert validated.returncode == 0, validated.stderr.decode()
    assert json.loads(validated.stdout)["ok"] is True


@pytest.mark.slow
def test_the_built_wheel_is_pure_python(wheel: Path) -> None:
    """Issue 23: the package installs with no compiler: its wheel is for any Python 3 on any platform."""
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name


def _version(binary: Path, tmp_path: Path) -> str:
    result = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, env=_clean_env(tmp_path), timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()[0]


@pytest.mark.slow
def test_the_installed_program_tells_its_version(installed: Path, tmp_path: Path) -> None:
    """Issue 23: `mcp-server --version` of the installed wheel names the package's version."""
    assert _version(installed / "mcp-server", tmp_path) == f"mcp-server {__version__}"


# How a README command installs the package: the fixture has done that, into the venv it gives.
_INSTALL_STEP = re.compile(r"^\s*(python3? -m venv\b|\S*pip3? install\b|pipx install\b|uv tool install\b|uv venv\b)")


def quick_start_command(readme: str) -> str:
    """The first ``sh`` block of the README's Quick start, without its install steps."""
    section = readme.split("\n## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None, "the Quick start has no sh block"
    steps = [step for line in block.group(1).splitlines() for step in line.split(" && ") if step.strip()]
    kept = [step for step in steps if not _INSTALL_STEP.match(step)]
    assert kept and any("mcp-server" in step for step in kept), steps
    return " && ".join(kept)


@pytest.mark.slow
def test_the_readme_quick_start_runs_on_the_installed_package(installed: Path, tmp_path: Path) -> None:
    """Issue 23: the README's first command, read from the README, works on the installed package
    (its `.venv` is the fresh venv the wheel went into): every request answered, none refused."""
    command = quick_start_command((ROOT / "README.md").read_text())
    (tmp_path / ".venv").symlink_to(installed.parent)
    env = _clean_env(tmp_path)
    env["PATH"] = f"{installed}{os.pathsep}{env.get('PATH', '')}"
    result = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    replies = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert replies and all(reply.get("jsonrpc") == "2.0" and "error" not in reply for reply in replies), replies


def _installers(venv: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=WAIT)
    pip = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "pipx", "uv"], capture_output=True, timeout=WAIT, check=False
    )
    assert pip.returncode == 0, pip.stderr.decode()[-2000:]


@pytest.fixture(scope="module")
def installers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pipx and uv, from the package index into a throwaway venv (the machine need not have them),
    once for the run."""
    return made_once(_shared(tmp_path_factory, "installers"), lambda folder: _installers(folder / "venv")) / "venv/bin"


@pytest.mark.slow
@pytest.mark.parametrize("tool", ["pipx", "uv"])
def test_pipx_and_uv_install_the_repository_in_one_step(
    tool: str, installers: Path, source: Path, tmp_path: Path
) -> None:
    """Issue 23: `pipx install` / `uv tool install` of the repository, no compiler and no other step,
    gives a working `mcp-server` (its version, and a file validated on the bundled schemas)."""
    env = _no_compiler(_clean_env(tmp_path))
    bin_dir = tmp_path / "bin"
    python = shutil.which("python3") or sys.executable  # the machine's Python, as a user's shell finds it
    if tool == "pipx":
        env |= {
            "PIPX_HOME": str(tmp_path / "pipx"),
            "PIPX_BIN_DIR": str(bin_dir),
            "PIPX_MAN_DIR": str(tmp_path / "man"),
        }
        command = [str(installers / "pipx"), "install", "--python", python, str(source)]
    else:
        env |= {
            "UV_TOOL_DIR": str(tmp_path / "uv-tools"),
            "UV_TOOL_BIN_DIR": str(bin_dir),
            "UV_CACHE_DIR": str(tmp_path / "uv-cache"),
            "UV_PYTHON_DOWNLOADS": "never",
        }
        command = [str(installers / "uv"), "tool", "install", "--python", python, str(source)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=WAIT, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _version(bin_dir / "mcp-server", tmp_path) == f"mcp-server {__version__}"
    asset = tmp_path / "text.json"
    asset.write_text(json.dumps({"type": "text", "text": "hello"}))
    validated = subprocess.run(
        [str(bin_dir / "mcp-server"), "validate", str(asset), "--schema", "TextContent"],
        capture_output=True,
        env=_clean_env(tmp_path),
        timeout=60,
        check=False,
    )
    assert validated.returncode == 0, validated.stderr.decode()
    assert json.loads(validated.stdout)["ok"] is True
