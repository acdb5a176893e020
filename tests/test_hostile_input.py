"""Hostile and careless input (issue 30): what an attacker or a careless operator sends is answered
without a freeze, a leaked secret, a self-approved call or unbounded memory.

Real processes: the gateway in front of real upstreams (the SDK's, and the scripted raw one for
frames no well-behaved server sends), `serve --http` in front of a real HTTP backend on loopback,
real clients (raw NDJSON, httpx). One test per row of the issue's table that this module covers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import signal
import stat
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcp_server.core.errors import CanonicalError

from .conftest import ROOT, initialize_frame, server_env
from .gateway.gateways import SDK_UPSTREAM, gateway_command, started_gateway
from .http_backend import Backend, http_backend
from .http_backend import serving as serving_http
from .servers import Running, serving

WAIT = 30.0
SCRIPTED = [sys.executable, str(ROOT / "tests" / "upstreams" / "scripted_server.py")]


class Peer:
    """A raw NDJSON client on `mcp-server gateway OPTIONS -- UPSTREAM` over STDIO; the gateway's stderr
    goes to a file (a pipe nobody reads would stop a gateway that writes much there)."""

    def __init__(self, tmp_path: Path, *options: str, upstream: list[str] = SDK_UPSTREAM, **env: str) -> None:
        self.stderr_path = tmp_path / f"gateway-{time.monotonic_ns()}.stderr"
        self.pending = b""
        self.runs = tmp_path / "runs"
        with self.stderr_path.open("wb") as stderr:
            self.process = subprocess.Popen(
                gateway_command(*options, upstream=upstream),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=server_env(tmp_path, MCP_RUNS_DIR=str(self.runs), **env),
            )

    def send(self, frame: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(frame).encode() + b"\n")
        self.process.stdin.flush()

    def receive(self, seconds: float = WAIT) -> dict[str, Any]:
        """The gateway's next line on stdout, waiting at most ``seconds`` for it (read through a
        buffer of this peer's own: a file object's would hide a line already read from ``select``)."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + seconds
        while b"\n" not in self.pending:
            ready, _, _ = select.select([self.process.stdout], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"no answer within {seconds} s"
            data = os.read(self.process.stdout.fileno(), 1 << 20)
            assert data, "the gateway closed stdout"
            self.pending += data
        line, _, self.pending = self.pending.partition(b"\n")
        return dict(json.loads(line))

    def call(self, frame: dict[str, Any]) -> dict[str, Any]:
        self.send(frame)
        return self.receive()

    def handshake(self, version: str = "2025-11-25") -> dict[str, Any]:
        reply = self.call(initialize_frame(version, 1))
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def finish(self) -> tuple[int, str]:
        """End of input; the exit status and what the gateway wrote on stderr."""
        if self.process.poll() is None:
            self.process.communicate(b"", timeout=WAIT)
        return self.process.wait(WAIT), self.stderr_path.read_text(errors="replace")

    def report(self) -> dict[str, Any]:
        [path] = sorted((self.runs / "mcp_server" / "gateway").glob("*-report.json"))
        return dict(json.loads(path.read_text()))


def cpu_seconds(pid: int) -> float:
    """User and system CPU time a live process has used so far (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mib(pid: int) -> float:
    """A live process's peak resident memory (VmHWM), MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


# -- row 1: linear-time redaction ----------------------------------------------------------------


def test_row1_a_quarter_mebibyte_id_is_answered_at_once_and_the_next_frame_too(tmp_path: Path) -> None:
    """Issue 30 row 1: every redaction pattern runs in linear time, so a frame with a 256 KiB string
    id (an unknown method: a violation the report redacts) is answered, and the frame behind it,
    within the wait; the quadratic e-mail pattern took 43 s of CPU for 128 KiB."""
    peer = Peer(tmp_path)
    try:
        peer.handshake()
        before = cpu_seconds(peer.process.pid)
        long_id = "a" * (256 * 1024)
        peer.send({"jsonrpc": "2.0", "id": long_id, "method": "no/such/method"})
        peer.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
        refused = peer.receive()
        pinged = peer.receive()
        spent = cpu_seconds(peer.process.pid) - before
    finally:
        status, stderr = peer.finish()
    assert refused["id"] == long_id and refused["error"]["code"] == CanonicalError.METHOD_NOT_FOUND.mcp_code
    assert pinged == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert status == 0, stderr
    print(f"row 1: 256 KiB id through the gateway: {spent * 1000:.0f} ms of CPU")


# -- an HTTP backend that answers too much ---------------------------------------------------------

HUGE_BYTES = 200 << 20
BOMB_BYTES = 512 << 20


def _gzip_bomb() -> bytes:
    """``{"data": "000…"}``, BOMB_BYTES of it once decompressed, gzip-compressed (about half a MiB)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b"0" * (1 << 20)
    parts = [packer.compress(b'{"data": "')]
    parts += [packer.compress(chunk) for _ in range(BOMB_BYTES >> 20)]
    parts += [packer.compress(b'"}'), packer.flush()]
    return b"".join(parts)


class FloodHandler(BaseHTTPRequestHandler):
    """``/huge``: a JSON body of HUGE_BYTES, streamed; ``/bomb``: the gzip bomb; ``/small``: a little JSON."""

    protocol_version = "HTTP/1.1"
    bomb = b""

    def do_GET(self) -> None:
        try:
            if self.path.startswith("/huge"):
                self._send(200, {"Content-Length": str(HUGE_BYTES + 12)})
                self.wfile.write(b'{"data": "')
                chunk = b"a" * (1 << 20)
                for _ in range(HUGE_BYTES >> 20):
                    self.wfile.write(chunk)
                self.wfile.write(b'"}')
            elif self.path.startswith("/bomb"):
                self._send(200, {"Content-Encoding": "gzip", "Content-Length": str(len(self.bomb))})
                self.wfile.write(self.bomb)
            else:
                body = b'{"ok": true}'
                self._send(200, {"Content-Length": str(len(body))})
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading: what it should do

    def handle_one_request(self) -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a client that cut the body short
            super().handle_one_request()

    def _send(self, status: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def _tool(tool_id: str, path: str) -> dict[str, Any]:
    return {
        "tool_id": tool_id,
        "name": tool_id,
        "description": f"GET {path}",
        "args": {"type": "object"},
        "method": "GET",
        "path": path,
    }


FLOOD_POLICY = """
[[tool]]
match = "bomb"
max_result_bytes = 65536
"""


@pytest.fixture(scope="module")
def flooded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """`serve --http` with HTTP tools whose backend answers 200 MiB, a gzip bomb, or a little."""
    tmp_path = tmp_path_factory.mktemp("flood")
    FloodHandler.bomb = _gzip_bomb()
    (tmp_path / "tools.json").write_text(
        json.dumps({"tools": [_tool("huge", "/huge"), _tool("bomb", "/bomb"), _tool("small", "/small")]})
    )
    (tmp_path / "policy.toml").write_text(FLOOD_POLICY)
    with serving_http(FloodHandler, threading.Event()) as port:
        args = ["--http", "127.0.0.1:0", "--tools", str(tmp_path / "tools.json")]
        args += ["--policy", str(tmp_path / "policy.toml")]
        with serving(tmp_path, args, MCP_EXECUTION_BASE_URL=f"http://127.0.0.1:{port}") as running:
            yield running


def execute(server: Running, tool_id: str, args: dict[str, Any] | None = None) -> httpx.Response:
    body = {"session_id": "s", "tool_id": tool_id, "args": args or {}, "trace": {"trace_id": "t"}}
    return httpx.post(server.address.removesuffix("/mcp") + "/execute", json=body, timeout=WAIT)


def test_row1_a_200_mib_tool_result_is_cut_at_the_limit_and_serve_stays_responsive(flooded: Running) -> None:
    """Issue 30 row 1: what is read from an HTTP tool stops at the frame limit (1 MiB): a 200 MiB
    result is refused as too large within the wait, memory stays flat, and the next call is served
    (it kept `serve` at 100 % CPU for 10 minutes, deaf to SIGTERM)."""
    pid = flooded.process.pid
    before = cpu_seconds(pid)
    refused = execute(flooded, "huge")
    spent = cpu_seconds(pid) - before
    assert refused.status_code == CanonicalError.UPSTREAM_FAILURE.http_status, refused.text
    assert refused.json()["error"]["details"][0]["msg"] == "response_too_large"
    assert execute(flooded, "small").json()["result"]["body"] == {"ok": True}
    peak = peak_rss_mib(pid)
    assert peak < 256, f"serve peaked at {peak:.0f} MiB"
    print(f"row 1: 200 MiB tool result: {spent * 1000:.0f} ms of CPU, peak RSS {peak:.0f} MiB")


# -- row 5, HTTP tools: bounded memory ------------------------------------------------------------


def test_row5_a_gzip_bomb_from_an_http_tool_is_cut_at_max_result_bytes_decompressed(flooded: Running) -> None:
    """Issue 30 row 5: an HTTP tool's response is read as a stream and cut at the limit on the
    decompressed bytes: a 512 MiB gzip bomb under `max_result_bytes = 65536` is refused without
    ever being inflated (it reached 604 MB before, checked after the download)."""
    pid = flooded.process.pid
    refused = execute(flooded, "bomb")
    assert refused.status_code == CanonicalError.POLICY_DENIED.http_status, refused.text
    error = refused.json()["error"]
    assert error["code"] == CanonicalError.POLICY_DENIED.slug and error["details"][0]["msg"] == "result_too_large"
    peak = peak_rss_mib(pid)
    assert peak < 256, f"serve peaked at {peak:.0f} MiB"
    print(f"row 5: gzip bomb ({BOMB_BYTES >> 20} MiB inflated): peak RSS {peak:.0f} MiB")


# -- rows 7 and 8: HTTP tools' credentials and paths -----------------------------------------------

TOOL_KEY = "key-for-the-backend-only-7c1e"


@pytest.fixture(scope="module")
def backends() -> Iterator[tuple[Backend, Backend]]:
    """Two real HTTP backends on loopback: the tools' own, and another service on another port."""
    with http_backend() as own, http_backend() as other:
        yield own, other


@pytest.fixture(scope="module")
def tooled(tmp_path_factory: pytest.TempPathFactory, backends: tuple[Backend, Backend]) -> Iterator[Running]:
    """`serve --http` with HTTP tools on the first backend: one sends its credential as X-Api-Key."""
    tmp_path = tmp_path_factory.mktemp("tooled")
    redirect = _tool("redirect_out", "/redirect") | {"credential": {"header": "X-Api-Key", "env": "TOOL_KEY"}}
    item = _tool("echo_item", "/echo/{item}") | {"credential": {"header": "X-Api-Key", "env": "TOOL_KEY"}}
    (tmp_path / "tools.json").write_text(json.dumps({"tools": [redirect, item]}))
    args = ["--http", "127.0.0.1:0", "--tools", str(tmp_path / "tools.json")]
    with serving(tmp_path, args, MCP_EXECUTION_BASE_URL=backends[0].url, TOOL_KEY=TOOL_KEY) as running:
        yield running


def test_row7_a_redirect_to_another_port_of_the_same_host_never_carries_the_credential(
    tooled: Running, backends: tuple[Backend, Backend]
) -> None:
    """Issue 30 row 7: an HTTP tool's credential goes only to the origin it was given for; a redirect
    that changes scheme, host or port drops it (another port of the same host got the key)."""
    own, other = backends
    other.received.clear()
    answered = execute(tooled, "redirect_out", {"to": f"{other.url}/echo"})
    assert answered.json()["status"] == "success", answered.text
    assert own.received[-1]["headers"]["x-api-key"] == TOOL_KEY  # the tool's own origin has it
    [arrived] = other.received
    assert "x-api-key" not in arrived["headers"]
    same = execute(tooled, "redirect_out", {"to": f"{own.url}/echo"})  # the same origin keeps it
    assert same.json()["status"] == "success" and own.received[-1]["headers"]["x-api-key"] == TOOL_KEY


@pytest.mark.parametrize("item", ["..", ".", ""])
def test_row8_a_path_argument_that_is_no_segment_is_refused_and_nothing_is_sent(
    tooled: Running, backends: tuple[Backend, Backend], item: str
) -> None:
    """Issue 30 row 8: a path argument `..` (or `.`, or nothing) is refused as invalid input before any
    call goes out (`..` was `GET /` on the allowed host, with the tool's credential)."""
    own, _ = backends
    sent = len(own.received)
    refused = execute(tooled, "echo_item", {"item": item})
    assert refused.status_code == CanonicalError.INVALID_TOOL_INPUT.http_status, refused.text
    assert refused.json()["error"]["details"] == [{"path": "/item", "msg": "not_a_path_segment"}]
    assert len(own.received) == sent


@pytest.mark.parametrize(
    ("item", "path"), [("a/b", "/echo/a%2Fb"), ("%2e%2e", "/echo/%252e%252e"), ("x y", "/echo/x%20y")]
)
def test_row8_a_path_argument_is_one_percent_encoded_segment(
    tooled: Running, backends: tuple[Backend, Backend], item: str, path: str
) -> None:
    """Issue 30 row 8: a path argument fills one path segment, percent-encoded: a `/` or an encoded
    dot in it never makes a segment of its own."""
    own, _ = backends
    answered = execute(tooled, "echo_item", {"item": item})
    assert answered.json()["status"] == "success", answered.text
    assert own.received[-1]["path"] == path


# -- rows 2 and 11: no secret in any output --------------------------------------------------------

S_ARGUMENT = "hunter2"  # too short for its schema: the violation's message quotes it
S_KEYS = {
    "db_password": "pw-db-5f3a9c",
    "accessToken": "at-9d8e7f6a",
    "private_key": "pk-0a1b2c3d",
    "jwt": "jw-4e5f6a7b",
}
S_RESULT = "rs-7a6b5c4d3e"  # in a result that breaks the tool's outputSchema
S_ERROR = "er-1f2e3d4c5b"  # in an error, and in a reply the upstream got wrong
S_COMMAND = "cm-9z8y7x6w5v"  # on the upstream's command line: `--token S_COMMAND`
SECRETS = (S_ARGUMENT, *S_KEYS.values(), S_RESULT, S_ERROR, S_COMMAND)

LOGIN = {
    "name": "login",
    "description": "Log in",
    "inputSchema": {
        "type": "object",
        "properties": {"password": {"type": "string", "minLength": 12}, **{k: {"type": "string"} for k in S_KEYS}},
        "required": ["password"],
    },
    "outputSchema": {"type": "object", "properties": {"api_key": {"type": "integer"}}, "required": ["api_key"]},
}
INITIALIZED = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "secret-upstream", "version": "1"},
}
# What the upstream answers, by request id: frames no well-behaved server sends, each holding a secret.
SCRIPT = [
    [0, [{"jsonrpc": "2.0", "id": 0, "result": INITIALIZED}]],
    [1, [{"jsonrpc": "2.0", "id": 1, "result": {"tools": [LOGIN]}}]],
    [
        3,
        [
            {
                "jsonrpc": "2.0",
                "id": 3,
                "result": {
                    "content": [{"type": "text", "text": json.dumps({"api_key": S_RESULT})}],
                    "structuredContent": {"api_key": S_RESULT},
                },
            }
        ],
    ],
    [4, [{"jsonrpc": "2.0", "id": 4, "error": {"code": -32001, "message": f"refused: token={S_ERROR}"}}]],
    [5, [{"jsonrpc": "2.0", "id": 5, "result": {"_meta": f"refused: password={S_ERROR}"}}]],  # _meta: an object
]
CLIENT_FRAMES = [
    initialize_frame("2025-11-25", 0),
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "login", "arguments": {"password": S_ARGUMENT, **S_KEYS}},
    },
    {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "login", "arguments": {"password": "x" * 12}},
    },
    {"jsonrpc": "2.0", "id": 4, "method": "ping"},
    {"jsonrpc": "2.0", "id": 5, "method": "ping"},
]


