"""The structured event log (issue 7): fields, deterministic runs, the file, `.latest`, retention, stderr."""

from __future__ import annotations

import asyncio
import io
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcp_server.core import jsonio
from mcp_server.core.errors import CanonicalError
from mcp_server.core.session import Session
from mcp_server.core.settings import Settings
from mcp_server.core.types import Direction, Frame
from mcp_server.execution.approvals import ApprovalBook
from mcp_server.execution.gate import ExecutionGate
from mcp_server.execution.policy import Policy
from mcp_server.observe.events import EventLog, EventLogSettings, read_events
from mcp_server.observe.writer import pack_rows, unpack_rows
from mcp_server.registry.schemas import SchemaRegistry, ToolIO, violations
from mcp_server.serve.app import build_server
from mcp_server.serve.tools import Tool, ToolSet

from ..conftest import initialize_frame, server_command, server_env
from ..servers import serving

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

SESSION = [
    initialize_frame("2025-11-25", 1),
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": {"traceparent": TRACEPARENT}}},
    {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {
            "name": "validate_asset",
            "arguments": {"schema": "TextContent", "asset": {"type": "text"}},
            "_meta": {"agent_step": 4, "attempt": 2},
        },
    },
    {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "validate_asset", "arguments": {}}},
]


def stdin_of(frames: list[Any]) -> bytes:
    return b"".join((f if isinstance(f, bytes) else jsonio.dumps(f)) + b"\n" for f in frames)


def run_serve(tmp_path: Path, frames: list[Any], *args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*server_command(), *args],
        input=stdin_of(frames),
        capture_output=True,
        env=server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"), **env),
        timeout=60,
        check=False,
    )


def latest(runs: Path, stream: str = "serve") -> Path:
    return runs / "mcp_server" / stream / ".latest"


def test_two_deterministic_runs_write_byte_identical_log_files(tmp_path: Path) -> None:
    """Issue 7, deterministic mode: two runs over the same input give byte-identical log files."""
    first = run_serve(tmp_path / "a", SESSION, MCP_DETERMINISTIC="1")
    second = run_serve(tmp_path / "b", SESSION, "--deterministic")
    assert first.returncode == second.returncode == 0
    one, two = latest(tmp_path / "a" / "runs"), latest(tmp_path / "b" / "runs")
    assert one.resolve().name == two.resolve().name
    assert one.read_bytes() == two.read_bytes()
    events = list(read_events(one))
    assert {e["ts"] for e in events} == {"1970-01-01T00:00:00.000Z"}
    assert {e["duration_ms"] for e in events} == {0.0}


def test_a_live_run_has_real_times_and_a_random_run_id(tmp_path: Path) -> None:
    """Issue 7: outside deterministic mode the clock is real and each run has its own id."""
    first = run_serve(tmp_path / "a", SESSION)
    second = run_serve(tmp_path / "b", SESSION)
    assert first.returncode == second.returncode == 0
    one = list(read_events(latest(tmp_path / "a" / "runs")))
    two = list(read_events(latest(tmp_path / "b" / "runs")))
    assert one[0]["run_id"] != two[0]["run_id"]
    assert not one[0]["metadata"]["deterministic"]
    assert one[0]["ts"].startswith(time.strftime("%Y-", time.gmtime()))


