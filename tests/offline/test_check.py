"""`mcp-server check CAPTURE`: a recorded session linted offline, by the chain's own rules."""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from mcp_server.core.errors import CanonicalError
from mcp_server.offline.check import RULES, CaptureError, check_capture
from mcp_server.registry.schemas import SchemaRegistry

from ..conftest import ROOT, initialize_frame, meta_2026, server_env
from .captures import C2S, S2C, SDK_SERVER, WAIT, Record, Recorder, handshake, run_check, write_raw, write_wrapped


def record_session(tmp_path: Path, version: str) -> list[Record]:
    recorder = Recorder(tmp_path)
    try:
        if version == "2026-07-28":
            meta = meta_2026()
            meta["_meta"]["io.modelcontextprotocol/clientInfo"] = {"name": "test", "version": "1"}
            recorder.call({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": meta})
            recorder.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": meta})
            add = {**meta, "name": "add", "arguments": {"a": 2, "b": 3}}
            recorder.call({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": add})
        else:
            assert recorder.call(initialize_frame(version, 1))["result"]["protocolVersion"] == version
            recorder.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            recorder.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            add = {"name": "add", "arguments": {"a": 2, "b": 3}}
            assert recorder.call({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": add})["result"][
                "structuredContent"
            ] == {"total": 5}
            fail = {"name": "fail", "arguments": {"reason": "no"}}
            assert recorder.call({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": fail})["result"][
                "isError"
            ]
            recorder.call({"jsonrpc": "2.0", "id": 5, "method": "ping"})
    finally:
        recorder.close()
    return recorder.records


@pytest.fixture(scope="module")
def session_2025(tmp_path_factory: pytest.TempPathFactory) -> list[Record]:
    return record_session(tmp_path_factory.mktemp("sdk-2025"), "2025-11-25")


@pytest.fixture(scope="module")
def session_2026(tmp_path_factory: pytest.TempPathFactory) -> list[Record]:
    return record_session(tmp_path_factory.mktemp("sdk-2026"), "2026-07-28")


def line_of(records: list[Record], direction: str, **match: Any) -> int:
    """The 1-based line of the first record sent in ``direction`` whose members equal ``match``."""
    for number, (sent, frame) in enumerate(records, 1):
        if sent == direction and all(frame.get(key) == value for key, value in match.items()):
            return number
    raise AssertionError(f"no {direction} frame with {match}")


def found(document: dict[str, Any]) -> set[tuple[str, int, str]]:
    return {
        (rule, example["line"], error["path"])
        for rule, examples in document["examples"].items()
        for example in examples
        for error in example["errors"]
    }


# --- A session recorded from a real official-SDK server --------------------------------------------


@pytest.mark.parametrize("layout", ["wrapped", "raw"])
def test_a_clean_recorded_sdk_session_exits_0(tmp_path: Path, session_2025: list[Record], layout: str) -> None:
    """Issue: a capture recorded from a real session checks clean (both directions, inferred or given)."""
    write = write_wrapped if layout == "wrapped" else write_raw
    capture = write(tmp_path / "capture.ndjson", session_2025)
    result = run_check(tmp_path, str(capture))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "result: clean" in result.stdout
    assert "protocol 2025-11-25" in result.stdout
    assert "Traceback" not in result.stderr


def record_probing_session(tmp_path: Path, command: list[str]) -> list[Record]:
    """What the official SDK client does in its default mode: `server/discover` first, and on a
    refusal (-32601 from a handshake-era server) `initialize`, then the session as usual."""
    recorder = Recorder(tmp_path, command)
    try:
        meta = meta_2026()
        meta["_meta"]["io.modelcontextprotocol/clientInfo"] = {"name": "test", "version": "1"}
        refused = recorder.call({"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": meta})
        assert refused["error"]["code"] == CanonicalError.METHOD_NOT_FOUND.jsonrpc_code
        assert recorder.call(initialize_frame("2025-11-25", 1))["result"]["protocolVersion"] == "2025-11-25"
        recorder.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        recorder.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        recorder.call({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    finally:
        recorder.close()
    return recorder.records


def test_check_gives_a_probing_sessions_frames_the_live_gateways_verdicts(tmp_path: Path) -> None:
    """Issue 29, row 6: discover refused with -32601 and then `initialize` is a 2025-11-25 session for
    `check` as for the gateway (it flagged `initialize` method_not_found, judging it at 2026-07-28)."""
    legacy = [sys.executable, str(ROOT / "tests" / "upstreams" / "conformance_target.py"), "--era", "legacy"]
    records = record_probing_session(tmp_path, legacy)
    capture = write_raw(tmp_path / "capture.ndjson", records)
    checked = json.loads(run_check(tmp_path, str(capture), "--format", "json").stdout)
    runs = tmp_path / "runs"
    live = subprocess.run(
        [sys.executable, "-m", "mcp_server", "gateway", "--mode", "observe", "--", *legacy],
        input="".join(json.dumps(frame) + "\n" for sent, frame in records if sent == C2S),
        capture_output=True,
        text=True,
        timeout=WAIT * 2,
        env=server_env(tmp_path, MCP_RUNS_DIR=str(runs)),
    )
    assert len(live.stdout.splitlines()) == sum(1 for sent, _ in records if sent == S2C), live.stderr
    [report] = runs.rglob("*-report.json")
    assert checked["violations"] == json.loads(report.read_text())["violations"] == {}
    assert checked["protocol_version"] == "2025-11-25"


def test_a_clean_recorded_2026_session_is_checked_against_2026(tmp_path: Path, session_2026: list[Record]) -> None:
    """Issue: the version in force comes from _meta["io.modelcontextprotocol/protocolVersion"] under 2026-07-28."""
    capture = write_raw(tmp_path / "capture.ndjson", session_2026)
    result = run_check(tmp_path, str(capture), "--format", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    document = json.loads(result.stdout)
    assert document["protocol_version"] == "2026-07-28"
    assert document["frames"][C2S]["tools/call"] == 1 and document["frames"][S2C]["tools/call"] == 1


def inject_faults(records: list[Record]) -> tuple[list[Record], set[tuple[str, int, str]]]:
    """The four faults of the issue, each at a known line, with the rule and path it must be reported under."""
    faulty = json.loads(json.dumps(records))
    faulty = [(direction, frame) for direction, frame in faulty]
    tools_list = line_of(faulty, C2S, method="tools/list")
    faulty[tools_list - 1][1]["params"] = {"cursor": 5}  # a wrong-typed param
    add_call = line_of(faulty, C2S, id=3)
    faulty[add_call - 1][1]["params"]["arguments"] = {"a": "2", "b": 3}  # an invalid tool argument
    add_result = line_of(faulty, S2C, id=3)
    faulty[add_result - 1][1]["result"]["structuredContent"] = {"total": "5"}  # not the outputSchema
    pong = line_of(faulty, S2C, id=5)
    faulty[pong - 1][1]["id"] = 99  # an unknown response id
    expected = {
        ("invalid_params", tools_list, "/params/cursor"),
        ("invalid_tool_input", add_call, "/a"),
        ("invalid_tool_output", add_result, "/result/structuredContent/total"),
        ("unknown_response_id", pong, "/id"),
    }
    return faulty, expected


@pytest.mark.parametrize("layout", ["wrapped", "raw"])
def test_injected_faults_are_reported_exactly_with_rule_and_line(
    tmp_path: Path, session_2025: list[Record], layout: str
) -> None:
    """Issue: a wrong-typed param, an unknown response id, an invalid tool argument and a bad
    structuredContent are reported, exactly those, with rule and line number; exit 1."""
    faulty, expected = inject_faults(session_2025)
    write = write_wrapped if layout == "wrapped" else write_raw
    capture = write(tmp_path / "capture.ndjson", faulty)
    result = run_check(tmp_path, str(capture), "--format", "json")
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    assert found(document) == expected
    assert document["violations"] == {rule: 1 for rule, _, _ in expected}
    assert document["violations_by_tool"] == {"invalid_tool_input": {"add": 1}, "invalid_tool_output": {"add": 1}}
    text = run_check(tmp_path, str(capture))
    assert text.returncode == 1
    for rule, line, path in expected:
        assert any(f"line {line}:" in row and path in row for row in text.stdout.splitlines()), (
            f"{rule} {line} {path}\n{text.stdout}"
        )
    assert "result: 4 violations" in text.stdout


def test_the_json_report_parses_and_counts_frames_per_direction_and_method(
    tmp_path: Path, session_2025: list[Record]
) -> None:
    """Issue: --format json."""
    faulty, _ = inject_faults(session_2025)
    capture = write_wrapped(tmp_path / "capture.ndjson", faulty)
    document = json.loads(run_check(tmp_path, str(capture), "--format", "json").stdout)
    assert document["ok"] is False and document["capture"] == str(capture)
    assert document["lines"] == len(faulty)
    assert document["frames"][C2S]["tools/call"] == 2 and document["frames"][S2C]["initialize"] == 1
    assert document["violations_by_method"]["invalid_params"] == {"tools/list": 1}


def test_the_junit_report_parses_as_xml_with_one_failure_per_broken_rule(
    tmp_path: Path, session_2025: list[Record]
) -> None:
    """Issue: --format junit, one testcase per rule, failures listed and counted."""
    faulty, expected = inject_faults(session_2025)
    capture = write_wrapped(tmp_path / "capture.ndjson", faulty)
    result = run_check(tmp_path, str(capture), "--format", "junit")
    assert result.returncode == 1
    root = ET.fromstring(result.stdout)
    [suite] = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert [case.get("name") for case in cases] == list(RULES)
    failed = {case.get("name"): case.find("failure") for case in cases if case.find("failure") is not None}
    assert set(failed) == {rule for rule, _, _ in expected}
    assert suite.get("failures") == root.get("failures") == "4" and suite.get("tests") == str(len(RULES))
    for rule, line, _ in expected:
        failure = failed[rule]
        assert failure is not None and f"line {line}:" in (failure.text or "")


def test_the_junit_report_of_a_clean_capture_has_no_failures(tmp_path: Path, session_2025: list[Record]) -> None:
    """Issue: --format junit on a clean capture."""
    capture = write_wrapped(tmp_path / "capture.ndjson", session_2025)
    result = run_check(tmp_path, str(capture), "--format", "junit")
    assert result.returncode == 0
    root = ET.fromstring(result.stdout)
    assert root.get("failures") == "0" and root.get("tests") == str(len(RULES))
    assert list(root.iter("failure")) == []


def test_a_forced_version_overrides_the_negotiated_one(tmp_path: Path, session_2025: list[Record]) -> None:
    """Issue: --version V forces a version (2024-11-05 has no structuredContent nor outputSchema)."""
    capture = write_wrapped(tmp_path / "capture.ndjson", session_2025)
    forced = run_check(tmp_path, str(capture), "--version", "2026-07-28", "--format", "json")
    assert forced.returncode == 1
    document = json.loads(forced.stdout)
    assert document["protocol_version"] == "2026-07-28"
    assert document["violations"]["method_not_found"] >= 2  # initialize and ping do not exist in 2026-07-28


# --- Unreadable input: exit 2, one clear line, never a traceback -----------------------------------


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        (lambda p: p / "missing.ndjson", "not_found"),
        (lambda p: p, "is_a_directory"),
        (
            lambda p: (
                (p / "latin1.ndjson").write_bytes(b'{"jsonrpc":"2.0","method":"caf\xe9"}\n') and p / "latin1.ndjson"
            ),
            "not_utf8",
        ),
        (lambda p: (p / "binary.bin").write_bytes(bytes(range(256)) * 4) and p / "binary.bin", "not_utf8"),
        (lambda p: (p / "empty.ndjson").write_bytes(b"") or p / "empty.ndjson", "empty_capture"),
        (lambda p: (p / "blank.ndjson").write_bytes(b"\n  \n\n") and p / "blank.ndjson", "empty_capture"),
    ],
    ids=["missing", "directory", "latin1", "binary", "empty", "blank"],
)
def test_unreadable_input_exits_2_with_a_clear_message_and_no_traceback(
    tmp_path: Path, setup: Any, reason: str
) -> None:
    """Issue: exit 2 for unreadable input, `mcp:error reason=... detail=...` on stderr, never a traceback."""
    target = setup(tmp_path)
    result = run_check(tmp_path, str(target))
    assert result.returncode == 2
    assert result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"mcp:error reason={reason} detail=")
    assert "Traceback" not in result.stderr


def test_an_unknown_forced_version_exits_2(tmp_path: Path) -> None:
    """Issue: --version V must be a bundled version."""
    capture = tmp_path / "c.ndjson"
    capture.write_text('{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    result = run_check(tmp_path, str(capture), "--version", "1999-01-01")
    assert result.returncode == 2 and result.stderr.startswith("mcp:error reason=unknown_version detail=")


def test_a_file_that_fails_while_being_read_exits_2(tmp_path: Path) -> None:
    """Issue: unreadable input: a read that fails with an I/O error (Linux /proc/self/mem: EIO)."""
    memory = Path("/proc/self/mem")
    if not memory.exists():
        pytest.skip("needs Linux /proc")
    result = run_check(tmp_path, str(memory))
    assert result.returncode == 2 and result.stderr.startswith("mcp:error reason=io_error detail=")
    assert "Traceback" not in result.stderr


# --- Following the session, in process --------------------------------------------------------------


def check_lines(tmp_path: Path, registry: SchemaRegistry, lines: list[Any], **options: Any) -> dict[str, Any]:
    capture = tmp_path / "capture.ndjson"
    with capture.open("wb") as out:
        for line in lines:
            out.write((line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n")
    return check_capture(capture, registry=registry, **options).to_document()


def test_a_server_request_and_its_client_response_are_recognised_by_method_and_id(
    tmp_path: Path, registry: SchemaRegistry
) -> None:
    """Issue: sampling/createMessage is a server method; its response comes from the client, matched by id."""
    sampling = {"messages": [], "maxTokens": 5}
    lines = [
        *handshake(),
        {"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage", "params": sampling},
        {
            "jsonrpc": "2.0",
            "id": 7,
            "result": {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"},
        },
        {"jsonrpc": "2.0", "id": 8, "method": "sampling/createMessage", "params": sampling},
        {"jsonrpc": "2.0", "id": 8, "result": {"role": "assistant"}},
    ]
    document = check_lines(tmp_path, registry, lines)
    assert document["frames"][S2C]["sampling/createMessage"] == 2
    assert document["frames"][C2S]["sampling/createMessage"] == 2
    assert found(document) == {("invalid_params", 7, "/result")}


def test_a_progress_notification_is_attributed_to_the_side_answering_the_request(
    tmp_path: Path, registry: SchemaRegistry
) -> None:
    """MCP basic/utilities/progress: the receiver of a request sends its progress."""
    lines = [
        *handshake(),
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 2, "progress": 1}},
        {"jsonrpc": "2.0", "id": 2, "result": {"tools": []}},
    ]
    document = check_lines(tmp_path, registry, lines)
    assert document["frames"][S2C]["notifications/progress"] == 1
    assert document["violations"] == {}


def test_a_request_before_the_handshake_is_not_initialized(tmp_path: Path, registry: SchemaRegistry) -> None:
    """MCP basic/lifecycle: only ping may precede initialize (the chain's rule), for a method that
    only the handshake versions define."""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "info"}},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
    ]
    document = check_lines(tmp_path, registry, lines)
    assert document["violations"] == {"not_initialized": 1}
    assert document["examples"]["not_initialized"][0]["line"] == 1


def test_line_numbers_count_blank_lines_and_parse_errors_are_violations(
    tmp_path: Path, registry: SchemaRegistry
) -> None:
    """Issue: violations carry the capture's own line numbers."""
    lines: list[Any] = [*handshake(), b"", b'{"jsonrpc":"2.0","id":', b"   ", [1, 2]]
    document = check_lines(tmp_path, registry, lines)
    assert found(document) == {("parse_error", 5, ""), ("invalid_envelope", 7, "")}
    assert document["skipped_lines"] == 2 and document["lines"] == 7


def test_run_log_events_without_a_frame_are_skipped_and_string_frames_parsed(
    tmp_path: Path, registry: SchemaRegistry
) -> None:
    """Issue: run logs (JSONL events carrying the frame in a `frame` key with a `direction`)."""
    init, result, initialized = handshake()
    lines = [
        {"event": "start", "pid": 1},
        {"event": "frame", "direction": C2S, "frame": json.dumps(init)},
        {"event": "frame", "direction": S2C, "frame": result},
        {"event": "frame", "direction": C2S, "frame": initialized},
        {"event": "violation", "rule": "x"},
        {"event": "frame", "direction": C2S, "frame": '{"jsonrpc":"2.0","id":2,"method":"tools/list","params":5}'},
        {"event": "frame", "direction": S2C, "frame": "{oops"},
    ]
    document = check_lines(tmp_path, registry, lines)
    assert document["skipped_lines"] == 2
    assert found(document) == {("invalid_envelope", 6, "/params"), ("parse_error", 7, "")}
    assert document["frames"][S2C]["(not json-rpc)"] == 1


def test_a_recorded_direction_beats_the_inferred_one(tmp_path: Path, registry: SchemaRegistry) -> None:
    """Issue: frames wrapped with their direction are checked for that direction (tools/call from a server)."""
    lines = [
        *({"direction": C2S if "method" in f else S2C, "frame": f} for f in handshake()),
        {"direction": S2C, "frame": {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "x"}}},
    ]
    document = check_lines(tmp_path, registry, lines)
    assert found(document) == {("method_not_found", 4, "/method")}


def test_a_changed_tool_definition_and_a_bad_tool_schema_are_reported(tmp_path: Path, registry: SchemaRegistry) -> None:
    """Issue 5's tool rules: definitions pinned per tools/list; an inputSchema that is no schema."""
    tool = {"name": "t", "inputSchema": {"type": "object"}}
    lines = [
        *handshake(),
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 2, "result": {"tools": [tool]}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "result": {
                "tools": [
                    {**tool, "description": "new"},
                    {"name": "u", "inputSchema": {"type": "object", "minimum": "x"}},
                ]
            },
        },
    ]
    document = check_lines(tmp_path, registry, lines)
    assert document["violations"] == {"invalid_tool_schema": 1, "tool_definition_changed": 1}
    assert found(document) == {("tool_definition_changed", 7, "/description"), ("invalid_tool_schema", 7, "")}


def test_error_codes_outside_jsonrpc_and_the_spec_are_reported_unless_allowed(
    tmp_path: Path, registry: SchemaRegistry
) -> None:
    """Issue: the error-code rule of the library, applied to error responses in the capture."""
    lines = [
        *handshake(),
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 2, "error": {"code": 404, "message": "nope"}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "nope"}},
    ]
    assert found(check_lines(tmp_path, registry, lines)) == {("invalid_error_code", 5, "/error/code")}
    assert check_lines(tmp_path, registry, lines, allow_codes=[(400, 499)])["violations"] == {}


def test_examples_are_bounded_but_every_violation_is_counted(tmp_path: Path, registry: SchemaRegistry) -> None:
    """Issue: keep only bounded examples per rule and counters."""
    lines = [*handshake(), *({"jsonrpc": "2.0", "id": i, "result": {}} for i in range(100, 160))]
    document = check_lines(tmp_path, registry, lines)
    assert document["violations"] == {"unknown_response_id": 60}
    assert len(document["examples"]["unknown_response_id"]) == 5


def big_capture(path: Path, megabytes: int) -> int:
    """A valid session of tools/call round trips with ~4 KB arguments, about ``megabytes`` long."""
    tool = {
        "name": "t",
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
        "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    }
    with path.open("wb") as out:
        for frame in handshake():
            out.write(json.dumps(frame).encode() + b"\n")
        out.write(b'{"jsonrpc":"2.0","id":"l","method":"tools/list"}\n')
        out.write(json.dumps({"jsonrpc": "2.0", "id": "l", "result": {"tools": [tool]}}).encode() + b"\n")
        payload = "x" * 4000
        index = 0
        while out.tell() < megabytes * 1_000_000:
            call = {
                "jsonrpc": "2.0",
                "id": index,
                "method": "tools/call",
                "params": {"name": "t", "arguments": {"q": payload}},
            }
            out.write(json.dumps(call).encode() + b"\n")
            reply = {"jsonrpc": "2.0", "id": index, "result": {"content": [], "structuredContent": {"n": index}}}
            out.write(json.dumps(reply).encode() + b"\n")
            index += 1
    return index


def test_memory_stays_flat_while_a_large_capture_streams(tmp_path: Path, registry: SchemaRegistry) -> None:
    """Issue: large captures stream line by line; memory does not grow with the capture's size."""
    capture = tmp_path / "big.ndjson"
    calls = big_capture(capture, 24)
    check_capture(capture, registry=registry)  # warm: validators compiled once, outside the measure
    tracemalloc.start()
    try:
        report = check_capture(capture, registry=registry)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.total == 0 and report.frames[(C2S, "tools/call")] == calls
    assert capture.stat().st_size > 20_000_000
    assert peak < 4_000_000, peak  # the read buffer and a line or two, not the capture


def test_check_capture_raises_capture_error_for_a_missing_file(tmp_path: Path, registry: SchemaRegistry) -> None:
    """The library face of exit 2: CaptureError with the reason slug."""
    with pytest.raises(CaptureError) as caught:
        check_capture(tmp_path / "nope", registry=registry)
    assert caught.value.reason == "not_found"


def test_the_check_command_is_listed_by_the_cli(tmp_path: Path) -> None:
    """Issue: `mcp-server check CAPTURE` with --format and --version."""
    text = run_check(tmp_path, "--help").stdout
    assert "--format" in text and "--version" in text and "capture" in text


def _run_and_log(tmp_path: Path, command: list[str], frames: list[dict[str, Any]], stream: str) -> Path:
    """Run a real ``mcp-server`` over STDIO: ``frames`` in, every request answered, then end of input.
    Returns the run's own event log."""
    runs = tmp_path / "runs"
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(tmp_path, MCP_RUNS_DIR=str(runs)),
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(b"".join(json.dumps(frame).encode() + b"\n" for frame in frames))
    process.stdin.flush()
    for _ in [frame for frame in frames if "id" in frame]:
        assert process.stdout.readline(), "the server closed stdout before answering every request"
    process.stdin.close()
    assert process.wait(WAIT) == 0
    process.stdout.close()
    log = runs / "mcp_server" / stream / ".latest"
    assert log.exists(), f"no {stream} log under {runs}"
    return log


def _check_cli(path: Path) -> tuple[int, dict[str, Any]]:
    result = subprocess.run(
        [sys.executable, "-m", "mcp_server", "check", str(path), "--format", "json"],
        capture_output=True,
        timeout=WAIT,
        env=server_env(path.parent),
        check=False,
    )
    return result.returncode, json.loads(result.stdout)


# A ping may be sent before the handshake completes: its verdict never depends on the reply to initialize.
BAD_PING = {"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"_meta": 5}}


@pytest.mark.parametrize("bad", [False, True])
def test_check_reads_the_gateways_own_run_log_and_reports_what_the_run_found(tmp_path: Path, bad: bool) -> None:
    """Issue 18: `check` on the gateway's own event log gives no false invalid_envelope; the
    violations it reports are the ones the run recorded."""
    frames = [*handshake()[::2], {"jsonrpc": "2.0", "id": 3, "method": "ping"}, *([BAD_PING] if bad else [])]
    command = [sys.executable, "-m", "mcp_server", "gateway", "--", *SDK_SERVER]
    status, document = _check_cli(_run_and_log(tmp_path, command, frames, "gateway"))
    assert "invalid_envelope" not in document["violations"]
    # Each under its request's method; the gateway's own answer to the bad ping is a frame to the
    # client, so an event of its own (the log has an event per frame and direction).
    assert document["frames"][C2S]["ping"] == 1 + bad and document["frames"][S2C]["ping"] == 1 + bad
    if bad:
        assert (status, document["violations"]) == (1, {"invalid_params": 1})
        [example] = document["examples"]["invalid_params"]
        assert (example["direction"], example["method"], example["id"]) == (C2S, "ping", 2)
        assert [error["path"] for error in example["errors"]] == ["/params/_meta"]
    else:
        assert (status, document["violations"]) == (0, {})


def test_check_reads_a_serve_run_log_and_reports_the_frames_it_refused(tmp_path: Path) -> None:
    """Issue 18: a `serve` run's log names each refused frame's rule; `check` reports those."""
    frames = [handshake()[0], handshake()[2], BAD_PING]
    command = [sys.executable, "-m", "mcp_server", "serve"]
    status, document = _check_cli(_run_and_log(tmp_path, command, frames, "serve"))
    assert (status, document["violations"]) == (1, {"invalid_params": 1})
    assert document["frames"][C2S]["ping"] == 1