def http_post(client: httpx.Client, url: str, frame: dict[str, Any], session: str | None) -> httpx.Response:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if session is not None:
        headers["Mcp-Session-Id"] = session
    return client.post(url, json=frame, headers=headers, timeout=WAIT)


@contextlib.contextmanager
def gateway_over_http(tmp_path: Path, upstream: list[str], *options: str, **env: str) -> Iterator[str]:
    """`mcp-server gateway --listen http://127.0.0.1:0/mcp OPTIONS -- UPSTREAM`, its stderr in a file;
    its URL (from the ready file); stopped on the way out."""
    arguments = ["--listen", "http://127.0.0.1:0/mcp", *options, "--", *upstream]
    with started_gateway(tmp_path, *arguments, env=env, stderr=tmp_path / "gateway.stderr") as (_, url):
        yield url


def run_cli(tmp_path: Path, *args: str) -> str:
    """``mcp-server ARGS``: what it wrote, stdout and stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "mcp_server", *args],
        capture_output=True,
        text=True,
        env=server_env(tmp_path),
        timeout=WAIT,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout + done.stderr


def test_rows2_11_no_planted_secret_reaches_any_output(tmp_path: Path) -> None:
    """Issue 30 rows 2 and 11: secrets planted in a call's arguments (a value too short for its schema,
    and under `db_password`, `accessToken`, `private_key`, `jwt`), in an invalid result, in an invalid
    error and on the upstream's command line never reach the event log, stderr (events, OTel spans),
    the report, its page, `check`'s JSON, JUnit, text and HTML (on the run's log and on a capture of the
    same frames) or the metrics; the log, the report and the page are the owner's only (0600)."""
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    upstream = [*SCRIPTED, str(tmp_path / "script.json"), "--token", S_COMMAND]
    env = {"MCP_LOG_LEVEL": "info", "OTEL_TRACES_EXPORTER": "console"}
    replies = []
    with gateway_over_http(tmp_path, upstream, "--otel", **env) as url, httpx.Client() as client:
        session = http_post(client, url, CLIENT_FRAMES[0], None).headers["mcp-session-id"]
        for frame in CLIENT_FRAMES[1:]:
            replies.append(http_post(client, url, frame, session))
        metrics = client.get(url.removesuffix("/mcp") + "/metrics", timeout=WAIT).text
    assert [r.status_code for r in replies[1:]] == [200] * 5  # every request answered
    folder = tmp_path / "runs" / "mcp_server" / "gateway"
    [report] = folder.glob("*-report.json")
    logs = [p for p in folder.glob("*.jsonl") if not p.is_symlink()]
    violations = set(json.loads(report.read_text())["violations"])
    assert violations == {"invalid_tool_input", "invalid_tool_output", "invalid_params"}
    run_cli(tmp_path, "report", str(report), "--html", str(tmp_path / "page.html"))
    capture = tmp_path / "capture.ndjson"
    served = [frame for _, frames in SCRIPT for frame in frames]
    lines = [{"direction": "client_to_server", "frame": f} for f in CLIENT_FRAMES]
    lines += [{"direction": "server_to_client", "frame": f} for f in served]
    capture.write_text("".join(json.dumps(line) + "\n" for line in lines))
    outputs = {
        "stderr": (tmp_path / "gateway.stderr").read_text(),
        "event log": "".join(p.read_text() for p in logs),
        "report": report.read_text(),
        "page": (tmp_path / "page.html").read_text(),
        "metrics": metrics,
    }
    for source in (capture, logs[0]):
        for form in ("json", "junit", "html", "text"):
            outputs[f"check {form} of {source.name}"] = run_cli(tmp_path, "check", str(source), "--format", form)
    assert "[REDACTED]" in outputs["report"] and "mcp.verdict" in outputs["stderr"]  # it was all seen, hidden
    leaks = [(name, secret) for name, text in outputs.items() for secret in SECRETS if secret in text]
    assert leaks == []
    for path in [report, tmp_path / "page.html", *logs]:
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path