def test_every_frame_in_each_direction_gets_an_event_with_the_fields_of_the_format(
    tmp_path: Path, log_validator: Any
) -> None:
    """Issue 7, Events, and issue 18: one event per frame and direction (a reply is a frame of its
    own, the event after its request's); all validate against the log schema."""
    assert run_serve(tmp_path, SESSION, "--deterministic").returncode == 0
    events = list(read_events(latest(tmp_path / "runs")))
    for event in events:
        assert violations(log_validator, event) == []
    assert [e["event"] for e in events] == ["start", *["frame"] * 9, "stop"]
    assert [e["seq"] for e in events] == list(range(1, 12))
    replies = [e for e in events if e["event"] == "frame" and e["direction"] == "server_to_client"]
    assert [(e["kind"], e["request_id"], e["method"]) for e in replies] == [
        ("response", 1, "initialize"),
        ("response", 2, "tools/list"),
        ("response", 3, "tools/call"),
        ("response", 4, "tools/call"),  # invalid tool input, answered as a tool result (2025-11-25)
    ]
    for reply in replies:
        request = events[reply["seq"] - 2]  # the event before a reply is its request's
        assert (request["request_id"], request["trace_id"]) == (reply["request_id"], reply["trace_id"])
        assert reply["bytes_out"] > 0 and reply["bytes_in"] == 0 and request["bytes_out"] == 0
    frames = [e for e in events if e["event"] == "frame" and e["direction"] == "client_to_server"]
    assert [e["method"] for e in frames] == [
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call",
        "tools/call",
    ]
    assert [e["request_id"] for e in frames] == [1, None, 2, 3, 4]
    assert [e["status"] for e in frames] == ["ok", "ok", "ok", "tool_error", "error"]
    assert {e["transport"] for e in frames} == {"stdio"}
    assert {e["protocol_version"] for e in frames} == {"2025-11-25"}
    assert len({e["session_id"] for e in frames}) == 1
    listed, called, refused = frames[2], frames[3], frames[4]
    assert listed["trace_id"] == "0af7651916cd43dd8448eb211c80319c"  # from _meta.traceparent
    assert called["tool_id"] == "validate_asset" and called["route"] == "tools/call"
    assert (called["agent_step"], called["attempt"]) == (4, 2)
    assert frames[0]["bytes_in"] == len(jsonio.dumps(SESSION[0]))
    assert refused["error"]["code"] == "invalid_tool_input"
    assert refused["error"]["details"] and refused["route"] is None
    assert all(e["metadata"] == {"schemaVersion": "1.0", "deterministic": True} for e in events)


def test_an_unanswered_invalid_frame_is_logged_as_dropped(tmp_path: Path) -> None:
    """Issue 2 §4 and issue 7: a notification never gets a reply, even an invalid one; it is logged."""
    frames = [
        initialize_frame("2025-11-25", 1),
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": "half"}},
        b'{"jsonrpc":"2.0","id":7,',
    ]
    result = run_serve(tmp_path, frames, "--deterministic")
    assert result.returncode == 0
    events = [e for e in read_events(latest(tmp_path / "runs")) if e["event"] == "frame"]
    incoming = [e for e in events if e["direction"] == "client_to_server"]
    assert [(e["status"], (e["error"] or {}).get("code")) for e in incoming] == [
        ("ok", None),
        ("dropped", "invalid_params"),
        ("error", "parse_error"),
    ]
    assert [e["kind"] for e in events if e["direction"] == "server_to_client"] == ["response", "error_response"]
    assert len(result.stdout.splitlines()) == 2  # initialize and the parse error; nothing for the notification


def test_latest_points_at_the_complete_file_only_after_the_run_ends(tmp_path: Path) -> None:
    """Issue 7: `.latest` always points at a complete file (write, then rename)."""
    runs = tmp_path / "runs"
    assert run_serve(tmp_path, SESSION[:1]).returncode == 0
    previous = latest(runs).resolve()
    with serving(tmp_path, ["--socket", str(tmp_path / "s.sock")], MCP_RUNS_DIR=str(runs)) as server:
        folder = runs / "mcp_server" / "serve"
        partial = [p for p in folder.iterdir() if p.name.endswith(".jsonl.partial")]
        assert len(partial) == 1  # the running server's file, under its temporary name
        assert latest(runs).resolve() == previous  # still the last complete run
        assert server.stop() == 0
    now = latest(runs).resolve()
    assert now != previous and now.name.endswith(".jsonl") and now.exists()
    assert not [p for p in folder.iterdir() if p.name.endswith(".partial")]
    events = list(read_events(now))
    assert events[0]["event"] == "start" and events[-1]["event"] == "stop"


