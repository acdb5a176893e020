"""Golden logs (issue 7): record, check, update; transport parity for every golden in fixtures/golden/."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcp_server.core import jsonio
from mcp_server.harness.golden import check_events, run_script, write_golden
from mcp_server.harness.replay import load_script, script_upstream
from mcp_server.observe.events import read_events
from mcp_server.registry.schemas import violations

from .conftest import ROOT, server_env

GOLDEN = ROOT / "fixtures" / "golden"
SCRIPTS = sorted(GOLDEN.glob("*.script.jsonl"))
SERVE_SCRIPT = GOLDEN / "serve_session.script.jsonl"


def golden_of(script: Path) -> Path:
    return script.with_name(script.name.replace(".script.jsonl", ".events.jsonl"))


def golden_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_server", "golden", *args],
        capture_output=True,
        text=True,
        env=server_env(tmp_path),
        timeout=300,
        check=False,
    )


def test_every_script_has_its_golden_and_together_they_cover_tools_errors_and_a_gateway() -> None:
    """Issue 7: goldens cover every tool, every error path of the chain, and a gateway session."""
    assert SCRIPTS and all(golden_of(s).exists() for s in SCRIPTS)
    events = [e for s in SCRIPTS for e in read_events(golden_of(s))]
    tools = {e["tool_id"] for e in events if e["event"] == "frame"}
    assert {"list_schemas", "get_schema", "list_examples", "get_example", "validate_asset", "validate_many"} <= tools
    assert {"validate", "diff_assets", "populate_backend"} <= tools
    codes = {e["error"]["code"] for e in events if e["error"] is not None}
    chain_errors = {
        "payload_too_large",
        "parse_error",
        "invalid_envelope",
        "method_not_found",
        "invalid_params",
        "invalid_tool_input",
        "tool_not_found",
        "not_initialized",
        "already_initialized",
        "unknown_response_id",
        "policy_denied",
    }
    assert chain_errors <= codes
    assert any(script_upstream(s) for s in SCRIPTS)  # a gateway session
    statuses = {e["status"] for e in events if e["event"] == "frame"}
    assert {"ok", "tool_error", "error", "dropped"} <= statuses
    assert {"policy", "violation", "upstream", "start", "stop"} <= {e["event"] for e in events}
    assert any(e["redaction_applied"] for e in events)


@pytest.mark.parametrize("transport", ["stdio", "socket", "http"])
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name.split(".")[0])
def test_the_golden_holds_over_every_transport(mcp_golden: Callable[..., None], script: Path, transport: str) -> None:
    """Issue 4 and 7, transport parity: the same script gives the same events over STDIO, a Unix
    socket and HTTP, but for the transport's name (and, over HTTP, the session ids)."""
    mcp_golden(script, golden_of(script), transport=transport)


def test_golden_events_validate_against_the_log_schema(log_validator: Any) -> None:
    """Issue 7: the log format is defined by a JSON Schema, and goldens are logs."""
    for script in SCRIPTS:
        for event in read_events(golden_of(script)):
            assert violations(log_validator, event) == [], (script.name, event["seq"])


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    folder = tmp_path_factory.mktemp("recorded")
    golden = folder / "serve.events.jsonl"
    result = golden_cli(folder, "record", str(SERVE_SCRIPT), "-o", str(golden))
    assert result.returncode == 0, result.stderr
    return golden, list(read_events(golden))


def test_golden_check_passes_on_the_golden_it_recorded(tmp_path: Path, recorded: tuple[Path, list[Any]]) -> None:
    """Issue 7: `golden check` exits 0 when nothing differs."""
    golden, _ = recorded
    result = golden_cli(tmp_path, "check", str(SERVE_SCRIPT), str(golden))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""