CARD = "4111111111111111"  # no pattern knows a card number: only the pointer hides it
PAY = {
    "name": "pay",
    "description": "Pay by card",
    "inputSchema": {
        "type": "object",
        "properties": {
            "card": {
                "type": "object",
                "properties": {"number": {"type": "string", "maxLength": 4}, "holder": {"type": "string"}},
            }
        },
    },
}
POINTER_POLICY = '[redaction]\npointers = ["/card/number"]\n'


def test_row11_a_pointer_hides_a_call_argument_in_the_gateways_report_and_log(tmp_path: Path) -> None:
    """Issue 30 row 11: pointers are relative to a tool call's arguments; the README's `/card/number`
    never matched a gateway frame. A refused call's violation and the report's excerpt of it hide
    the number; the other argument's violation still says what was wrong."""
    (tmp_path / "policy.toml").write_text(POINTER_POLICY)
    script = [
        [1, [{"jsonrpc": "2.0", "id": 1, "result": INITIALIZED}]],
        [2, [{"jsonrpc": "2.0", "id": 2, "result": {"tools": [PAY]}}]],
    ]
    (tmp_path / "script.json").write_text(json.dumps(script))
    peer = Peer(
        tmp_path, "--policy", str(tmp_path / "policy.toml"), upstream=[*SCRIPTED, str(tmp_path / "script.json")]
    )
    peer.handshake()
    peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    arguments = {"card": {"number": CARD, "holder": 7}}
    refused = peer.call(
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "pay", "arguments": arguments}}
    )
    assert refused["result"]["isError"] is True  # the sender is told, in full, of its own call
    status, stderr = peer.finish()
    assert status == 0, stderr
    report = peer.report()
    [example] = report["examples"]["invalid_tool_input"]
    by_path = {error["path"]: error["msg"] for error in example["errors"]}
    assert by_path["/card/number"] == "[REDACTED]" and "string" in by_path["/card/holder"]
    assert '"number":"[REDACTED]"' in example["excerpt"]
    logs = "".join(p.read_text() for p in (peer.runs / "mcp_server" / "gateway").glob("*.jsonl"))
    assert CARD not in json.dumps(report) and CARD not in logs and CARD not in stderr


