"""Stopping the gateway on SIGTERM: the report first, then the upstream, within a supervisor's grace (issue 18).

Every front (STDIO, Unix socket, Streamable HTTP) and both upstream kinds (a STDIO process, a
Streamable HTTP server), each with a client's call in flight: the upstream has asked the client a
question (an elicitation request) that the client never answers.
"""

from __future__ import annotations

import json
import selectors
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..conftest import initialize_frame, server_env
from ..processes import children_of, free_port, running
from .gateways import BROKEN_UPSTREAM, TARGET, started_gateway

WAIT = 30.0
EXIT_WITHIN = 1.5  # issue 18: within 1 s, with room for a loaded machine
SUPERVISOR_GRACE = 2.0  # a supervisor's SIGTERM-to-SIGKILL grace
ELICIT = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "test_elicitation", "arguments": {"message": "Who are you?"}},
}


def _opening() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A handshake declaring elicitation; then a call whose upstream asks the client a question."""
    hello = initialize_frame("2025-11-25", 1)
    hello["params"]["capabilities"] = {"elicitation": {}}
    return hello, [{"jsonrpc": "2.0", "method": "notifications/initialized"}, ELICIT]


def _lines(frames: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(frame).encode() + b"\n" for frame in frames)


def _read_until(read: Callable[[], bytes], wanted: Callable[[dict[str, Any]], bool]) -> None:
    """Read NDJSON (``read()`` returns the next chunk) until a frame that is ``wanted``."""
    buffered = b""
    deadline = time.monotonic() + WAIT
    while True:
        *complete, buffered = buffered.split(b"\n")
        if any(wanted(json.loads(line)) for line in complete if line.strip()):
            return
        assert time.monotonic() < deadline, "the frame never came"
        buffered += read()


def _answered(frame: dict[str, Any]) -> bool:
    return frame.get("id") == 1 and "result" in frame


def _asked(frame: dict[str, Any]) -> bool:
    return frame.get("method") == "elicitation/create"


@contextmanager
def upstream_options(tmp_path: Path, kind: str, command: list[str]) -> Iterator[list[str]]:
    """The gateway's options for ``command`` as a STDIO upstream, or served over HTTP (`--upstream URL`)."""
    if kind == "stdio":
        yield ["--", *command]
        return
    port = free_port()
    with running([*command, "--http", str(port)], f"http://127.0.0.1:{port}/mcp", server_env(tmp_path)) as url:
        yield ["--upstream", url]


@contextmanager
def gateway(tmp_path: Path, front: str, options: list[str]) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """The gateway on ``front``, ready; its address (the socket path or the URL)."""
    listen = {"stdio": "stdio", "unix": f"unix:{tmp_path / 'gw.sock'}", "http": "http://127.0.0.1:0/mcp"}[front]
    stderr = tmp_path / "gateway.stderr"
    pipe = subprocess.PIPE
    with started_gateway(tmp_path, "--listen", listen, *options, stdin=pipe, stdout=pipe, stderr=stderr) as started:
        yield started


@contextmanager
def call_in_flight(process: subprocess.Popen[bytes], front: str, address: str) -> Iterator[None]:
    """A session on ``front`` with a call in flight (its upstream waits for the client), for the block."""
    hello, rest = _opening()
    if front == "stdio":
        assert process.stdin is not None and process.stdout is not None
        stdin, stdout = process.stdin, process.stdout
        with selectors.DefaultSelector() as chooser:
            chooser.register(stdout, selectors.EVENT_READ)

            def from_stdout() -> bytes:
                assert chooser.select(WAIT), "no output from the gateway"
                return stdout.read1(65536)  # type: ignore[attr-defined, no-any-return]

            for frames, wanted in (([hello], _answered), (rest, _asked)):
                stdin.write(_lines(frames))
                stdin.flush()
                _read_until(from_stdout, wanted)
            yield
    elif front == "unix":
        with socket.socket(socket.AF_UNIX) as client:
            client.settimeout(WAIT)
            client.connect(address)
            for frames, wanted in (([hello], _answered), (rest, _asked)):
                client.sendall(_lines(frames))
                _read_until(lambda: client.recv(65536), wanted)
            yield
    else:
        caller = _http_call_in_flight(address)
        yield
        caller.join(WAIT)