def test_only_the_newest_runs_of_a_stream_are_kept(tmp_path: Path) -> None:
    """Issue 7: only the newest N runs are kept (MCP_RUNS_KEEP, default 20)."""
    runs = tmp_path / "runs"
    written = []
    for _ in range(5):
        assert run_serve(tmp_path, [], MCP_RUNS_KEEP="3").returncode == 0
        written.append(latest(runs).resolve())
    kept = sorted(p for p in (runs / "mcp_server" / "serve").iterdir() if p.name.endswith(".jsonl"))
    assert kept == sorted(written[-3:])
    assert latest(runs).resolve() == written[-1]


def test_log_stream_names_the_folder_and_a_bad_name_is_refused(tmp_path: Path) -> None:
    """Issue 7: runs/mcp_server/<stream>/; a stream name cannot climb out of the runs folder."""
    assert run_serve(tmp_path, [], "--log-stream", "ci-job.1").returncode == 0
    assert latest(tmp_path / "runs", "ci-job.1").exists()
    refused = run_serve(tmp_path, [], "--log-stream", "../escape")
    assert refused.returncode == 2
    assert b"reason=setup_failed" in refused.stderr and b"--log-stream" in refused.stderr
    assert refused.stdout == b""


def test_the_log_rotates_by_size_and_keeps_a_bounded_number_of_files(tmp_path: Path) -> None:
    """Issue 18: a run's log rotates once a file passes MCP_LOG_MAX_BYTES; only the newest
    MCP_LOG_KEEP_FILES rotated files are kept; together they hold the newest events in order."""
    runs = tmp_path / "runs"
    pings = [{"jsonrpc": "2.0", "id": n, "method": "ping"} for n in range(3000)]
    result = run_serve(tmp_path, pings, MCP_LOG_MAX_BYTES="65536", MCP_LOG_KEEP_FILES="3")
    assert result.returncode == 0
    folder = runs / "mcp_server" / "serve"
    final = latest(runs).resolve()
    stem = final.name.removesuffix(".jsonl")
    rotated = sorted(folder.glob(f"{stem}.*.jsonl"), key=lambda p: int(p.name.split(".")[-2]))
    assert len(rotated) == 3  # more were written (about 3,000 events of ~400 bytes); the oldest went
    assert int(rotated[0].name.split(".")[-2]) > 1
    for path in rotated:
        assert path.stat().st_size <= 65536 + 256 * 1024  # the limit, passed by at most one batch of 256 events
    seqs = [event["seq"] for path in [*rotated, final] for event in read_events(path)]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # contiguous, in order, nothing lost in between
    assert seqs[-1] == 6002 and seqs[0] > 1  # start, 3,000 pings and their replies, stop; the first files rotated away
    assert not [p for p in folder.iterdir() if p.name.endswith(".partial")]


def test_a_pruned_run_takes_its_rotated_files_with_it(tmp_path: Path) -> None:
    """Issue 18: MCP_RUNS_KEEP counts runs, and a run removed from the folder leaves none of its files."""
    runs = tmp_path / "runs"
    pings = [{"jsonrpc": "2.0", "id": n, "method": "ping"} for n in range(400)]
    for _ in range(3):
        assert run_serve(tmp_path, pings, MCP_LOG_MAX_BYTES="32768", MCP_RUNS_KEEP="2").returncode == 0
    folder = runs / "mcp_server" / "serve"
    stems = {path.name.split(".")[0] for path in folder.iterdir() if not path.name.startswith(".")}
    assert len(stems) == 2


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MCP_DETERMINISTIC", "maybe"),
        ("MCP_LOG_FORMAT", "xml"),
        ("MCP_LOG_LEVEL", "loud"),
        ("MCP_LOG_MAX_BYTES", "0"),
        ("MCP_LOG_KEEP_FILES", "-1"),
        ("MCP_RUNS_KEEP", "0"),
        ("MCP_RUNS_KEEP", "many"),
    ],
)
def test_a_bad_logging_setting_exits_2_naming_it(tmp_path: Path, name: str, value: str) -> None:
    """Bad input gets a clear error: a logging setting that cannot work stops the start-up."""
    result = run_serve(tmp_path, SESSION[:1], **{name: value})
    assert result.returncode == 2
    assert f"reason=setup_failed detail={name}".encode() in result.stderr
    assert result.stdout == b"" and b"Traceback" not in result.stderr