def test_golden_check_fails_on_a_changed_status_with_its_patch(
    tmp_path: Path, recorded: tuple[Path, list[dict[str, Any]]]
) -> None:
    """Issue 7: a changed `status` fails the check, with an RFC 6902 patch for that event; exit 1."""
    _, events = recorded
    changed = [dict(e) for e in events]
    index = next(i for i, e in enumerate(changed) if e["status"] == "tool_error")
    changed[index]["status"] = "ok"
    golden = tmp_path / "changed.jsonl"
    write_golden(golden, changed)
    result = golden_cli(tmp_path, "check", str(SERVE_SCRIPT), str(golden))
    assert result.returncode == 1
    [line] = result.stdout.splitlines()
    assert line == f'event {index}: [{{"op":"replace","path":"/status","value":"tool_error"}}]'


def test_golden_check_fails_on_a_missing_schema_version(
    tmp_path: Path, recorded: tuple[Path, list[dict[str, Any]]]
) -> None:
    """Issue 7: a golden event without `metadata.schemaVersion` differs from what runs now."""
    _, events = recorded
    changed = [dict(e) for e in events]
    changed[3] = {**changed[3], "metadata": {"deterministic": True}}
    golden = tmp_path / "old-format.jsonl"
    write_golden(golden, changed)
    result = golden_cli(tmp_path, "check", str(SERVE_SCRIPT), str(golden))
    assert result.returncode == 1
    patches = [jsonio.loads(line.split(": ", 1)[1]) for line in result.stdout.splitlines()]
    assert patches == [[{"op": "add", "path": "/metadata/schemaVersion", "value": "1.0"}]]


def test_a_live_golden_ignores_only_the_volatile_fields(tmp_path: Path) -> None:
    """Issue 7: outside deterministic mode the check ignores ts, duration_ms, trace_id and run_id."""
    golden = tmp_path / "live.jsonl"
    assert golden_cli(tmp_path, "record", "--live", str(SERVE_SCRIPT), "-o", str(golden)).returncode == 0
    events = list(read_events(golden))
    assert not events[0]["metadata"]["deterministic"]
    shifted = [
        {**e, "ts": "2001-01-01T00:00:00.000Z", "duration_ms": 99.0, "trace_id": "f" * 32, "run_id": "0" * 16}
        for e in events
    ]
    write_golden(golden, shifted)
    assert golden_cli(tmp_path, "check", "--live", str(SERVE_SCRIPT), str(golden)).returncode == 0
    shifted[2] = {**shifted[2], "bytes_out": shifted[2]["bytes_out"] + 1}
    write_golden(golden, shifted)
    result = golden_cli(tmp_path, "check", "--live", str(SERVE_SCRIPT), str(golden))
    assert result.returncode == 1 and result.stdout.startswith("event 2: ")


def test_update_rewrites_a_golden_that_differs(tmp_path: Path, recorded: tuple[Path, list[dict[str, Any]]]) -> None:
    """Issue 7: `--update` rewrites the golden; the next check passes."""
    golden_path, events = recorded
    golden = tmp_path / "stale.jsonl"
    write_golden(golden, events[:-3])
    result = golden_cli(tmp_path, "check", "--update", str(SERVE_SCRIPT), str(golden))
    assert result.returncode == 0 and "updated differences=3" in result.stderr
    assert golden.read_bytes() == golden_path.read_bytes()


