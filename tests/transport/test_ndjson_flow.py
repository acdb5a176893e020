"""Replies leave at once and reading never waits on writing, on every NDJSON transport (issue 18).

Real `mcp-server serve` and `mcp-server gateway` processes; the client writes everything before it
reads anything. Every wait is bounded, so a reply held back or a deadlock fails instead of hanging.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from mcp_server.transport.ndjson import MAX_HELD_OUTPUT

from ..conftest import ROOT, initialize_frame, server_command, server_env
from ..held_backend import held_backend
from ..servers import serving

WAIT = 20.0  # seconds: every wait in this file is bounded by this
FRAMES = 100_000  # issue 18: "100,000 frames written before anything is read"
PIPELINE_WAIT = 60.0  # seconds for all of them, either way: a loaded machine takes a third of it, a deadlock all
# At rest a server peaks under 80 MiB; the replies it holds add at most MAX_HELD_OUTPUT, twice over
# while a buffer grows.
PEAK_BOUND_KIB = (80 * 1024 * 1024 + 2 * MAX_HELD_OUTPUT) // 1024
FAST_UPSTREAM = [sys.executable, str(ROOT / "bench" / "fast_upstream.py")]  # answers every request at once


def frame_line(frame: dict[str, Any]) -> bytes:
    return json.dumps(frame, separators=(",", ":")).encode() + b"\n"


def pings(count: int, first: int = 1) -> bytes:
    return b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i for i in range(first, first + count))


def write_all(fd: int, data: bytes, deadline: float) -> None:
    """All of ``data`` into ``fd`` without reading anything; fails if the peer stops taking it."""
    os.set_blocking(fd, False)
    view = memoryview(data)
    while view:
        remaining = deadline - time.monotonic()
        _, writable, _ = select.select([], [fd], [], max(remaining, 0))
        if not writable:
            raise AssertionError(f"deadlock: the server stopped reading after {len(data) - len(view)} bytes")
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            continue


def read_lines(fd: int, count: int, deadline: float) -> list[bytes]:
    """The next ``count`` lines from ``fd``; fails if they do not all arrive by ``deadline``."""
    os.set_blocking(fd, False)
    buffer = bytearray()
    lines: list[bytes] = []
    while len(lines) < count:
        readable, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
        if not readable:
            raise AssertionError(f"only {len(lines)} of {count} replies arrived in time")
        try:
            chunk = os.read(fd, 1 << 20)
        except BlockingIOError:
            continue
        assert chunk, f"the server closed its output after {len(lines)} of {count} replies"
        buffer += chunk
        *complete, rest = bytes(buffer).split(b"\n")
        lines += complete
        buffer = bytearray(rest)
    assert not buffer and len(lines) == count, "more came than was asked for"
    return lines


def peak_kib(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM), in KiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM")))


def pipeline(write_fd: int, read_fd: int, pid: int, count: int = FRAMES) -> None:
    """``count`` pings written before anything is read; then every reply, in request order."""
    write_all(write_fd, pings(count), time.monotonic() + PIPELINE_WAIT)
    replies = [json.loads(line) for line in read_lines(read_fd, count, time.monotonic() + PIPELINE_WAIT)]
    assert [reply["id"] for reply in replies] == list(range(1, count + 1))
    assert all(reply.get("result") == {} for reply in replies)
    assert peak_kib(pid) < PEAK_BOUND_KIB


def handshake(write_fd: int, read_fd: int) -> None:
    """``initialize`` (id 0) and ``notifications/initialized`` in one write; the reply comes at once."""
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    write_all(
        write_fd, frame_line(initialize_frame("2025-11-25", 0)) + frame_line(initialized), time.monotonic() + WAIT
    )
    [reply] = read_lines(read_fd, 1, time.monotonic() + WAIT)
    assert json.loads(reply)["id"] == 0


@contextmanager
def stdio(tmp_path: Path, command: list[str], **env: str) -> Iterator[subprocess.Popen[bytes]]:
    """``command`` with its stdin and stdout as pipes of the test's; stopped at the end of the block."""
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"), **env),
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(WAIT)
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                pipe.close()


def gateway_command(*options: str) -> list[str]:
    return [sys.executable, "-m", "mcp_server", "gateway", "--mode", "observe", *options, "--", *FAST_UPSTREAM]


def connect(path: Path, ready: Path | None = None) -> socket.socket:
    """A client of the socket at ``path``, once its server's ``ready`` file says it listens."""
    deadline = time.monotonic() + WAIT
    while ready is not None and not ready.exists():
        assert time.monotonic() < deadline, f"nothing listened at {path}"
        time.sleep(0.02)
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(str(path))
    return client