def _http_call_in_flight(url: str) -> threading.Thread:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    hello, (initialized, call) = _opening()
    opened = httpx.post(url, json=hello, headers=headers, timeout=WAIT)
    headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
    httpx.post(url, json=initialized, headers=headers, timeout=WAIT)
    asked = threading.Event()

    def stream() -> None:
        try:
            with httpx.stream("POST", url, json=call, headers=headers, timeout=WAIT) as response:
                for line in response.iter_lines():
                    if "elicitation/create" in line:
                        asked.set()
        except httpx.HTTPError:
            pass  # the gateway went away: this test's point

    caller = threading.Thread(target=stream, daemon=True)
    caller.start()
    assert asked.wait(WAIT), "the upstream never asked"
    return caller


def reports(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "runs" / "mcp_server" / "gateway").glob("*-report.json"))


@pytest.mark.alone
@pytest.mark.parametrize("kind", ["stdio", "http"])
@pytest.mark.parametrize("front", ["stdio", "unix", "http"])
def test_sigterm_writes_the_report_and_exits_within_a_second(tmp_path: Path, front: str, kind: str) -> None:
    """Issue 18: SIGTERM with a call in flight: the gateway exits within 1 s (1.5 s allowed for a
    loaded machine) and the report is written, on every front and with both upstream kinds."""
    with (
        upstream_options(tmp_path, kind, TARGET) as options,
        gateway(tmp_path, front, options) as (process, address),
        call_in_flight(process, front, address),
    ):
        began = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(WAIT)
        took = time.monotonic() - began
    assert took < EXIT_WITHIN, f"{front} front, {kind} upstream: exited after {took:.2f} s"
    [report] = reports(tmp_path)
    assert json.loads(report.read_text())["frames"]["client_to_server"]["tools/call"] == 1


def _alive(pid: str) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return ") Z " not in stat.read_text()
    except OSError:
        return False


@pytest.mark.parametrize("case", ["stdio", "http", "stdio, input closed first"])
def test_the_report_comes_before_the_upstream_and_survives_a_supervisors_sigkill(tmp_path: Path, case: str) -> None:
    """Issue 18: on SIGTERM the report is written while the upstream still runs (before the gateway
    waits for it); a supervisor's SIGKILL after 2 s finds it, and no upstream is left behind, even
    one that ignores SIGTERM and the end of its input."""
    front = case.split(",")[0]
    with gateway(tmp_path, front, ["--", *BROKEN_UPSTREAM, "--stubborn"]) as (process, address):
        if front == "stdio":
            assert process.stdin is not None
            process.stdin.write(_lines([initialize_frame("2025-11-25", 1)]))
            process.stdin.flush()
        else:
            headers = {"Accept": "application/json", "Content-Type": "application/json"}
            httpx.post(address, json=initialize_frame("2025-11-25", 1), headers=headers, timeout=WAIT)
        deadline = time.monotonic() + WAIT
        while not (upstreams := children_of(process.pid, upstreams_only=True)):
            assert time.monotonic() < deadline, "no upstream started"
            time.sleep(0.02)
        if case.endswith("input closed first"):  # the gateway is waiting for its upstream to exit
            assert process.stdin is not None
            process.stdin.close()
        began = time.monotonic()
        process.send_signal(signal.SIGTERM)
        while not reports(tmp_path):
            assert time.monotonic() - began < SUPERVISOR_GRACE, "no report within the supervisor's grace"
            time.sleep(0.01)
        assert any(_alive(pid) for pid in upstreams), "the report waited for the upstream"
        try:
            process.wait(max(SUPERVISOR_GRACE - (time.monotonic() - began), 0.01))
        except subprocess.TimeoutExpired:
            process.kill()  # the supervisor's SIGKILL
        assert reports(tmp_path)
        assert not any(_alive(pid) for pid in upstreams), "an upstream outlived the gateway"
