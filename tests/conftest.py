"""Shared fixtures: one registry per run, a serve handler, and raw-frame helpers."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_server.core import jsonio
from mcp_server.core.session import Session
from mcp_server.core.settings import Settings
from mcp_server.core.types import Frame, Handler
from mcp_server.registry.schemas import SchemaRegistry, violations
from mcp_server.serve.app import build_server
from mcp_server.serve.tools import ToolSet

from .processes import UPSTREAMS, exclusive, forked_server

ROOT = Path(__file__).resolve().parent.parent

pytest_plugins = ["mcp_server.testing"]

LOG_SCHEMA = ROOT / "schemas" / "log-event.schema.json"


# Each parallel worker's check of its events: how many, how many invalid, the first invalid ones.
_CHECKED = pytest.StashKey[list[tuple[int, int, list[str]]]]()


def pytest_configure(config: pytest.Config) -> None:
    """Every server the suite starts writes its event log under one folder of this run's own (each
    parallel worker's own)."""
    os.environ["MCP_RUNS_DIR"] = tempfile.mkdtemp(prefix="mcp-test-runs-")
    # One folder for the run, its workers included (they inherit it): which tests run now.
    os.environ.setdefault(_RUNNING, tempfile.mkdtemp(prefix="mcp-tests-running-"))
    config.stash[_CHECKED] = []


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers a core. Most of a test's time is spent waiting on the processes it
    started (their start, their answers), so two workers keep a core busy where one leaves it idle."""
    return 2 * len(os.sched_getaffinity(0))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests first (the ``slow`` marker), in their order: parallel workers take them up at
    the start, so no long test runs alone at the end while the other workers have finished. The
    tests that must run alone (``alone``) last, when the others are done."""
    items.sort(key=lambda item: (item.get_closest_marker("alone") is not None, item.get_closest_marker("slow") is None))


_RUNNING = "MCP_TESTS_RUNNING"
_ALONE_WAIT = 900.0