def test_row11_a_pointer_hides_a_call_argument_in_serves_log_and_a_path_argument_is_never_logged(
    tmp_path: Path, backends: tuple[Backend, Backend]
) -> None:
    """Issue 30 row 11: the same pointer, in `serve`: a call refused for its card number leaves no
    trace of it in the log's error details; and an argument used in an HTTP tool's path is recorded
    as its placeholder (the `route` held it in clear)."""
    own, _ = backends
    (tmp_path / "policy.toml").write_text(POINTER_POLICY)
    pay = {
        "tool_id": "pay",
        "name": "pay",
        "description": "Pay",
        "args": PAY["inputSchema"],
        "method": "POST",
        "path": "/echo",
    }
    (tmp_path / "tools.json").write_text(json.dumps({"tools": [pay, _tool("account", "/echo/{account}")]}))
    runs = tmp_path / "runs"
    args = ["--http", "127.0.0.1:0", "--tools", str(tmp_path / "tools.json"), "--policy", str(tmp_path / "policy.toml")]
    env = {"MCP_EXECUTION_BASE_URL": own.url, "MCP_RUNS_DIR": str(runs), "MCP_LOG_LEVEL": "info"}
    account = "acct-77aa88bb99"  # no pattern knows it either
    with serving(tmp_path, args, **env) as server, httpx.Client() as client:
        session = http_post(client, server.address, initialize_frame("2025-11-25", 0), None).headers["mcp-session-id"]
        http_post(client, server.address, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        call = {"name": "pay", "arguments": {"card": {"number": CARD}}}
        refused = http_post(
            client, server.address, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}, session
        )
        assert refused.status_code == 200 and CARD in refused.text  # the caller sees its own input
        assert execute(server, "account", {"account": account}).json()["status"] == "success"
        assert own.received[-1]["path"] == f"/echo/{account}"
        server.stop()
        stderr = server.stderr()
    logs = "".join(p.read_text() for p in (runs / "mcp_server" / "serve").glob("*.jsonl"))
    assert "/echo/{account}" in logs and "[REDACTED]" in logs  # what was there, hidden
    for text in (logs, stderr):
        assert CARD not in text and account not in text


