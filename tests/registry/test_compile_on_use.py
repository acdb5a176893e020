"""Schemas compiled for the version a session uses, on first use (issue 34), or all at start-up when
asked (``MCP_COMPILE_ALL_SCHEMAS``), with the same verdicts either way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mcp_server.chain.compose import build_chain
from mcp_server.core.errors import CanonicalError, Rejection
from mcp_server.core.session import Session
from mcp_server.core.types import CLIENT_TO_SERVER, SERVER_TO_CLIENT, Frame, Message
from mcp_server.registry.schemas import SchemaRegistry

from ..conftest import server_env

VERSION = "2025-11-25"


def _session(registry: SchemaRegistry) -> list[Message | str]:
    """One 2025-11-25 session through both chains: each frame's verdict (or the rejection's member)."""
    inbound, outbound = (build_chain(registry, direction) for direction in (CLIENT_TO_SERVER, SERVER_TO_CLIENT))
    session = Session()
    initialize = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    result = {"protocolVersion": VERSION, "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}
    frames = [
        (inbound, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize}),
        (outbound, {"jsonrpc": "2.0", "id": 1, "result": result}),
        (inbound, {"jsonrpc": "2.0", "method": "notifications/initialized"}),
        (inbound, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        (outbound, {"jsonrpc": "2.0", "id": 2, "result": {"tools": "not a list"}}),
        (inbound, {"jsonrpc": "2.0", "id": 3, "method": "ping", "params": 7}),
    ]
    seen: list[Message | str] = []
    for chain, document in frames:
        frame = Frame(json.dumps(document).encode(), "test", session, direction=chain.direction)
        try:
            message = chain.check(frame)
        except Rejection as rejection:
            seen.append(rejection.error.name)
            session.answered(chain.direction, rejection.message)
            continue
        seen.append(message._replace(document=None))
        session.answered(chain.direction, message)
        session.follow(chain.direction, message)
    return seen


def test_a_session_compiles_only_validators_of_its_own_version_and_nothing_before_it() -> None:
    """Issue 34: a session uses one version and a few methods; the other versions stay uncompiled."""
    registry = SchemaRegistry()
    assert [registry.protocol(v).compiled for v in registry.versions] == [0] * len(registry.versions)
    _session(registry)
    used = registry.protocol(VERSION).compiled
    assert 0 < used < SchemaRegistry(compile_all=True).protocol(VERSION).compiled
    assert all(registry.protocol(v).compiled == 0 for v in registry.versions if v != VERSION)


def test_compiling_every_version_at_start_up_gives_the_same_verdicts_as_compiling_on_first_use() -> None:
    """Issue 34: the start-up option changes when a validator is compiled, never a verdict."""
    eager = SchemaRegistry(compile_all=True)
    assert all(eager.protocol(v).compiled > 10 for v in eager.versions)
    verdicts = _session(SchemaRegistry())
    assert verdicts == _session(eager)
    assert verdicts[4:] == ["INVALID_PARAMS", "INVALID_ENVELOPE"]  # a bad result, a bad request


def test_serve_with_every_version_compiled_at_start_up_answers_as_it_does_by_default(tmp_path: Path) -> None:
    """Issue 34: ``MCP_COMPILE_ALL_SCHEMAS=1`` on a real ``serve`` over STDIO: the same replies."""
    frames = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2024-11-05",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "ping", "params": 7},
    ]
    script = b"".join(json.dumps(frame).encode() + b"\n" for frame in frames)

    def replies(**env: str) -> list[bytes]:
        done = subprocess.run(
            [sys.executable, "-m", "mcp_server", "serve"],
            input=script,
            capture_output=True,
            env=server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"), MCP_DETERMINISTIC="1", **env),
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    default = replies()
    assert len(default) == 3 and json.loads(default[2])["error"]["code"] == CanonicalError.INVALID_ENVELOPE.jsonrpc_code
    assert replies(MCP_COMPILE_ALL_SCHEMAS="1") == default