@pytest.fixture(autouse=True)
def _alone_when_marked(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked ``alone`` (it bounds wall-clock time: an exit within a second) runs with no
    other test beside it: it waits until no other parallel worker runs one, and the ``alone`` tests
    take their turns. Every other test says, by a file, that it runs."""
    folder = Path(os.environ[_RUNNING])
    mine = folder / f"{os.getpid()}.running"
    if request.node.get_closest_marker("alone") is None:
        mine.touch()
        try:
            yield
        finally:
            mine.unlink(missing_ok=True)
        return
    with exclusive(folder / "alone.lock"):
        deadline = time.monotonic() + _ALONE_WAIT
        while any(path != mine for path in folder.glob("*.running")):
            assert time.monotonic() < deadline, "the other tests never finished"
            time.sleep(0.05)
        yield


def _event_files(*roots: Path) -> list[Path]:
    return [
        path
        for root in roots
        if root.is_dir()
        for path in root.rglob("mcp_server/*/*.jsonl*")
        if path.is_file() and not path.is_symlink()
    ]


def _invalid_events(roots: Iterable[Path]) -> tuple[int, list[str]]:
    """How many events the files under ``roots`` hold, and where each invalid one is."""
    validator = SchemaRegistry().bundled(LOG_SCHEMA.name)
    bad: list[str] = []
    count = 0
    for path in _event_files(*roots):
        for number, line in enumerate(path.read_bytes().splitlines(), 1):
            if not line.strip():
                continue
            count += 1
            try:
                found = violations(validator, jsonio.loads(line))
            except jsonio.JSONSyntaxError:
                found = [{"path": "", "msg": "not JSON"}]
            if found:
                bad.append(f"{path.name}:{number}: {found[:3]}")
    return count, bad


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """A parallel worker's own check of its events (``pytest_sessionfinish``), for the whole run's."""
    checked = getattr(node, "workeroutput", {}).get("log_schema")
    if checked is not None:
        node.config.stash[_CHECKED].append(tuple(checked))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Issue 7: every event written by the whole suite validates against the log schema. Each
    parallel worker checks what its tests wrote; the run (or the only process) adds them up."""
    config = session.config
    runs = Path(os.environ["MCP_RUNS_DIR"])
    roots = [runs]
    factory = getattr(config, "_tmp_path_factory", None)  # pytest's own, for tmp_path folders
    if factory is not None and config.pluginmanager.getplugin("dsession") is None:  # (else: the workers')
        roots.append(factory.getbasetemp())
    count, bad = _invalid_events(roots)
    shutil.rmtree(runs, ignore_errors=True)
    if hasattr(config, "workerinput"):  # a parallel worker: the run reports
        config.workeroutput["log_schema"] = (count, len(bad), bad[:20])  # type: ignore[attr-defined]
        return
    invalid = len(bad)
    for worker_count, worker_invalid, worker_bad in config.stash[_CHECKED]:
        count, invalid, bad = count + worker_count, invalid + worker_invalid, bad + list(worker_bad)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"log schema: {count} events checked, {invalid} invalid")
    if invalid:
        if reporter is not None:
            reporter.write_line("events that fail schemas/log-event.schema.json:\n" + "\n".join(bad[:20]), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def sdk_forks() -> Iterator[list[str]]:
    """The SDK upstream's STDIO command (`upstreams/sdk_server.py`) served by a process that imported
    it once (each parallel worker's own), for tests that open many sessions through a gateway and test
    no upstream process's own life: a session's upstream starts in milliseconds, not 0.75 s of CPU."""
    with forked_server(UPSTREAMS / "sdk_server.py") as command:
        yield command


@pytest.fixture(scope="session")
def target_forks() -> Iterator[list[str]]:
    """The conformance target's STDIO command (`upstreams/conformance_target.py`), imported once and
    forked per session as ``sdk_forks`` is, for the same tests."""
    with forked_server(UPSTREAMS / "conformance_target.py") as command:
        yield command


@pytest.fixture(scope="session")
def registry() -> SchemaRegistry:
    return SchemaRegistry()


@pytest.fixture(scope="session")
def log_validator(registry: SchemaRegistry) -> Any:
    """The compiled log-event schema (``schemas/log-event.schema.json``)."""
    return registry.bundled(LOG_SCHEMA.name)


@pytest.fixture(scope="session")
def tools(registry: SchemaRegistry) -> ToolSet:
    from mcp_server.serve.tools.catalog import builtin_tools

    return ToolSet(builtin_tools({}, registry), registry)


@pytest.fixture(scope="session")
def handler(registry: SchemaRegistry, tools: ToolSet) -> Handler:
    return build_server(registry, tools, Settings())


def exchange(handler: Handler, frames: Iterable[bytes | dict[str, Any]], session: Session | None = None) -> list[Any]:
    """Feed frames through ``handler`` in order; the parsed replies (``None`` for no reply)."""
    session = session or Session()

    async def run() -> list[Any]:
        replies = []
        for frame in frames:
            raw = frame if isinstance(frame, bytes) else jsonio.dumps(frame)
            reply = await handler(Frame(raw=raw, transport="test", session=session))
            replies.append(None if reply is None else jsonio.loads(reply.to_bytes()))
        return replies

    return asyncio.run(run())


def initialize_frame(version: str, request_id: int = 0) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
    }


def meta_2026(**params: Any) -> dict[str, Any]:
    """Params carrying the 2026-07-28 per-request envelope."""
    return {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
        **params,
    }


def server_command() -> list[str]:
    return [sys.executable, "-m", "mcp_server", "serve"]


def cli(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None, wait: float = 60.0
) -> subprocess.CompletedProcess[str]:
    """``mcp-server ARGS`` run in ``tmp_path`` to its end (text output; ``env``: else ``server_env``)."""
    return subprocess.run(
        [sys.executable, "-m", "mcp_server", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env or server_env(tmp_path),
        timeout=wait,
        check=False,
    )


def server_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_", "SYN_"))}
    env["MCP_RUNS_DIR"] = os.environ["MCP_RUNS_DIR"]
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["MCP_READY_FILE"] = str(tmp_path / "mcp.ready")
    env.update(extra)
    return env
