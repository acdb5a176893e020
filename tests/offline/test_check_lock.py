"""`mcp-server check CAPTURE --lock FILE`: a recorded session's tools held to the tool lockfile in CI,
JUnit as ever (issue 21). Sessions recorded from a real SDK upstream, locked by `mcp-server lock`."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

from mcp_server.offline.check import LOCKED_RULES, RULES

from ..conftest import initialize_frame, server_env
from ..gateway.gateways import DRIFTING, lock
from .captures import C2S, Record, Recorder, run_check, write_wrapped


class DriftRecorder(Recorder):
    """The recorder, in front of the drifting upstream."""

    def __init__(self, tmp_path: Path, variant: str) -> None:
        self.process = subprocess.Popen(
            [*DRIFTING, "--variant", variant],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=server_env(tmp_path),
        )
        self.records: list[Record] = []


def recorded(tmp_path: Path, variant: str) -> Path:
    """A session with the upstream as ``variant``: handshake, list, a call of `add`; its capture."""
    recorder = DriftRecorder(tmp_path, variant)
    try:
        recorder.call(initialize_frame("2025-11-25", 1))
        recorder.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        recorder.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        add = {"name": "add", "arguments": {"a": 2, "b": 3}}
        recorder.call({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": add})
    finally:
        recorder.close()
    return write_wrapped(tmp_path / f"{variant}.ndjson", recorder.records)


def test_a_session_of_the_locked_server_passes_the_lock_in_junit(tmp_path: Path) -> None:
    """Issue 21: the same tools as locked: exit 0, the lock's rules are testcases without failures."""
    path = lock(tmp_path)
    result = run_check(tmp_path, str(recorded(tmp_path, "locked")), "--lock", str(path), "--format", "junit")
    assert result.returncode == 0, result.stdout + result.stderr
    cases = [case.get("name") for case in ET.fromstring(result.stdout).iter("testcase")]
    assert cases == [*RULES, *LOCKED_RULES]
    assert list(ET.fromstring(result.stdout).iter("failure")) == []


def test_a_session_whose_tool_changed_fails_the_lock_in_junit(tmp_path: Path) -> None:
    """Issue 21: a tool listed otherwise than locked fails `locked_tool_changed` (the patch's paths
    named), and its call `tool_not_locked`: exit 1."""
    path = lock(tmp_path)
    capture = recorded(tmp_path, "changed")
    result = run_check(tmp_path, str(capture), "--lock", str(path), "--format", "junit")
    assert result.returncode == 1, result.stdout + result.stderr
    failed = {case.get("name"): case.find("failure") for case in ET.fromstring(result.stdout).iter("testcase")}
    changed, refused = failed["locked_tool_changed"], failed["tool_not_locked"]
    assert changed is not None and "tool=add" in (changed.text or "")
    assert "/inputSchema/properties/c: add" in (changed.text or "")
    assert refused is not None and f"{C2S} tools/call tool=add" in (refused.text or "")
    assert failed["unlocked_tool"] is None and failed["locked_tool_removed"] is None
    plain = run_check(tmp_path, str(capture), "--format", "junit")
    assert plain.returncode == 0  # without the lock, nothing is wrong with it


def test_a_bad_lockfile_is_unusable_input_for_check(tmp_path: Path) -> None:
    """Issue 21: check refuses a lockfile that is not a sound one: exit 2 naming the pointer."""
    path = lock(tmp_path)
    path.write_text(path.read_text().replace('"lockfileVersion": 1', '"lockfileVersion": "1"'))
    result = run_check(tmp_path, str(recorded(tmp_path, "locked")), "--lock", str(path))
    assert result.returncode == 2
    assert result.stderr.startswith("mcp:error reason=bad_lockfile detail=lockfile ")
    assert "/lockfileVersion" in result.stderr and "Traceback" not in result.stderr