# -- row 3: no self-approval -----------------------------------------------------------------------

APPROVER_TOKEN = "approver-token-7f3e9a1c5b"
HELD_POLICY = """
[approval]
deadline_seconds = 20
{elicitation}
[[tool]]
match = "diff_assets"
approval = true
"""


def test_row3_serve_over_http_holding_calls_without_an_approver_token_does_not_start(tmp_path: Path) -> None:
    """Issue 30 row 3: with approvals configured the REST approver requires its token; start-up
    without MCP_APPROVER_TOKEN is refused, exit 2 naming it (the caller read its held call's id from
    `GET /approvals` and approved it itself with no credentials)."""
    (tmp_path / "policy.toml").write_text(HELD_POLICY.format(elicitation=""))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcp_server",
            "serve",
            "--http",
            "127.0.0.1:0",
            "--policy",
            str(tmp_path / "policy.toml"),
        ],
        capture_output=True,
        text=True,
        env=server_env(tmp_path),
        timeout=WAIT,
    )
    assert done.returncode == 2 and "reason=setup_failed" in done.stderr and "MCP_APPROVER_TOKEN" in done.stderr
    assert "Traceback" not in done.stderr


def test_row3_a_client_cannot_approve_its_own_call_when_approval_is_out_of_band_only(tmp_path: Path) -> None:
    """Issue 30 row 3: `[approval] elicitation = false` holds MCP calls for the REST approver only: the
    official client, which declared elicitation and would approve, is never asked; `/approvals`
    without the approver's token neither lists nor decides; with it, the call runs."""
    (tmp_path / "policy.toml").write_text(HELD_POLICY.format(elicitation="elicitation = false"))
    asked: list[str] = []

    async def approve(context: Any, params: Any) -> Any:
        from mcp import types

        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    async def call(url: str) -> Any:
        from mcp.client.client import Client

        async with Client(url, mode="legacy", read_timeout_seconds=WAIT, elicitation_callback=approve) as client:
            return await client.call_tool("diff_assets", {"base": {"a": 1}, "new": {"a": 2}})

    args = ["--http", "127.0.0.1:0", "--policy", str(tmp_path / "policy.toml")]
    with serving(tmp_path, args, MCP_APPROVER_TOKEN=APPROVER_TOKEN) as server:
        approvals = server.address.removesuffix("/mcp") + "/approvals"
        outcome: list[Any] = []
        caller = threading.Thread(target=lambda: outcome.append(asyncio.run(call(server.address))), daemon=True)
        caller.start()
        bearer = {"Authorization": f"Bearer {APPROVER_TOKEN}"}
        held = wait_for_held(approvals, bearer)
        assert httpx.get(approvals, timeout=WAIT).status_code == CanonicalError.APPROVER_UNAUTHORIZED.http_status
        decision = {"decision": "allow", "arguments_sha256": held["arguments_sha256"]}
        self_approved = httpx.post(f"{approvals}/{held['id']}", json=decision, timeout=WAIT)
        assert self_approved.status_code == CanonicalError.APPROVER_UNAUTHORIZED.http_status
        assert httpx.post(f"{approvals}/{held['id']}", json=decision, headers=bearer, timeout=WAIT).status_code == 200
        caller.join(WAIT)
    assert asked == [] and outcome and outcome[0].is_error is False