def test_a_runs_folder_that_cannot_be_written_exits_2(tmp_path: Path) -> None:
    """Bad input gets a clear error: MCP_RUNS_DIR pointing under a regular file."""
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = subprocess.run(
        server_command(),
        input=b"",
        capture_output=True,
        env=server_env(tmp_path, MCP_RUNS_DIR=str(blocker)),
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert b"reason=setup_failed detail=cannot write the event log" in result.stderr


def test_stderr_has_one_liners_for_failures_by_default_and_every_event_as_json_on_request(tmp_path: Path) -> None:
    """Issue 7: human-readable one-liners on stderr by default, JSON with --log-format json."""
    text = run_serve(tmp_path / "a", SESSION).stderr.decode()
    lines = [line for line in text.splitlines() if line.startswith("mcp:event frame")]
    assert len(lines) == 1 and "error=invalid_tool_input" in lines[0] and "request_id=4" in lines[0]
    as_json = run_serve(tmp_path / "b", SESSION, "--log-format", "json", MCP_LOG_LEVEL="info").stderr
    events = [jsonio.loads(line) for line in as_json.splitlines() if line.startswith(b"{")]
    incoming = [e for e in events if e["event"] == "frame" and e["direction"] == "client_to_server"]
    assert len(incoming) == len(SESSION)
    assert events == list(read_events(latest(tmp_path / "b" / "runs")))


def test_stdout_carries_nothing_but_the_replies_with_logging_on(tmp_path: Path) -> None:
    """Issue 2 §6: stdout carries JSON-RPC frames only; the events go to stderr and the file."""
    result = run_serve(tmp_path, SESSION, MCP_LOG_LEVEL="info")
    replies = [jsonio.loads(line) for line in result.stdout.splitlines()]
    assert [r["id"] for r in replies] == [1, 2, 3, 4]


def test_the_writer_never_drops_an_event_under_a_flood(tmp_path: Path) -> None:
    """Issue 7, Speed: a bounded queue with backpressure; every event reaches the file, in order."""
    settings = EventLogSettings(runs_dir=tmp_path, stream="flood", deterministic=True, max_bytes=1 << 30)
    log = EventLog(settings).open()  # one file: rotation is tested on its own
    total = 150_000  # past the queue's bound, so the producer has to wait for the writer
    for index in range(total):
        log.emit("policy", status="allowed", detail={"n": index})
    path = log.close()
    seqs = [event["seq"] for event in read_events(path)]
    assert seqs == list(range(1, total + 1))


def test_a_failing_sink_is_reported_and_the_log_goes_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A sink (stderr, metrics) that raises never stops the file being written."""

    def broken(event: Any) -> None:
        raise RuntimeError("sink down")

    log = EventLog(EventLogSettings(runs_dir=tmp_path, stream="s"), sinks=[broken]).open()
    log.emit("start", status="started")
    log.emit("stop", status="stopped")
    path = log.close()
    assert [e["event"] for e in read_events(path)] == ["start", "stop"]
    assert "reason=log_sink_failed" in capsys.readouterr().err


def test_a_response_shares_the_trace_id_of_its_request(tmp_path: Path, registry: SchemaRegistry) -> None:
    """Issue 7: trace_id from _meta.traceparent, else generated; a response belongs to its request's trace."""
    log = EventLog(EventLogSettings(runs_dir=tmp_path, stream="t", deterministic=True)).open()
    from mcp_server.serve.tools.catalog import builtin_tools

    handler = build_server(registry, ToolSet(builtin_tools({}, registry), registry), Settings(), events=log)
    session = Session()

    async def run() -> None:
        for frame in [SESSION[0], SESSION[2], {"jsonrpc": "2.0", "id": 9, "method": "ping"}]:
            await handler(Frame(raw=jsonio.dumps(frame), transport="test", session=session))

    asyncio.run(run())
    frames = [e for e in read_events(log.close()) if e["event"] == "frame"]
    events = [e for e in frames if e["direction"] == "client_to_server"]
    assert events[1]["trace_id"] == "0af7651916cd43dd8448eb211c80319c"
    generated = {events[0]["trace_id"], events[2]["trace_id"]}
    assert len(generated) == 2 and all(len(t) == 32 for t in generated)
    replies = [e for e in frames if e["direction"] == "server_to_client"]
    assert [e["trace_id"] for e in replies] == [e["trace_id"] for e in events]  # each its request's


def test_metrics_count_frames_violations_and_latency_over_http(tmp_path: Path) -> None:
    """Issue 7, Metrics: GET /metrics in the Prometheus text format."""
    with serving(tmp_path, ["--http", "127.0.0.1:0"]) as server:
        base = server.address.removesuffix("/mcp")
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        with httpx.Client(timeout=10) as client:
            for body in (b'{"jsonrpc":"2.0","id":1,"method":"ping"}', b'{"jsonrpc":"2.0","id":2,"method":"x/y"}'):
                client.post(server.address, content=body, headers=headers)
            deadline = time.monotonic() + 10
            while True:  # the writer thread feeds the metrics within its period
                response = client.get(base + "/metrics")
                if 'method="(other)",status="error"' in response.text or time.monotonic() > deadline:
                    break
            refused = client.post(base + "/metrics", content=b"{}", headers=headers)
    assert refused.status_code == 405 and refused.headers["allow"] == "GET"
    assert refused.json()["error"]["data"]["reason"] == CanonicalError.HTTP_METHOD_NOT_ALLOWED.reason
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert 'mcp_frames_total{direction="client_to_server",method="ping",status="ok"} 1.0' in text
    assert 'mcp_frames_total{direction="client_to_server",method="(other)",status="error"} 1.0' in text
    assert 'mcp_violations_total{rule="method_not_found"} 1.0' in text
    assert 'mcp_frame_duration_seconds_count{method="ping"} 1.0' in text
    assert "mcp_upstream_restarts_total 0.0" in text


def test_sigterm_completes_the_log_of_a_socket_server(tmp_path: Path) -> None:
    """Issue 4 and 7: a signal ends the run cleanly; its log is complete and `.latest` names it."""
    runs = tmp_path / "runs"
    with serving(tmp_path, ["--socket", str(tmp_path / "s.sock")], MCP_RUNS_DIR=str(runs)) as server:
        assert server.stop(signal.SIGINT) == 0
    events = list(read_events(latest(runs)))
    assert events[-1]["event"] == "stop" and events[-1]["transport"] == "socket"


def test_python_m_and_the_console_script_write_the_same_events(tmp_path: Path) -> None:
    """Issue 2 §1: `python -m mcp_server` is the same program as `mcp-server`."""
    script = Path(sys.executable).with_name("mcp-server")
    assert script.exists(), "the package's console script is installed beside the interpreter"
    env = server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "b"), MCP_DETERMINISTIC="1")
    via_script = subprocess.run(
        [str(script), "serve"], input=stdin_of(SESSION), capture_output=True, env=env, timeout=60, check=False
    )
    assert via_script.returncode == 0
    assert run_serve(tmp_path / "a", SESSION, "--deterministic").returncode == 0
    assert latest(tmp_path / "a" / "runs").read_bytes() == latest(tmp_path / "b").read_bytes()


