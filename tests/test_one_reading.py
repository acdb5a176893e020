"""One reading of every frame, whatever it holds (issue 41): a property test over every entry point.

Hypothesis writes ``tools/call`` frames no honest client sends (nested past the reader's limit, wide,
a member named twice anywhere, numbers no double holds) and sends them, one at a time, through the
STDIO, Unix socket and HTTP fronts, an aggregate on STDIO and HTTP, both era bridges and ``serve``;
``check``, ``doctor`` and the library read such frames too. Every request is answered (by its id, or
by none when its ``id`` is the name given twice), nothing exits, no traceback is written, and every
line a server is delivered reads the same to a first-wins and a last-wins parser (a tap or the
server itself, ``tests/upstreams/two_readers.py``, records any that does not, and any ``pay`` whose
exact amount its schema refuses). Real processes throughout; the official SDK's conformance target
is the upstream of the bridge to 2026-07-28.
"""

from __future__ import annotations

import json
import queue
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings

from mcp_server.core import jsonio
from mcp_server.core.errors import CanonicalError
from mcp_server.validation import validate_message

from .conftest import ROOT, initialize_frame, server_env
from .gateway.gateways import HEADERS, TARGET, body_of, started_gateway
from .hostile_frames import Frame, first_and_last, tool_calls

WAIT = 30.0
READERS = [sys.executable, str(ROOT / "tests" / "upstreams" / "two_readers.py")]
VERSION = "2025-11-25"
EXAMPLES = 40
PROPERTY = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=True,
    phases=(Phase.explicit, Phase.generate),  # no shrinking: each try through a real process may wait WAIT
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
Ask = Callable[[Frame], dict[str, Any]]


def member_of(reply: dict[str, Any]) -> CanonicalError | None:
    error = reply.get("error")
    if not isinstance(error, dict):
        return None
    return next((m for m in CanonicalError if m.mcp_code == error["code"] and m.message == error["message"]), None)


def judged(frame: Frame, reply: dict[str, Any], raw_reply: bytes) -> None:
    """One answer, read the same by both parsers, naming the request (or none, when its id is the
    name given twice); a frame that reads as two documents, or nests past the reader, is refused so."""
    first, last = first_and_last(raw_reply)
    assert first == last, raw_reply[:300]
    if frame.id_known:
        assert reply.get("id") == frame.request_id, (frame.raw[:200], raw_reply[:300])
    else:
        assert reply.get("id") is None, raw_reply[:300]
    if frame.depth > jsonio.MAX_READ_DEPTH:  # (read no further: a name given twice deeper is not seen)
        assert member_of(reply) is CanonicalError.NESTED_TOO_DEEP, raw_reply[:300]
    elif frame.twice is not None:
        assert member_of(reply) is CanonicalError.DUPLICATE_MEMBER_NAME, raw_reply[:300]


class Lines:
    """A raw NDJSON client: frames out one at a time, each answer awaited (what else comes is skipped)."""

    def __init__(self, write: Callable[[bytes], None], read: Callable[[], bytes]) -> None:
        self._write = write
        self._lines: queue.Queue[bytes] = queue.Queue()
        self._reading = threading.Thread(target=self._pump, args=(read,), daemon=True)
        self._reading.start()

    def ended(self) -> None:
        """Wait for the front's output to end (its reader thread gone)."""
        self._reading.join(WAIT)

    def _pump(self, read: Callable[[], bytes]) -> None:
        while line := read():
            self._lines.put(line)
        self._lines.put(b"")

    def next(self) -> bytes:
        try:
            line = self._lines.get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError("no answer in time") from None
        assert line, "the front closed its output"
        return line

    def send(self, raw: bytes) -> None:
        self._write(raw + b"\n")

    def answer(self, frame: Frame) -> dict[str, Any]:
        self.send(frame.raw)
        while True:
            line = self.next()
            reply = json.loads(line)
            if "method" not in reply:
                judged(frame, reply, line)
                return reply

    def open(self, version: str = VERSION, *, listed: tuple[str, ...] = ("tools/list",)) -> None:
        self.send(json.dumps(initialize_frame(version, 0)).encode())
        assert "result" in json.loads(self.next())
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        for number, method in enumerate(listed, 1):
            self.send(json.dumps({"jsonrpc": "2.0", "id": f"list-{number}", "method": method}).encode())
            assert "result" in json.loads(self.next())