def wait_for_held(url: str, headers: dict[str, str]) -> dict[str, Any]:
    """The first call held for approval, as the approver sees it (bounded wait: the call is in flight)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        pending = httpx.get(url, headers=headers, timeout=WAIT).json()["pending"]
        if pending:
            return dict(pending[0])
        time.sleep(0.02)
    raise AssertionError("no call was held")


# -- row 9: enforce means enforce ----------------------------------------------------------------


def tool_call(request_id: int, name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


@pytest.mark.parametrize("mode", ["enforce", "observe"])
def test_row9_a_tool_the_upstream_does_not_list_is_refused_in_enforce_and_reported_in_observe(
    tmp_path: Path, mode: str
) -> None:
    """Issue 30 row 9: policy names match exactly (`deny = ["ech*"]` does not deny `Echo`), and a
    call of a tool the upstream's whole list does not hold is refused as `tool_not_found` and never
    forwarded in enforce mode; observe mode relays it and reports it (`Refund` and `REFUND` were
    relayed upstream as `tool_not_listed`)."""
    (tmp_path / "policy.toml").write_text('[tools]\ndeny = ["ech*"]\n')
    peer = Peer(tmp_path, "--mode", mode, "--policy", str(tmp_path / "policy.toml"))
    peer.handshake()
    peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    echo, upper = peer.call(tool_call(3, "Echo", text="x")), peer.call(tool_call(4, "ECHO", text="x"))
    denied, added = peer.call(tool_call(5, "echo", text="x")), peer.call(tool_call(6, "add", a=1, b=2))
    status, stderr = peer.finish()
    assert status == 0, stderr
    assert denied["error"]["data"]["reason"] == CanonicalError.POLICY_DENIED.reason  # the policy, in every mode
    assert added["result"]["structuredContent"] == {"total": 3}
    report = peer.report()
    assert report["violations_by_tool"]["tool_not_found"] == {"ECHO": 1, "Echo": 1}
    relayed = report["frames"]["server_to_client"]["tools/call"]
    if mode == "enforce":
        for refused in (echo, upper):
            assert refused["error"]["code"] == CanonicalError.TOOL_NOT_FOUND.mcp_code
            assert refused["error"]["data"]["reason"] == CanonicalError.TOOL_NOT_FOUND.reason
        assert relayed == 1  # only `add` went upstream
    else:
        assert relayed == 3  # the upstream answered `Echo` and `ECHO` itself


# -- row 13: files --------------------------------------------------------------------------------


def serve_with_ready_file(tmp_path: Path, ready: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`mcp-server serve ARGS` with MCP_READY_FILE=ready, its input closed at once (a STDIO server ends)."""
    return subprocess.run(
        [sys.executable, "-m", "mcp_server", "serve", *args],
        input="",
        capture_output=True,
        text=True,
        env=server_env(tmp_path, MCP_READY_FILE=ready),
        timeout=WAIT,
    )