def test_events_reach_the_file_even_when_the_writer_process_dies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 7: never drop an event; if the writer process dies, this process writes the rest."""
    log = EventLog(EventLogSettings(runs_dir=tmp_path, stream="w", deterministic=True)).open()
    for index in range(10):
        log.emit("policy", status="allowed", detail={"n": index})
    partial = log.path.with_name(log.path.name + ".partial")
    deadline = time.monotonic() + 30
    while len(partial.read_bytes().splitlines()) < 10:
        assert time.monotonic() < deadline, "the writer process wrote nothing"
        time.sleep(0.01)
    assert log._writer is not None
    log._writer.kill()
    log._writer.wait(10)
    for index in range(10, 20):
        log.emit("policy", status="allowed", detail={"n": index})
    path = log.close()
    assert [e["detail"]["n"] for e in read_events(path)] == list(range(20))
    assert "reason=log_writer_died" in capsys.readouterr().err


POLICY = """
[tools]
deny = ["diff_assets"]

[redaction]
keys = ["ssn"]
"""


def test_policy_denials_are_events_and_secrets_never_reach_the_log(tmp_path: Path, log_validator: Any) -> None:
    """Issues 6 and 7: a policy decision is an event of its own; what an event carries of the
    traffic (error details quoting a value) is redacted, and the event says so."""
    (tmp_path / "policy.toml").write_text(POLICY)
    secret = "sk_live_0123456789abcdefXYZ"
    frames = [
        initialize_frame("2025-11-25", 1),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "diff_assets", "arguments": {}}},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "get_schema", "arguments": {"name": {"api_key": secret}}},
        },
    ]
    result = run_serve(tmp_path, frames, "--deterministic", "--policy", str(tmp_path / "policy.toml"))
    assert result.returncode == 0, result.stderr
    text = latest(tmp_path / "runs").read_text()
    assert secret not in text and secret not in result.stderr.decode()
    events = [jsonio.loads(line) for line in text.splitlines()]
    assert all(violations(log_validator, e) == [] for e in events)
    [policy] = [e for e in events if e["event"] == "policy"]
    assert (policy["status"], policy["tool_id"], policy["policy_violation"]) == ("denied", "diff_assets", True)
    assert policy["error"]["code"] == "policy_denied"
    denied, invalid = [
        e
        for e in events
        if e["event"] == "frame" and e["request_id"] in (2, 3) and e["direction"] == "client_to_server"
    ]
    assert policy["seq"] < denied["seq"] and denied["policy_violation"] is True
    assert invalid["error"]["code"] == "invalid_tool_input" and invalid["redaction_applied"] is True
    assert "[REDACTED]" in jsonio.dumps(invalid["error"]["details"]).decode()


def test_a_policy_denial_is_one_event_whoever_tells_it(tmp_path: Path, registry: SchemaRegistry) -> None:
    """Issue 7: a denial the execution gate has told (a denied tool) is not told again by the frame
    it refuses; a denial the gate did not tell (a result over the tool's limit, after an approval
    that the gate did tell) is an event of its own, before the frame's."""
    policy = Policy.from_document(
        {"tools": {"deny": ["blocked"]}, "tool": [{"match": "big", "approval": True, "max_result_bytes": 10}]}
    )
    approvals = ApprovalBook.of(policy)
    gate = ExecutionGate(policy, approvals)
    log = EventLog(EventLogSettings(runs_dir=tmp_path, stream="p", deterministic=True)).open()
    gate.decisions = partial(log.emit, "policy")

    async def tool_result(arguments: Any, context: Any) -> dict[str, Any]:
        return {"text": "x" * 100}

    anything = registry.compile({"type": "object"})
    schemas = {
        name: ToolIO(tool_id=name, input_schema={}, output_schema=None, input=anything, output=None)
        for name in ("blocked", "big")
    }
    tools = ToolSet([Tool(name=n, title=n, description=n, run=tool_result) for n in schemas], registry, io=schemas)
    handler = build_server(registry, tools, Settings(), gate=gate, events=log)
    session = Session()
    session.negotiate("2025-11-25")
    session.initialized = True

    def frame_of(request_id: int, tool: str) -> Frame:
        document = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool}}
        return Frame(raw=jsonio.dumps(document), transport="test", session=session)

    async def drive() -> None:
        await handler(frame_of(1, "blocked"))
        calling = asyncio.ensure_future(handler(frame_of(2, "big")))
        while not approvals.pending():
            await asyncio.sleep(0.01)
        [held] = approvals.pending()
        approvals.decide(held.id, allow=True, arguments_sha256=held.arguments_sha256)
        await calling

    asyncio.run(drive())
    # The frames as they came in (each reply is an event of its own, in the other direction).
    events = [
        e
        for e in read_events(log.close())
        if e["event"] == "policy" or (e["event"] == "frame" and e["direction"] == "client_to_server")
    ]
    assert [(e["event"], e["status"], e["request_id"]) for e in events] == [
        ("policy", "denied", None),  # told by the gate
        ("frame", "error", 1),
        ("policy", "held", None),
        ("policy", "allowed", None),
        ("policy", "denied", 2),  # told by the frame: the gate had not told this one
        ("frame", "error", 2),
    ]
    assert [e["error"]["details"][0]["msg"] for e in events if e["status"] == "denied"] == [
        "tool_denied",
        "result_too_large",
    ]