def drive(ask: Ask, examples: int = EXAMPLES, tools: tuple[str, ...] = ("echo", "pay")) -> None:
    """Hypothesis's frames through ``ask``, each judged as it is answered."""

    @settings(PROPERTY, max_examples=examples)
    @given(tool_calls(tools))
    def one(frame: Frame) -> None:
        ask(frame)

    one()


def clean(log: Path, stderr: str) -> None:
    """What the servers read: no line two parsers read apart, no pay over its schema; no traceback."""
    found = log.read_text() if log.exists() else ""
    assert found == "", found[:2000]
    assert "Traceback" not in stderr, stderr[-3000:]


@contextmanager
def stdio_gateway(tmp_path: Path, *arguments: str) -> Iterator[tuple[Lines, subprocess.Popen[bytes], Path]]:
    stderr = tmp_path / "gateway.stderr"
    with stderr.open("wb") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "mcp_server", "gateway", *arguments],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            env=server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs")),
        )
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout

    def write(raw: bytes) -> None:
        stdin.write(raw)
        stdin.flush()

    try:
        yield Lines(write, stdout.readline), process, stderr
    finally:
        stdin.close()
        process.wait(WAIT)
        stdout.close()


def servers_file(tmp_path: Path, log: Path) -> Path:
    path = tmp_path / "servers.json"
    table = {name: {"command": READERS[0], "args": [*READERS[1:], str(log)]} for name in ("a", "b")}
    path.write_text(json.dumps({"mcpServers": table}))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("front", ["single", "aggregate"])
def test_every_hostile_frame_through_a_stdio_gateway_is_answered_and_read_as_judged(tmp_path: Path, front: str) -> None:
    """Issue 41: one reading on the STDIO front, of one server and of an aggregate of two (whose
    calls it rebuilds under the servers' own names)."""
    log = tmp_path / "readers.log"
    arguments = ["--servers", str(servers_file(tmp_path, log))] if front == "aggregate" else ["--", *READERS, str(log)]
    tools = ("a__echo", "a__pay", "b__pay") if front == "aggregate" else ("echo", "pay")
    with stdio_gateway(tmp_path, *arguments) as (lines, process, stderr):
        lines.open()
        drive(lines.answer, tools=tools)
        assert process.poll() is None, "the gateway exited"
    clean(log, stderr.read_text())


@pytest.mark.slow
def test_every_hostile_frame_through_the_unix_socket_front_is_answered_and_read_as_judged(tmp_path: Path) -> None:
    """Issue 41: one reading on the Unix socket front."""
    log, path = tmp_path / "readers.log", tmp_path / "gateway.sock"
    stderr = tmp_path / "gateway.stderr"
    arguments = ("--listen", f"unix:{path}", "--", *READERS, str(log))
    with (
        started_gateway(tmp_path, *arguments, stderr=stderr) as (process, _),
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection,
    ):
        connection.connect(str(path))
        reader = connection.makefile("rb")
        lines = Lines(connection.sendall, reader.readline)
        lines.open()
        drive(lines.answer)
        assert process.poll() is None, "the gateway exited"
        connection.shutdown(socket.SHUT_RDWR)  # (its reader sees the end: the file closes unblocked)
        lines.ended()
        reader.close()
    clean(log, stderr.read_text())


class HttpClient:
    """A raw Streamable HTTP client of one session, frames posted as their bytes."""

    def __init__(self, url: str) -> None:
        self.url, self.client = url, httpx.Client(timeout=WAIT)
        opened = self.client.post(url, json=initialize_frame(VERSION, 0), headers=HEADERS)
        assert opened.status_code == 200, opened.text
        self.headers = {**HEADERS, "Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": VERSION}
        self.client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=self.headers)
        listed = self.client.post(url, json={"jsonrpc": "2.0", "id": "l", "method": "tools/list"}, headers=self.headers)
        assert "result" in body_of(listed), listed.text

    def answer(self, frame: Frame) -> dict[str, Any]:
        response = self.client.post(self.url, content=frame.raw, headers=self.headers)
        assert response.status_code < 500, response.text[:500]
        reply = body_of(response)
        raw = (
            jsonio.dumps(reply)
            if response.headers.get("content-type", "").startswith("text/event-stream")
            else response.content
        )
        judged(frame, reply, raw)
        return reply