def test_the_initialize_reply_leaves_while_stdin_stays_open(tmp_path: Path) -> None:
    """Issue 18: `initialize` and `notifications/initialized` in one write; the reply must not wait for more input."""
    with stdio(tmp_path, server_command()) as process:
        assert process.stdin is not None and process.stdout is not None
        handshake(process.stdin.fileno(), process.stdout.fileno())
        process.stdin.close()
        assert process.wait(WAIT) == 0


def test_a_reply_leaves_while_a_later_frame_of_the_same_write_waits_on_a_backend(tmp_path: Path) -> None:
    """Issue 18: replies leave as soon as they exist, not when the chunk they came in is done."""
    populate = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "populate_backend",
        "params": {"asset": {"id": "a"}, "validate_first": False},
    }
    with held_backend() as backend, stdio(tmp_path, server_command(), SYN_BACKEND_URL=backend.url) as process:
        assert process.stdin is not None and process.stdout is not None
        write_all(process.stdin.fileno(), pings(1) + frame_line(populate), time.monotonic() + WAIT)
        assert backend.arrived.wait(WAIT), "the second frame never reached the backend"
        [pong] = read_lines(process.stdout.fileno(), 1, time.monotonic() + WAIT)  # while the backend holds
        assert json.loads(pong) == {"jsonrpc": "2.0", "id": 1, "result": {}}
        backend.release.set()
        [populated] = read_lines(process.stdout.fileno(), 1, time.monotonic() + WAIT)
        assert json.loads(populated)["id"] == 2


def test_800_kb_of_pings_written_before_reading_do_not_deadlock(tmp_path: Path) -> None:
    """Issue 18: the server keeps reading stdin while its replies wait for the client to read stdout."""
    count = 800_000 // len(pings(1, 100_000))
    with stdio(tmp_path, server_command()) as process:
        assert process.stdin is not None and process.stdout is not None
        pipeline(process.stdin.fileno(), process.stdout.fileno(), process.pid, count)
        process.stdin.close()
        assert process.wait(WAIT) == 0


@pytest.mark.slow
def test_100000_pipelined_frames_over_stdio_all_come_back_in_order(tmp_path: Path) -> None:
    """Issue 18: 100,000 frames written before anything is read: every reply, in order, memory bounded."""
    with stdio(tmp_path, server_command()) as process:
        assert process.stdin is not None and process.stdout is not None
        pipeline(process.stdin.fileno(), process.stdout.fileno(), process.pid)
        process.stdin.close()
        assert process.wait(WAIT) == 0


@pytest.mark.slow
def test_100000_pipelined_frames_over_the_unix_socket_all_come_back_in_order(tmp_path: Path) -> None:
    """Issue 18: the same pipelining over `serve --socket`: every reply, in order, memory bounded."""
    path = tmp_path / "mcp.sock"
    with serving(tmp_path, ["--socket", str(path)]) as server, connect(path) as client:
        pipeline(client.fileno(), client.fileno(), server.process.pid)
        client.shutdown(socket.SHUT_WR)
        client.settimeout(WAIT)
        assert client.recv(1) == b""  # end of input: the server closes its side too
        assert server.stop() == 0


@pytest.mark.slow
def test_100000_pipelined_frames_through_the_gateway_on_stdio_all_come_back_in_order(tmp_path: Path) -> None:
    """Issue 18: the gateway's STDIO front, a fast upstream behind it: every reply, in order, memory bounded."""
    with stdio(tmp_path, gateway_command()) as process:
        assert process.stdin is not None and process.stdout is not None
        handshake(process.stdin.fileno(), process.stdout.fileno())
        pipeline(process.stdin.fileno(), process.stdout.fileno(), process.pid)
        process.stdin.close()
        assert process.wait(WAIT) == 0


@pytest.mark.slow
def test_100000_pipelined_frames_through_the_gateway_on_a_unix_socket_all_come_back_in_order(tmp_path: Path) -> None:
    """Issue 18: the gateway's `--listen unix:PATH` front: every reply, in order, memory bounded."""
    path = tmp_path / "gateway.sock"
    ready = tmp_path / "mcp.ready"  # (server_env's)
    with stdio(tmp_path, gateway_command(f"--listen=unix:{path}")) as process, connect(path, ready) as client:
        handshake(client.fileno(), client.fileno())
        pipeline(client.fileno(), client.fileno(), process.pid)
        client.close()
        process.send_signal(signal.SIGTERM)
        assert process.wait(WAIT) == 0