def test_a_request_refused_before_the_chain_is_still_an_event(tmp_path: Path, log_validator: Any) -> None:
    """Issue 7: every frame is logged, also one the HTTP transport refuses itself (403 bad Host)."""
    runs = tmp_path / "runs"
    with serving(tmp_path, ["--http", "127.0.0.1:0"], MCP_RUNS_DIR=str(runs), MCP_DETERMINISTIC="1") as server:
        headers = {"Accept": "application/json", "Content-Type": "application/json", "Host": "evil.example"}
        refused = httpx.post(server.address, content=b'{"jsonrpc":"2.0","id":1,"method":"ping"}', headers=headers)
        assert refused.status_code == 403
        assert server.stop() == 0
    events = list(read_events(latest(runs)))
    assert all(violations(log_validator, e) == [] for e in events)
    [frame] = [e for e in events if e["event"] == "frame"]
    assert (frame["status"], frame["error"]["code"], frame["transport"]) == ("error", "host_not_allowed", "http")
    assert frame["bytes_out"] == len(refused.content)
    assert events[-1]["event"] == "stop"


def test_rows_reach_the_writer_in_batches_whatever_values_they_carry() -> None:
    """The pipe to the writer process: batches in order, each with its clock's anchor; rows arrive as
    JSON arrays, an enum as its value and a clock reading exactly as it was; a batch cut off by a
    dying producer ends the stream, nothing invented."""
    clock = 1234.567890123456789  # a perf_counter reading: every bit of it must come back
    first = [(clock, "start", None, {"status": "started"}), (0.6, "stop", None, {"status": "stopped"})]
    second = [(0.7, "policy", "s", {"direction": Direction.CLIENT_TO_SERVER, "errors": [{"path": ""}]})]
    whole = pack_rows(100.0, first) + pack_rows(100.5, second)
    for cut in (3, 1):  # inside the last batch, and just before its end of line
        stream = io.BytesIO(whole + pack_rows(101.0, first)[:-cut])
        batch = unpack_rows(stream)
        assert batch == (100.0, [list(row) for row in first])
        assert batch[1][0][0] == clock
        assert unpack_rows(stream) == (
            100.5,
            [[0.7, "policy", "s", {"direction": "client_to_server", "errors": [{"path": ""}]}]],
        )
        assert unpack_rows(stream) is None