@pytest.mark.slow
@pytest.mark.parametrize("front", ["single", "aggregate"])
def test_every_hostile_frame_through_an_http_gateway_is_answered_and_read_as_judged(tmp_path: Path, front: str) -> None:
    """Issue 41: one reading on the HTTP front (of one server, and of an aggregate: never a 500)."""
    log, stderr = tmp_path / "readers.log", tmp_path / "gateway.stderr"
    upstream = ["--servers", str(servers_file(tmp_path, log))] if front == "aggregate" else ["--", *READERS, str(log)]
    tools = ("a__echo", "a__pay", "b__pay") if front == "aggregate" else ("echo", "pay")
    with started_gateway(tmp_path, "--listen", "http://127.0.0.1:0/mcp", *upstream, stderr=stderr) as (process, url):
        client = HttpClient(url)
        try:
            drive(client.answer, tools=tools)
        finally:
            client.client.close()
        assert process.poll() is None, "the gateway exited"
    clean(log, stderr.read_text())


@pytest.mark.slow
def test_every_hostile_frame_through_the_bridge_to_2026_07_28_is_answered_and_read_as_judged(tmp_path: Path) -> None:
    """Issue 41: one reading through ``--bridge 2026-07-28`` (a handshake-era client, the SDK's
    stateless conformance target behind a tap that reads what is delivered twice)."""
    log = tmp_path / "readers.log"
    modern = [*TARGET, "--era", "modern"]
    with stdio_gateway(tmp_path, "--bridge", "2026-07-28", "--", *READERS, str(log), "--", *modern) as (
        lines,
        process,
        stderr,
    ):
        lines.open()
        drive(lines.answer, examples=25, tools=("test_simple_text",))
        assert process.poll() is None, "the gateway exited"
    clean(log, stderr.read_text())


META = b'{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'


def _stateless(frame: Frame) -> Frame:
    """``frame`` as a 2026-07-28 client sends it: its params carrying the per-request ``_meta``."""
    meta = b'"_meta":' + META + b","
    at = frame.raw.index(b'"params":{') + len(b'"params":{')
    return Frame(frame.raw[:at] + meta + frame.raw[at:], frame.request_id, frame.id_known, frame.twice, frame.depth)


@pytest.mark.slow
def test_every_hostile_frame_through_the_bridge_to_2025_11_25_is_answered_and_read_as_judged(tmp_path: Path) -> None:
    """Issue 41: one reading through ``--bridge 2025-11-25`` (a 2026-07-28 client, a handshake server)."""
    log = tmp_path / "readers.log"
    with stdio_gateway(tmp_path, "--bridge", "2025-11-25", "--", *READERS, str(log)) as (lines, process, stderr):
        lines.send(b'{"jsonrpc":"2.0","id":"l","method":"tools/list","params":{"_meta":%s}}' % META)
        assert "result" in json.loads(lines.next())
        drive(lambda frame: lines.answer(_stateless(frame)), examples=25)
        assert process.poll() is None, "the gateway exited"
    clean(log, stderr.read_text())


@pytest.mark.slow
def test_every_hostile_frame_to_serve_is_answered(tmp_path: Path) -> None:
    """Issue 41: ``serve``'s own tools meet the same frames: an answer each, no exit, no traceback."""
    stderr = tmp_path / "serve.stderr"
    with stderr.open("wb") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "mcp_server", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            env=server_env(tmp_path),
        )
    assert process.stdin is not None and process.stdout is not None
    stdin = process.stdin

    def write(raw: bytes) -> None:
        stdin.write(raw)
        stdin.flush()

    lines = Lines(write, process.stdout.readline)
    lines.open()
    drive(lines.answer, tools=("validate_asset", "diff_assets"))
    assert process.poll() is None, "serve exited"
    stdin.close()
    process.wait(WAIT)
    process.stdout.close()
    assert "Traceback" not in stderr.read_text()


def _reply_line(frame: Frame) -> bytes:
    head = jsonio.dumps({"jsonrpc": "2.0", "id": frame.request_id})[:-1]
    return head + b',"result":{"content":[],"isError":false}}'


@pytest.mark.slow
def test_check_reads_every_hostile_frame_of_a_capture_as_the_gateway_does(tmp_path: Path) -> None:
    """Issue 41: ``check`` on a capture of such frames (and the server's replies) names each frame
    refused by its line, as the live gateway refuses it; no traceback; exit 1 (violations)."""
    drawn: dict[str, Frame] = {}  # one frame per id: an id in flight twice is another rule's
    drive(lambda frame: drawn.setdefault(repr(frame.request_id), frame) and {}, examples=60)
    frames = list(drawn.values())
    handshake = [
        json.dumps(initialize_frame(VERSION, 0)).encode(),
        b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}',
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
    ]
    lines = [*handshake]
    for frame in frames:
        lines.append(frame.raw)
        if frame.id_known and frame.twice is None and frame.depth <= jsonio.MAX_READ_DEPTH:
            lines.append(_reply_line(frame))
    capture = tmp_path / "capture.ndjson"
    capture.write_bytes(b"\n".join(lines) + b"\n")
    run = subprocess.run(
        [sys.executable, "-m", "mcp_server", "check", "--format", "json", str(capture)],
        capture_output=True,
        env=server_env(tmp_path),
        timeout=WAIT * 4,
    )
    assert run.returncode == 1, run.stderr.decode()[-2000:]
    assert "Traceback" not in run.stderr.decode()
    found = json.loads(run.stdout)["violations"]
    refused = sum(1 for frame in frames if frame.twice is not None or frame.depth > jsonio.MAX_READ_DEPTH)
    assert found.get("duplicate_member_name", 0) + found.get("nested_too_deep", 0) == refused, found