def test_a_client_that_never_reads_stops_the_reading_not_the_server(tmp_path: Path) -> None:
    """Issue 18: back-pressure, bounded: past MAX_HELD_OUTPUT of unread replies stdin is not read; a
    SIGTERM still ends the server (the replies it holds get a grace period, then it exits 0)."""
    padding = {"_meta": {"padding": "x" * 16_000}}  # big calls: stdin's pipe and read-ahead hold few of them
    call = frame_line(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_schemas", **padding}}
    )
    with stdio(tmp_path, server_command()) as process:
        assert process.stdin is not None and process.stdout is not None
        handshake(process.stdin.fileno(), process.stdout.fileno())
        [reply] = pipeline_of(process, call, 1)
        assert json.loads(reply)["result"]["structuredContent"]
        cap = 4 * MAX_HELD_OUTPUT // len(reply)  # the calls whose replies would be four bounds' worth
        written = 0
        while written < cap:
            _, writable, _ = select.select([], [process.stdin], [], 1.0)  # a second without room: stalled
            if not writable:
                break
            os.write(process.stdin.fileno(), call)
            written += 1
        assert written < cap, "the server kept reading although nobody read its replies"
        assert peak_kib(process.pid) < PEAK_BOUND_KIB
        process.send_signal(signal.SIGTERM)
        assert process.wait(WAIT) == 0


def pipeline_of(process: subprocess.Popen[bytes], line: bytes, count: int) -> list[bytes]:
    """``count`` copies of ``line`` written, then their replies read."""
    assert process.stdin is not None and process.stdout is not None
    write_all(process.stdin.fileno(), line * count, time.monotonic() + WAIT)
    return read_lines(process.stdout.fileno(), count, time.monotonic() + WAIT)


def test_stdin_and_stdout_on_one_socket_inetd_style_are_served(tmp_path: Path) -> None:
    """JSON-RPC over STDIO: a socket that carries stdin and stdout both is input, not a closed stdout."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        process = subprocess.Popen(
            server_command(), stdin=theirs, stdout=theirs, stderr=subprocess.DEVNULL, env=server_env(tmp_path)
        )
        theirs.close()
        try:
            handshake(ours.fileno(), ours.fileno())
            write_all(ours.fileno(), pings(3), time.monotonic() + WAIT)
            replies = read_lines(ours.fileno(), 3, time.monotonic() + WAIT)
            assert [json.loads(reply)["id"] for reply in replies] == [1, 2, 3]
            ours.shutdown(socket.SHUT_WR)
            assert process.wait(WAIT) == 0
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(WAIT)


def test_stdout_to_a_regular_file_gets_every_reply_in_order(tmp_path: Path) -> None:
    """`mcp-server serve < requests > replies`: a file is written directly, every reply in order."""
    replies = tmp_path / "replies.jsonl"
    with replies.open("wb") as out:
        process = subprocess.Popen(
            server_command(), stdin=subprocess.PIPE, stdout=out, stderr=subprocess.DEVNULL, env=server_env(tmp_path)
        )
        process.communicate(pings(1000), timeout=WAIT)
    assert process.returncode == 0
    assert [json.loads(line)["id"] for line in replies.read_bytes().splitlines()] == list(range(1, 1001))


def test_a_stdout_that_takes_nothing_is_an_error_not_a_quiet_exit(tmp_path: Path) -> None:
    """Bad output loses nothing quietly: replies that cannot be written (a full device) end the server non-zero."""
    with open("/dev/full", "wb") as full:
        process = subprocess.Popen(
            server_command(), stdin=subprocess.PIPE, stdout=full, stderr=subprocess.DEVNULL, env=server_env(tmp_path)
        )
        process.communicate(pings(3), timeout=WAIT)
    assert process.returncode != 0


def test_the_server_leaves_the_pipes_it_shares_with_its_client_blocking(tmp_path: Path) -> None:
    """The event loop's non-blocking mode is the server's own: the open pipes it shares (stdin with
    the client, stdout with stderr under `2>&1`) keep the mode their owners gave them."""
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    process = subprocess.Popen(
        server_command(), stdin=in_read, stdout=out_write, stderr=subprocess.DEVNULL, env=server_env(tmp_path)
    )
    try:
        handshake(in_write, out_read)  # by now the server reads stdin and writes stdout
        assert os.get_blocking(in_read), "the server made the client's stdin pipe non-blocking"
        assert os.get_blocking(out_write), "the server made the stdout pipe non-blocking for all who share it"
        os.close(in_write)
        assert process.wait(WAIT) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(WAIT)
        for fd in (in_read, out_read, out_write):
            os.close(fd)