def test_missing_and_extra_events_are_reported() -> None:
    """Issue 7: an event the golden lacks, or one that no longer comes, is a difference of its own."""
    events = list(read_events(golden_of(SERVE_SCRIPT)))
    assert [d.index for d in check_events(events, events[:-1])] == [len(events) - 1]
    assert [d.patch[0]["op"] for d in check_events(events[:-1], events)] == ["add"]
    assert check_events(events, events) == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["check", "{script}", "{tmp}/absent.jsonl"], "no golden file"),
        (["check", "{tmp}/absent.script.jsonl", "{golden}"], "cannot read"),
        (["check", "{bad}", "{golden}"], "bad.script.jsonl:1: not JSON"),
        (["record", "{header}", "-o", "{tmp}/out.jsonl"], "'upstream' must be a non-empty list"),
    ],
)
def test_golden_bad_inputs_exit_2_with_a_clear_error(tmp_path: Path, args: list[str], expected: str) -> None:
    """Bad input gets a clear error: missing files, a script that is not JSONL, a bad header."""
    (tmp_path / "bad.script.jsonl").write_text("{not json\n")
    (tmp_path / "header.script.jsonl").write_text('{"upstream": "python"}\n{"send": {}}\n')
    names = {
        "script": str(SERVE_SCRIPT),
        "golden": str(golden_of(SERVE_SCRIPT)),
        "tmp": str(tmp_path),
        "bad": str(tmp_path / "bad.script.jsonl"),
        "header": str(tmp_path / "header.script.jsonl"),
    }
    result = golden_cli(tmp_path, *[a.format(**names) for a in args])
    assert result.returncode == 2
    assert "mcp:error reason=golden_failed" in result.stderr and expected in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unknown_transport_is_refused(tmp_path: Path) -> None:
    """Bad input gets a clear error: --transport takes stdio, socket or http."""
    result = golden_cli(tmp_path, "check", "--transport", "pigeon", str(SERVE_SCRIPT), "x")
    assert result.returncode == 2 and "invalid choice" in result.stderr


def test_run_script_events_are_those_of_the_script_in_order() -> None:
    """Issue 7: each frame of the script is one event, in the script's order."""
    frames = load_script(SERVE_SCRIPT)
    events = [e for e in run_script(frames) if e["event"] == "frame" and e["direction"] == "client_to_server"]
    assert len(events) == len(frames)
    assert [e["bytes_in"] for e in events] == [len(f) for f in frames]


def _is_json(frame: bytes) -> bool:
    try:
        jsonio.loads(frame)
    except jsonio.JSONSyntaxError:
        return False
    return True


def test_golden_record_takes_a_plain_ndjson_capture_and_wrapped_frames_as_its_script(tmp_path: Path) -> None:
    """Issue 18: besides its script format, `golden record` takes a plain NDJSON capture (each line a
    frame as the client wrote it) and `{direction, frame}` lines (the client's frames are sent)."""
    frames = [frame for frame in load_script(SERVE_SCRIPT) if frame.startswith(b'{"jsonrpc"') and _is_json(frame)]
    script, capture, wrapped = tmp_path / "s.jsonl", tmp_path / "c.ndjson", tmp_path / "w.jsonl"
    script.write_bytes(b"".join(b'{"send":' + frame + b"}\n" for frame in frames))
    capture.write_bytes(b"".join(frame + b"\n" for frame in frames))
    server_frame = {"direction": "server_to_client", "frame": {"jsonrpc": "2.0", "id": 1, "result": {}}}
    wrapped.write_bytes(
        b"".join(
            jsonio.dumps_line({"direction": "client_to_server", "frame": frame.decode()})
            + jsonio.dumps_line(server_frame)
            for frame in frames
        )
    )
    assert load_script(capture) == load_script(wrapped) == frames
    recorded = {}
    for path in (script, capture, wrapped):
        out = path.with_suffix(".events.jsonl")
        assert golden_cli(tmp_path, "record", str(path), "-o", str(out)).returncode == 0
        recorded[path.name] = out.read_bytes()
    assert recorded["s.jsonl"].count(b'"event":"frame","session_id"') > len(frames)  # each frame, and the replies
    assert recorded["s.jsonl"] == recorded["c.ndjson"] == recorded["w.jsonl"]


def test_a_script_line_of_no_known_form_is_refused_naming_the_line(tmp_path: Path) -> None:
    """Bad input gets a clear error: a line that is neither a script entry nor a frame."""
    script = tmp_path / "odd.jsonl"
    script.write_text('{"send": {"jsonrpc": "2.0", "method": "x"}}\n{"say": "hello"}\n')
    result = golden_cli(tmp_path, "record", str(script), "-o", str(tmp_path / "out.jsonl"))
    assert result.returncode == 2 and "odd.jsonl: line 2:" in result.stderr and "Traceback" not in result.stderr