def test_row13_the_ready_file_is_never_someone_elses(tmp_path: Path) -> None:
    """Issue 30 row 13: an existing file that is not a ready file is refused (exit 2) and left as it
    was (it was overwritten, then deleted at exit); a server that cannot listen removes no ready file
    (a gateway that failed to bind deleted another instance's); an unwritable path exits 2 with a
    clear message, no traceback."""
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes, not a ready file\n")
    refused = serve_with_ready_file(tmp_path, str(notes))
    assert refused.returncode == 2 and "MCP_READY_FILE" in refused.stderr
    assert notes.read_text() == "my notes, not a ready file\n"
    with serving(tmp_path, ["--http", "127.0.0.1:0"]) as first:
        mine = first.ready_file.read_bytes()
        port = first.address.rsplit(":", 1)[1].split("/")[0]
        same_port = serve_with_ready_file(tmp_path, str(first.ready_file), "--http", f"127.0.0.1:{port}")
        assert same_port.returncode == 2 and "cannot listen" in same_port.stderr
        assert first.ready_file.read_bytes() == mine
    assert not first.ready_file.exists()  # the first server removed its own at exit
    unwritable = serve_with_ready_file(tmp_path, "/proc/self/nope/x")
    assert unwritable.returncode == 2 and "MCP_READY_FILE /proc/self/nope/x" in unwritable.stderr
    assert "Traceback" not in unwritable.stderr


def test_row13_a_ready_file_left_behind_is_taken_over_and_removed(tmp_path: Path) -> None:
    """Issue 30 row 13: a ready file this user's server left behind is ours to replace (servers that
    share the default path, as a client starting several wrapped gateways does, take it over in
    turn); at exit the server removes the one it wrote."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(WAIT)
    stale = tmp_path / "stale.ready"
    stale.write_text(f"{gone.pid} 2026-01-01T00:00:00Z\n")
    done = serve_with_ready_file(tmp_path, str(stale))  # STDIO: ready at once, ended by its closed input
    assert done.returncode == 0, done.stderr
    assert "mcp:ready" in done.stderr and not stale.exists()


def wrap_config(tmp_path: Path, *args: str, **limits: int) -> subprocess.CompletedProcess[str]:
    """`mcp-server wrap ARGS`; ``file_size``: the largest file it may write (RLIMIT_FSIZE), to make a
    write fail as a full disk would."""

    def limited() -> None:
        import resource

        if "file_size" in limits:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG), no signal
            resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_size"], limits["file_size"]))

    return subprocess.run(
        [sys.executable, "-m", "mcp_server", "wrap", *args],
        capture_output=True,
        text=True,
        env=server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "client-runs")),
        timeout=WAIT,
        preexec_fn=limited,
    )


CLIENT_CONFIG = {"mcpServers": {"local": {"command": sys.executable, "args": ["server.py"]}}}


def test_row13_wrap_writes_through_a_link_and_undo_keeps_it(tmp_path: Path) -> None:
    """Issue 30 row 13: `wrap` writes a symlinked configuration through the link, which stays, and
    `--undo` restores the original there (it turned the link into a plain file)."""
    (tmp_path / "dotfiles").mkdir()
    target = tmp_path / "dotfiles" / "mcp.json"
    original = json.dumps(CLIENT_CONFIG, indent=2).encode()
    target.write_bytes(original)
    link = tmp_path / "mcp.json"
    link.symlink_to(target)
    wrapped = wrap_config(tmp_path, str(link))
    assert wrapped.returncode == 0, wrapped.stderr
    assert link.is_symlink() and link.resolve() == target
    assert json.loads(target.read_text())["mcpServers"]["local"]["args"][0] == "gateway"
    undone = wrap_config(tmp_path, "--undo", str(link))
    assert undone.returncode == 0, undone.stderr
    assert link.is_symlink() and target.read_bytes() == original
    assert not (tmp_path / "mcp.json.bak").exists()


def test_row13_a_wrap_that_cannot_write_leaves_nothing_behind(tmp_path: Path) -> None:
    """Issue 30 row 13: a rewrite that fails (a file larger than may be written, as a full disk)
    exits 2, the configuration as it was and no backup left (a stale `.bak` stopped the next wrap)."""
    config = tmp_path / "mcp.json"
    original = json.dumps(CLIENT_CONFIG).encode()
    config.write_bytes(original)
    failed = wrap_config(tmp_path, str(config), file_size=len(original))  # the backup fits, the rewrite not
    assert failed.returncode == 2 and "reason=setup_failed" in failed.stderr and "Traceback" not in failed.stderr
    assert config.read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mcp.json"]


def test_row13_undo_compares_contents_not_times(tmp_path: Path) -> None:
    """Issue 30 row 13: `--undo` refuses when the configuration's content changed after the wrap,
    whatever its time says (a change that kept the time was lost)."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(CLIENT_CONFIG))
    assert wrap_config(tmp_path, str(config)).returncode == 0
    when = config.stat()
    edited = json.loads(config.read_text())
    edited["mcpServers"]["added_by_hand"] = {"command": "other"}
    config.write_text(json.dumps(edited, indent=2))
    os.utime(config, ns=(when.st_atime_ns, when.st_mtime_ns))
    refused = wrap_config(tmp_path, "--undo", str(config))
    assert refused.returncode == 2 and "changed after it was wrapped" in refused.stderr
    assert "added_by_hand" in json.loads(config.read_text())["mcpServers"]