def test_a_burst_of_answered_frames_reaches_the_file_whole_in_order_and_exact(
    tmp_path: Path, registry: SchemaRegistry, log_validator: Any
) -> None:
    """Issues 7 and 19: a burst of batches (the writer process derives each event from the few
    values the server hands it) ends with every frame and every reply in the file, numbered
    without a gap, each saying what was sent: its status, sizes, and its request's trace."""
    log = EventLog(EventLogSettings(runs_dir=tmp_path, stream="burst", deterministic=True)).open()
    from mcp_server.serve.tools.catalog import builtin_tools

    handler = build_server(registry, ToolSet(builtin_tools({}, registry), registry), Settings(), events=log)
    session = Session()
    calls = [SESSION[0], SESSION[1]]
    for index in range(300):  # past a batch of rows several times over: no pause lets a timer send them
        for asset, step in (({"type": "text", "text": "hi"}, index), ({"type": "text"}, None)):
            arguments = {"schema": "TextContent", "asset": asset}
            params = {"name": "validate_asset", "arguments": arguments, "_meta": {"agent_step": step}}
            calls.append({"jsonrpc": "2.0", "id": f"r{len(calls)}", "method": "tools/call", "params": params})
    sent: list[tuple[bytes, bytes | None]] = []

    async def burst() -> None:
        for call in calls:
            raw = jsonio.dumps(call)
            reply = await handler(Frame(raw=raw, transport="test", session=session))
            sent.append((raw, None if reply is None else reply.to_bytes()))

    asyncio.run(burst())
    events = list(read_events(log.close()))
    frames = [e for e in events if e["event"] == "frame"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert all(violations(log_validator, e) == [] for e in frames)
    answered = [(raw, reply) for raw, reply in sent if reply is not None]
    assert len(frames) == len(sent) + len(answered)
    incoming = [e for e in frames if e["direction"] == "client_to_server"]
    replies = {e["request_id"]: e for e in frames if e["direction"] == "server_to_client"}
    assert [e["bytes_in"] for e in incoming] == [len(raw) for raw, _ in sent]
    for call, event, (_, reply) in zip(calls[2:], incoming[2:], sent[2:], strict=True):
        assert (event["request_id"], event["tool_id"], event["bytes_out"]) == (call["id"], "validate_asset", 0)
        assert event["agent_step"] == call["params"]["_meta"]["agent_step"]
        assert reply is not None
        result = jsonio.loads(reply)["result"]
        assert event["status"] == ("tool_error" if result.get("isError") else "ok")
        answer = replies[call["id"]]
        assert (answer["kind"], answer["bytes_in"], answer["bytes_out"]) == ("response", 0, len(reply))
        assert (answer["trace_id"], answer["status"], answer["seq"]) == (
            event["trace_id"],
            event["status"],
            event["seq"] + 1,
        )
    assert {e["status"] for e in incoming[2:]} == {"ok", "tool_error"}


def test_a_frame_whose_meta_nests_deep_is_still_logged_and_one_past_the_reader_is_logged_refused(
    tmp_path: Path,
) -> None:
    """Issues 7 and 41, never drop an event: a request whose ``_meta`` nests 190 levels deep has its
    event with the trace and step it states; one nested past the reader (201 levels) is refused
    ``nested_too_deep`` and logged by the id its ends tell; the frames around them too; no traceback."""

    def meta(depth: int) -> bytes:
        deep = b'{"a":' * depth + b"0" + b"}" * depth
        return b'{"traceparent":"%s","agent_step":7,"deep":%s}' % (TRACEPARENT.encode(), deep)

    frames = [
        initialize_frame("2025-11-25", 1),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":%s}}' % meta(190),  # passed
        b'{"jsonrpc":"2.0","id":3,"method":"no/such/method","params":{"_meta":%s}}' % meta(190),  # refused
        b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"_meta":%s}}' % meta(300),  # past the reader
        {"jsonrpc": "2.0", "id": 4, "method": "ping"},
    ]
    result = run_serve(tmp_path, frames, "--deterministic")
    assert result.returncode == 0 and b"Traceback" not in result.stderr
    events = [e for e in read_events(latest(tmp_path / "runs")) if e["event"] == "frame"]
    incoming = {e["request_id"]: e for e in events if e["direction"] == "client_to_server"}
    assert sorted(k for k in incoming if k is not None) == [1, 2, 3, 4, 5]
    for request_id in (2, 3):
        assert (incoming[request_id]["trace_id"], incoming[request_id]["agent_step"]) == (TRACEPARENT.split("-")[1], 7)
    assert incoming[5]["error"]["code"] == CanonicalError.NESTED_TOO_DEEP.slug
    assert incoming[3]["error"]["code"] == CanonicalError.METHOD_NOT_FOUND.slug
