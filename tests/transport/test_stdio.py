"""`mcp-server serve` as a real process over STDIO: readiness, signals, EOF, a clean stdout."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import signal
import struct
import subprocess
import termios
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_server.transport.stdio import open_writer, start_reader

from ..conftest import initialize_frame, server_command, server_env
from ..held_backend import held_backend

WAIT = 20.0  # seconds: every wait in this file is bounded by this


def start(tmp_path: Path, **env: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        server_command(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(tmp_path, **env),
    )


F_GETPIPE_SZ = 1032  # Linux fcntl: a pipe's capacity


def _unread(fd: int) -> int:
    """Bytes waiting in the pipe ``fd`` reads from (FIONREAD)."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]


def wait_for(predicate: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def send(process: subprocess.Popen[bytes], *frames: dict[str, Any] | bytes) -> None:
    assert process.stdin is not None
    for frame in frames:
        process.stdin.write((frame if isinstance(frame, bytes) else json.dumps(frame).encode()) + b"\n")
    process.stdin.flush()


def read_reply(process: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line, "server closed stdout"
    return json.loads(line)


def test_ready_file_holds_pid_and_utc_time_and_is_removed_on_exit(tmp_path: Path) -> None:
    """Issue 2 §6: MCP_READY_FILE = "<pid> <ISO-8601 UTC>\\n" while running; removed on exit."""
    process = start(tmp_path)
    ready = tmp_path / "mcp.ready"
    wait_for(ready.exists, "the ready file")
    pid, stamp = ready.read_text().rstrip("\n").split(" ")
    assert ready.read_text().endswith("\n")
    assert int(pid) == process.pid
    assert time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")
    _, stderr = process.communicate(b"", timeout=WAIT)
    assert process.returncode == 0
    assert not ready.exists()
    lines = stderr.decode().splitlines()
    assert any(line.startswith("mcp:ready mode=stdio schemas_dir=") and " examples_dir=" in line for line in lines)
    assert "mcp:shutdown mode=stdio" in lines


def test_exit_on_eof_answers_every_frame_in_order_and_stdout_is_only_json_rpc(tmp_path: Path) -> None:
    """Issue 2 §6: in order, replies in request order, stdout carries JSON-RPC frames only."""
    frames = [
        initialize_frame("2025-11-25", 1),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        b"this is not json",
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list_schemas", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 4, "method": "nope"},
    ]
    payload = b"".join((f if isinstance(f, bytes) else json.dumps(f).encode()) + b"\n" for f in frames)
    process = start(tmp_path)
    stdout, _ = process.communicate(payload, timeout=WAIT)
    assert process.returncode == 0
    replies = [json.loads(line) for line in stdout.decode().splitlines()]
    # The unreadable frame's answer has no id: 2025-11-25 allows none and no null (issue 29).
    assert [reply.get("id") for reply in replies] == [1, None, 2, 3, 4] and "id" not in replies[1]
    assert all(reply["jsonrpc"] == "2.0" for reply in replies)


@pytest.mark.parametrize("command", ["serve", "gateway"])
def test_stdin_from_dev_null_is_an_end_of_input_not_a_traceback(tmp_path: Path, command: str) -> None:
    """Bad input loses nothing and gets no traceback: ``/dev/null`` is a character device the event
    loop cannot wait on (epoll refuses it); it is read as what it is, an empty input, and the
    program exits 0 at once with nothing on stdout."""
    upstream = ["--", *server_command()] if command == "gateway" else []
    argv = [*server_command()[:-1], command, *upstream]
    with open(os.devnull, "rb") as nothing:
        done = subprocess.run(argv, stdin=nothing, capture_output=True, env=server_env(tmp_path), timeout=WAIT)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b""
    assert b"Traceback" not in done.stderr


def test_an_invalid_environment_variable_exits_2_with_a_setup_error(tmp_path: Path) -> None:
    """Bad input gets a clear error: MCP_MAX_FRAME_BYTES that is not a positive integer."""
    process = start(tmp_path, MCP_MAX_FRAME_BYTES="lots")
    stdout, stderr = process.communicate(b"", timeout=WAIT)
    assert process.returncode == 2
    assert stdout == b""
    assert "mcp:error reason=setup_failed detail=MCP_MAX_FRAME_BYTES" in stderr.decode()
    assert "Traceback" not in stderr.decode()


def test_an_unknown_transport_exits_2(tmp_path: Path) -> None:
    """Issue 4: any MCP_ENDPOINT other than stdio/socket/http is a setup failure."""
    process = start(tmp_path, MCP_ENDPOINT="carrier-pigeon")
    _, stderr = process.communicate(b"", timeout=WAIT)
    assert process.returncode == 2
    assert "mcp:error reason=setup_failed detail=Unsupported MCP transport" in stderr.decode()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_finishes_the_request_in_flight_then_exits_0(tmp_path: Path, signum: int) -> None:
    """Issue 2 §6: on SIGINT/SIGTERM finish the request in flight, then exit 0."""
    with held_backend() as backend:
        process = start(tmp_path, SYN_BACKEND_URL=backend.url)
        send(
            process,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "populate_backend",
                "params": {"asset": {"id": "a"}, "validate_first": False},
            },
        )
        assert backend.arrived.wait(WAIT), "the request never reached the backend"
        process.send_signal(signum)
        assert process.stderr is not None
        landed = f"mcp:stopping signal={signal.Signals(signum).name}".encode()
        while landed not in (line := process.stderr.readline()):  # the signal landed while the request is held
            assert line, "the server ended without saying it stops"
        backend.release.set()
        reply = read_reply(process)
        process.communicate(timeout=WAIT)
        assert reply["id"] == 1 and reply["result"]["ok"] is True
        assert process.returncode == 0
        assert not (tmp_path / "mcp.ready").exists()


def test_a_100_mb_line_is_drained_with_flat_memory_and_the_stream_goes_on(tmp_path: Path) -> None:
    """Issue 2 §6: an oversized line is drained, not held; memory stays flat."""
    process = start(tmp_path)
    assert process.stdin is not None
    block = b"x" * (1 << 20)
    process.stdin.write(b'{"junk":"')
    for _ in range(100):
        process.stdin.write(block)
    process.stdin.write(b'"}\n')
    send(process, {"jsonrpc": "2.0", "id": 2, "method": "ping"})
    too_large = read_reply(process)
    pong = read_reply(process)
    status = Path(f"/proc/{process.pid}/status").read_text()
    peak_kib = int(next(line for line in status.splitlines() if line.startswith("VmHWM")).split()[1])
    process.communicate(b"", timeout=WAIT)
    assert too_large["error"]["message"] == "Payload too large"
    assert pong == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert peak_kib < 150 * 1024, f"peak RSS {peak_kib} KiB while a 100 MB line streamed in"


def test_python_dash_m_is_the_same_program_as_the_console_script(tmp_path: Path) -> None:
    """Issue 2 §1: `python -m mcp_server` is the same program; --version names the package version."""
    from mcp_server import __version__

    result = subprocess.run(
        [*server_command()[:3], "--version"], capture_output=True, timeout=WAIT, env=server_env(tmp_path)
    )
    assert result.returncode == 0
    assert result.stdout.decode().splitlines()[0] == f"mcp-server {__version__}"
    assert os.path.basename(server_command()[2]) == "mcp_server"


def test_a_writer_faster_than_the_server_waits_and_nothing_is_lost() -> None:
    """STDIO input backpressure: while nobody takes chunks, reading stops after a few (the writer
    blocks on the full pipe, memory stays bounded); then every byte arrives, in order, then b"" at the end."""
    chunk_bytes, chunks = 65_536, 200
    expected = b"".join(bytes([index % 251]) * chunk_bytes for index in range(chunks))
    written = [0]

    def write(fd: int) -> None:
        for index in range(chunks):
            os.write(fd, expected[index * chunk_bytes : (index + 1) * chunk_bytes])  # a blocking pipe: all of it
            written[0] += chunk_bytes
        os.close(fd)

    async def run() -> bytes:
        read_fd, write_fd = os.pipe()
        source = start_reader(read_fd)
        capacity = fcntl.fcntl(read_fd, F_GETPIPE_SZ)
        writer = threading.Thread(target=write, args=(write_fd,), daemon=True)
        writer.start()
        # The events: the reader paused reading (its bound is reached), then the pipe filled, so the
        # writer is blocked in write() and nothing more is taken in.
        deadline = time.monotonic() + WAIT
        while not (getattr(source, "_paused", False) and _unread(read_fd) >= capacity):
            assert time.monotonic() < deadline, "the reader never paused: it took everything in"
            await asyncio.sleep(0.01)
        stalled = written[0]
        os.close(read_fd)  # the reader holds its own copy
        assert stalled <= 4 * 1024 * 1024 + capacity < len(expected), f"{stalled} bytes taken in without a consumer"
        received = bytearray()
        while chunk := await source.get():
            received += chunk
        assert await source.get() == b""  # and it stays at the end
        writer.join(WAIT)
        return bytes(received)

    assert asyncio.run(run()) == expected


def test_writers_waiting_together_on_a_full_pipe_all_go_on_once_it_drains() -> None:
    """STDIO output backpressure: the client's replies and the upstream's frames are written by two
    tasks (more behind an aggregate); each that waits for room on the full pipe goes on once it drains."""
    frame = b"x" * 65_535 + b"\n"

    async def run() -> int:
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        writer = await open_writer(write_fd)
        while writer.write(frame):  # until the writer holds as much as it may: the next send waits
            await asyncio.sleep(0)
        senders = [asyncio.ensure_future(writer.send(frame)) for _ in range(3)]
        await asyncio.sleep(0)
        assert not any(sender.done() for sender in senders), "a send did not wait for room"
        received = 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT
        while not all(sender.done() for sender in senders):  # the reader drains the pipe
            assert loop.time() < deadline, "a writer that waited for room never went on"
            try:
                received += len(os.read(read_fd, 1 << 20))
            except BlockingIOError:
                await asyncio.sleep(0.001)
        os.close(read_fd)
        return received

    assert asyncio.run(run()) > 0