def test_the_library_reads_every_hostile_frame_once_and_never_raises() -> None:
    """Issue 41: ``mcp_server.validation`` judges such frames as the chain does, a result for each."""

    def judge(frame: Frame) -> dict[str, Any]:
        result = validate_message(frame.raw, version=VERSION)
        if frame.depth > jsonio.MAX_READ_DEPTH:
            assert result.reason == "nested_too_deep", result
        elif frame.twice is not None:
            assert result.reason == "duplicate_member_name", result
        return {}

    drive(judge, examples=200)


@pytest.mark.slow
def test_doctor_reads_a_servers_hostile_tool_list_once_and_says_so(tmp_path: Path) -> None:
    """Issue 41: ``doctor`` before a server whose ``tools/list`` holds a name twice, nests past the
    reader or numbers no double holds: a verdict (exit 1), the finding named, no traceback."""

    def probe(frame: Frame) -> dict[str, Any]:
        at = frame.raw.index(b'"arguments":') + len(b'"arguments":')
        listed = b'[{"name":"t","inputSchema":' + frame.raw[at:-2] + b"}]"  # the frame's arguments as a schema
        run = subprocess.run(
            [sys.executable, "-m", "mcp_server", "doctor", "--format", "json", "--", *READERS, str(tmp_path / "log")],
            capture_output=True,
            env=server_env(tmp_path, TWO_READERS_TOOLS=listed.decode()),
            timeout=WAIT * 2,
        )
        assert run.returncode in (0, 1), run.stderr.decode()[-2000:]
        assert "Traceback" not in run.stderr.decode() + run.stdout.decode()
        if frame.twice is not None or frame.depth > jsonio.MAX_READ_DEPTH:
            assert run.returncode == 1
        return {}

    drive(probe, examples=8)


@pytest.mark.slow
def test_a_servers_reply_naming_a_member_twice_reaches_the_client_as_an_error_read_alike(tmp_path: Path) -> None:
    """Issue 41, server → client: a tool result whose structured content names a member twice (the
    first value against the outputSchema, the last for it) is answered in its place, read the same by
    both parsers; an honest reply to the next call comes through."""
    log = tmp_path / "readers.log"
    hostile = '{"content":[],"structuredContent":{"a":"first","a":"last"}}'
    with stdio_gateway(tmp_path, "--", *READERS, str(log)) as (lines, process, stderr):
        lines.open()
        call = {"name": "reply", "arguments": {"raw": hostile}}
        lines.send(json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": call}).encode())
        raw = lines.next()
        first, last = first_and_last(raw)
        assert first == last and last["id"] == 5 and last["error"]["data"]["rule"] == "duplicate_member_name", raw
        echo = {"name": "echo", "arguments": {"b": 1}}
        lines.send(json.dumps({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": echo}).encode())
        assert json.loads(lines.next())["result"]["content"][0]["text"] == '{"b": 1}'
        assert process.poll() is None
    clean(log, stderr.read_text())


def test_a_tool_list_naming_a_member_twice_is_not_locked(tmp_path: Path) -> None:
    """Issue 41: ``lock`` pins no listing that reads as two documents (exit 1, nothing written)."""
    listed = '[{"name":"t","inputSchema":{"type":"object","a":1,"a":2}}]'
    output = tmp_path / "mcp.lock.json"
    run = subprocess.run(
        [sys.executable, "-m", "mcp_server", "lock", "--output", str(output), "--", *READERS, str(tmp_path / "log")],
        capture_output=True,
        env=server_env(tmp_path, TWO_READERS_TOOLS=listed),
        timeout=WAIT * 2,
    )
    assert run.returncode == 1, run.stderr.decode()
    assert b"reason=not_locked" in run.stderr and b"appears twice" in run.stderr
    assert not output.exists()
