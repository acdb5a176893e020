"""Hostile and careless input (issue 30): what an attacker or a careless operator sends is answered
without a freeze, a leaked secret, a self-approved call or unbounded memory.

Real processes: the gateway in front of real upstreams (the SDK's, and the scripted raw one for
frames no well-behaved server sends), `serve --http` in front of a real HTTP backend on loopback,
real clients (raw NDJSON, httpx). One test per row of the issue's table that this module covers.
"""

from __future__ import annotations

import json
import os
import select
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
from .gateway.test_gateway import SDK_UPSTREAM, gateway_command
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