def test_row13_get_schema_never_serves_a_link_out_of_the_schema_root(tmp_path: Path) -> None:
    """Issue 30 row 13: a schema file that is a link leading out of the configured root is neither
    listed nor served (`get_schema` served a symlink pointing outside the schema root)."""
    root, outside = tmp_path / "schemas", tmp_path / "private"
    root.mkdir()
    outside.mkdir()
    (root / "kept.schema.json").write_text(json.dumps({"type": "object"}))
    (outside / "secret.json").write_text(json.dumps({"type": "object", "description": "outside the root"}))
    (root / "leak.schema.json").symlink_to(outside / "secret.json")
    frames = [
        initialize_frame("2025-11-25", 1),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "get_schema", "arguments": {"name": "leak"}},
        },
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list_schemas", "arguments": {}}},
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "get_schema", "arguments": {"name": "kept"}},
        },
    ]
    done = subprocess.run(
        [sys.executable, "-m", "mcp_server", "serve"],
        input="".join(json.dumps(f) + "\n" for f in frames),
        capture_output=True,
        text=True,
        env=server_env(tmp_path, SYN_SCHEMAS_DIR=str(root)),
        timeout=WAIT,
    )
    replies = {
        reply["id"]: reply["result"]["structuredContent"]
        for reply in [json.loads(line) for line in done.stdout.splitlines()][1:]
    }
    assert replies[2] == {"ok": False, "reason": "not_found"}
    assert [entry["name"] for entry in replies[3]["schemas"]] == ["kept"]
    assert replies[4]["ok"] is True
    assert "leak.schema.json leads out of the root" in done.stderr


# -- row 14: settings -----------------------------------------------------------------------------

LOCKFILE_TWICE = (
    '{"lockfileVersion": 1, "servers": {"reviewed": {"tools": []}}, "servers": {"unreviewed": {"tools": []}}}'
)


def gateway_exits(tmp_path: Path, *options: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`mcp-server gateway OPTIONS -- SDK upstream`, its input closed at once."""
    return subprocess.run(
        gateway_command(*options),
        input="",
        capture_output=True,
        text=True,
        env=server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"), **env),
        timeout=WAIT,
    )


@pytest.mark.parametrize(
    ("files", "options", "env", "named"),
    [
        ({"lock.json": LOCKFILE_TWICE}, ["--lock", "lock.json"], {}, "'servers' appears twice"),
        (
            {"gw.json": '{"rules": {"tool_definiton_changed": false}}'},
            ["--config", "gw.json"],
            {},
            "/rules/tool_definiton_changed",
        ),
        ({}, ["--listen", "http://127.0.0.1:0/mcp", "--idle-timeout", "nan"], {}, "--idle-timeout"),
        ({}, [], {"MCP_MAX_FRAME_BYTES": "99999999999999999999"}, "MCP_MAX_FRAME_BYTES"),
        ({"p.toml": '[redaction]\npatterns = ["(a)\\\\1"]\n'}, ["--policy", "p.toml"], {}, "/redaction/patterns/0"),
        (
            {"p.toml": "", "approval.key": "k" * 40},
            ["--policy", "p.toml"],
            {"MCP_APPROVAL_KEY_FILE": "approval.key"},
            "MCP_APPROVAL_KEY_FILE",
        ),
    ],
    ids=[
        "duplicate-json-key",
        "unknown-rule",
        "nan-seconds",
        "absurd-frame-limit",
        "non-linear-pattern",
        "readable-key-file",
    ],
)
def test_row14_a_bad_setting_is_refused_with_exit_2_naming_it(
    tmp_path: Path, files: dict[str, str], options: list[str], env: dict[str, str], named: str
) -> None:
    """Issue 30 row 14: each was accepted without a word (the later `servers` won, a misspelt rule
    stayed on, `nan` turned reaping off, a limit past any memory, a key file others can read)."""
    for name, content in files.items():
        (tmp_path / name).write_text(content)
        (tmp_path / name).chmod(0o644)
    resolved = [str(tmp_path / option) if option in files else option for option in options]
    variables = {key: str(tmp_path / value) if value in files else value for key, value in env.items()}
    done = gateway_exits(tmp_path, *resolved, **variables)
    assert done.returncode == 2, done.stderr
    assert named in done.stderr and "Traceback" not in done.stderr


def test_row14_a_catastrophic_redaction_pattern_is_harmless(tmp_path: Path) -> None:
    """Issue 30 row 14: `(a+)+$` is accepted, and harmless: RE2 runs it in linear time, so a frame
    whose id is 64 KiB of `a` and a `b` (exponential for a backtracking engine) is answered at once,
    and the frame behind it too."""
    (tmp_path / "policy.toml").write_text('[redaction]\npatterns = ["(a+)+$"]\n')
    peer = Peer(tmp_path, "--policy", str(tmp_path / "policy.toml"))
    peer.handshake()
    long_id = "a" * 65536 + "b"
    peer.send({"jsonrpc": "2.0", "id": long_id, "method": "no/such/method"})
    peer.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert peer.receive()["id"] == long_id
    assert peer.receive() == {"jsonrpc": "2.0", "id": 3, "result": {}}
    status, stderr = peer.finish()
    assert status == 0, stderr
