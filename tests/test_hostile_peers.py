"""Hostile and careless peers (issue 30, rows 4, 5, 6, 10 and 12): clients isolated from each other,
bounded memory when a peer stops reading or sends too much, sessions that cannot lock others out, one
approval carried out once across replicas, and SIGTERM heard whatever the peers do. Real processes,
real clients (httpx, the official `mcp` SDK), a real upstream written with the SDK.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import redis

from mcp_server.core.errors import CanonicalError

from .conftest import ROOT, server_env
from .distro import find_program
from .gateway.gateways import (
    APPROVAL_POLICY,
    HEADERS,
    STATELESS_HEADERS,
    VERSION,
    body_of,
    gateway_command,
    http_gateway,
    initialize,
    report_of,
    rpc,
    stateless_call,
)
from .gateway.replicas import KEY, REPLICAS, balanced
from .processes import children_of, free_port

WAIT = 30.0
PEER_UPSTREAM = [sys.executable, str(ROOT / "tests" / "upstreams" / "peer_server.py")]
STATELESS = "2026-07-28"


def _meta() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/logLevel": "debug",
    }


def _call(request_id: int | str, tool: str, tag: str, *, progress: Any = None) -> dict[str, Any]:
    meta = _meta() if progress is None else {**_meta(), "progressToken": progress}
    return rpc(request_id, "tools/call", {"name": tool, "arguments": {"tag": tag}, "_meta": meta})


def _headers(tool: str, *, sse: bool) -> dict[str, str]:
    accept = "application/json, text/event-stream" if sse else "application/json"
    return {
        **HEADERS,
        "Accept": accept,
        "MCP-Protocol-Version": STATELESS,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }


def _events(text: str) -> list[dict[str, Any]]:
    """Every JSON-RPC message of an SSE body (or the one JSON body)."""
    if not text.lstrip().startswith("{"):
        return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]
    return [json.loads(text)]


# -- Row 4: clients are isolated --------------------------------------------------------------------


async def _stateless_pair(url: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """A's call (JSON only) and B's (SSE), both in flight on the shared upstream, the same progress
    token; B posts ``notifications/cancelled`` naming A's id; then both are released."""
    async with httpx.AsyncClient(timeout=WAIT) as a, httpx.AsyncClient(timeout=WAIT) as b:

        async def post(client: httpx.AsyncClient, frame: dict[str, Any], tool: str, *, sse: bool) -> httpx.Response:
            return await client.post(url, json=frame, headers=_headers(tool, sse=sse))

        a_call = asyncio.ensure_future(post(a, _call(1, "gate", "A", progress="p"), "gate", sse=False))
        await post(b, _call(90, "arrived", "A"), "arrived", sse=False)  # A's call runs upstream
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
        cancelled = await b.post(
            url, json=cancel, headers={**_headers("gate", sse=False), "Mcp-Method": cancel["method"]}
        )
        b_call = asyncio.ensure_future(post(b, _call(2, "gate", "B", progress="p"), "gate", sse=True))
        await post(b, _call(91, "arrived", "B"), "arrived", sse=False)
        await post(b, _call(92, "release", "A"), "release", sse=False)
        a_answer = await asyncio.wait_for(a_call, WAIT)
        await post(a, _call(93, "release", "B"), "release", sse=False)
        b_answer = await asyncio.wait_for(b_call, WAIT)
        return _events(a_answer.text), _events(b_answer.text), cancelled.status_code


async def _stateful_pair(url: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Two sessions, each with its own upstream: B cancels A's request id in its own session."""
    params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    async with httpx.AsyncClient(timeout=WAIT) as client:

        async def opened() -> dict[str, str]:
            response = await client.post(url, json=rpc(0, "initialize", params), headers=HEADERS)
            headers = {**HEADERS, "Mcp-Session-Id": response.headers["mcp-session-id"], "MCP-Protocol-Version": VERSION}
            await client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
            await client.post(url, json=rpc(0, "logging/setLevel", {"level": "debug"}), headers=headers)
            return headers

        def call(request_id: int, tool: str, tag: str) -> dict[str, Any]:
            return rpc(
                request_id, "tools/call", {"name": tool, "arguments": {"tag": tag}, "_meta": {"progressToken": "p"}}
            )

        a, b = await opened(), await opened()
        a_call = asyncio.ensure_future(client.post(url, json=call(1, "gate", "SA"), headers=a))
        await client.post(url, json=call(2, "arrived", "SA"), headers=a)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
        await client.post(url, json=cancel, headers=b)
        b_call = asyncio.ensure_future(client.post(url, json=call(1, "gate", "SB"), headers=b))
        await client.post(url, json=call(2, "arrived", "SB"), headers=b)
        await client.post(url, json=call(3, "release", "SA"), headers=a)
        await client.post(url, json=call(3, "release", "SB"), headers=b)
        a_answer, b_answer = await asyncio.wait_for(asyncio.gather(a_call, b_call), WAIT)
        return _events(a_answer.text), _events(b_answer.text)


def _texts(events: list[dict[str, Any]]) -> list[str]:
    """What each message says: a log's data, a progress message, a result's text."""
    said = []
    for event in events:
        params = event.get("params") or {}
        if "data" in params:
            said.append(str(params["data"]))
        elif "message" in params:
            said.append(str(params["message"]))
        elif "result" in event:
            said.append("result " + event["result"]["content"][0]["text"])
        else:
            said.append(json.dumps(event))
    return said


def test_a_client_cancels_only_its_own_requests_and_sees_only_their_notifications(tmp_path: Path) -> None:
    """Issue 30 row 4: on every HTTP path a request is known by the exchange that carried it: B's
    ``notifications/cancelled`` with A's id does not end A's call (2026-07-28 cancels by closing the
    request), A's log and progress never reach B's stream, a shared progress token included."""
    with http_gateway(tmp_path, upstream=PEER_UPSTREAM) as gateway:
        a_seen, b_seen, cancel_status = asyncio.run(_stateless_pair(gateway.url))
        sa_seen, sb_seen = asyncio.run(_stateful_pair(gateway.url))
    assert cancel_status == 202
    assert "result A" in _texts(a_seen) and a_seen[-1]["id"] == 1
    assert "result B" in _texts(b_seen) and b_seen[-1]["id"] == 2
    assert not any(text.startswith("A ") for text in _texts(b_seen)), b_seen
    for event in b_seen:
        if event.get("method") == "notifications/progress":
            assert event["params"]["progressToken"] == "p"  # B's own token back, whatever went upstream
    assert "result SA" in _texts(sa_seen) and "SA log" in _texts(sa_seen)
    assert "result SB" in _texts(sb_seen) and not any(text.startswith("SA") for text in _texts(sb_seen))


# -- Row 5: bounded memory wherever a peer stops reading or sends too much ---------------------------


def _status(pid: int, field: str) -> int:
    """A ``/proc/PID/status`` figure in KiB (VmRSS, VmHWM)."""
    line = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith(field))
    return int(line.split()[1])


def _raw_get(url: str, session_id: str) -> socket.socket:
    """A GET stream opened on a raw socket whose response is never read."""
    parts = urlsplit(url)
    conn = socket.create_connection((parts.hostname, parts.port), timeout=WAIT)
    head = (
        f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nAccept: text/event-stream\r\n"
        f"Mcp-Session-Id: {session_id}\r\nMCP-Protocol-Version: {VERSION}\r\n\r\n"
    )
    conn.sendall(head.encode())
    return conn


def test_an_unread_get_stream_with_a_chatty_upstream_is_closed_at_its_bound(tmp_path: Path) -> None:
    """Issue 30 row 5: a client that opens its GET stream and never reads it while the upstream talks
    costs a bounded amount: past it the stream is closed (the session may open another), the gateway's
    memory stays bounded (968 MB after 70 s before)."""
    with contextlib.ExitStack() as stack:
        gateway = stack.enter_context(http_gateway(tmp_path, upstream=PEER_UPSTREAM))
        client = stack.enter_context(httpx.Client(timeout=WAIT))
        session_id = initialize(client, gateway.url)
        headers = {
            **HEADERS,
            "Mcp-Session-Id": session_id,
            "MCP-Protocol-Version": VERSION,
            "Accept": "application/json",
        }
        stack.enter_context(_raw_get(gateway.url, session_id))  # never read
        chatter = threading.Thread(
            target=lambda: _quietly(
                client.post, gateway.url, json=_call_legacy("chatter", size=60_000), headers=headers
            ),
            daemon=True,
        )
        chatter.start()
        deadline = time.monotonic() + WAIT
        stream_headers = {"Accept": "text/event-stream", "Mcp-Session-Id": session_id}
        while True:  # the session's one GET stream is taken until the gateway closes the unread one
            with httpx.Client(timeout=WAIT) as other, other.stream("GET", gateway.url, headers=stream_headers) as again:
                if again.status_code == 200:
                    break
                assert again.status_code == CanonicalError.STREAM_ALREADY_OPEN.http_status
            assert _status(gateway.process.pid, "VmRSS") < 400 * 1024, "the gateway held what the client did not read"
            assert time.monotonic() < deadline, "the unread stream was never closed"
            time.sleep(0.1)
        peak_kib = _status(gateway.process.pid, "VmHWM")
    assert peak_kib < 400 * 1024


def _call_legacy(tool: str, **arguments: Any) -> dict[str, Any]:
    return rpc(5, "tools/call", {"name": tool, "arguments": arguments})


def _quietly(post: Any, *args: Any, **kwargs: Any) -> None:
    """A request whose answer never comes (it ends with the gateway): its failure is no concern."""
    with contextlib.suppress(httpx.HTTPError):
        post(*args, **kwargs)


def test_a_bridged_client_that_stops_reading_makes_the_bridge_stop_reading_its_upstream(tmp_path: Path) -> None:
    """Issue 30 row 5: ``--bridge`` with a client that stopped reading (1.16 GB before: the bridge's
    output queue had no bound): the bridge holds a bounded amount, then reads its upstream no further
    (the upstream waits to write), and the gateway's memory stays bounded."""
    process = subprocess.Popen(
        gateway_command("--bridge", "2025-11-25", upstream=PEER_UPSTREAM),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,  # never read
        stderr=subprocess.DEVNULL,
        env=server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs")),
    )
    assert process.stdin is not None
    try:
        call = rpc(1, "tools/call", {"name": "chatter", "arguments": {"size": 60_000}, "_meta": _meta()})
        process.stdin.write(json.dumps(call).encode() + b"\n")
        process.stdin.flush()
        deadline, blocked = time.monotonic() + WAIT, 0
        while blocked < 20:  # the upstream waits to write for a second on end: the bridge reads no more
            blocked = blocked + 1 if _upstream_blocked_writing(process.pid) else 0
            assert _status(process.pid, "VmRSS") < 400 * 1024, "the bridge held what its client did not read"
            assert time.monotonic() < deadline, "the upstream's output was never pushed back"
            time.sleep(0.05)
        assert _status(process.pid, "VmHWM") < 400 * 1024
    finally:
        children = children_of(process.pid)
        process.kill()
        process.wait(WAIT)
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(child), signal.SIGKILL)
        for pipe in (process.stdin, process.stdout):
            with contextlib.suppress(OSError):
                pipe.close()  # type: ignore[union-attr]


def _upstream_blocked_writing(gateway: int) -> bool:
    """Whether a thread of an upstream of the gateway waits to write to a pipe (its stdout: the
    gateway reads it no more)."""
    for child in children_of(gateway, upstreams_only=True):
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{child}/task").iterdir():
                if "pipe_write" in (task / "wchan").read_text():
                    return True
    return False


def test_check_counts_an_over_long_line_as_a_finding_without_reading_it_whole(tmp_path: Path) -> None:
    """Issue 30 row 5: ``check`` reads a capture line by line with the frame limit: a 256 MiB line is
    a ``payload_too_large`` finding at its line and the next frame is still checked, in flat memory
    (one 1 GiB line took 3.1 GB before)."""
    capture = tmp_path / "capture.ndjson"
    with capture.open("wb") as handle:
        handle.truncate(256 << 20)  # a line of NUL bytes, sparse on disk
        handle.seek(256 << 20)
        handle.write(b"\n" + json.dumps(rpc(1, "ping")).encode() + b"\n")
    measure = (
        "import resource, subprocess, sys; "
        "done = subprocess.run([sys.executable, '-m', 'mcp_server', 'check', sys.argv[1], '--format', 'json'],"
        " capture_output=True); "
        "sys.stdout.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) + '\\n' + str(done.returncode)"
        " + '\\n' + done.stdout.decode())"
    )
    done = subprocess.run(
        [sys.executable, "-c", measure, str(capture)],
        capture_output=True,
        text=True,
        timeout=120,
        env=server_env(tmp_path),
    )
    peak_kib, status, document = done.stdout.split("\n", 2)
    report = json.loads(document)
    assert int(status) == 1
    assert report["violations"][CanonicalError.PAYLOAD_TOO_LARGE.slug] == 1
    [example] = report["examples"][CanonicalError.PAYLOAD_TOO_LARGE.slug]
    assert example["line"] == 1
    assert report["frames"]["client_to_server"]["ping"] == 1
    assert int(peak_kib) < 160 * 1024  # the line is 256 MiB


# -- Row 6: sessions that cannot lock others out ------------------------------------------------------


def _until_closed(conn: socket.socket, deadline: float) -> bool:
    """Read ``conn`` until the server closes it (``True``) or ``deadline`` passes (``False``)."""
    while time.monotonic() < deadline:
        conn.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            if not conn.recv(65536):
                return True
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True
    return False


def _descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _slow_request(url: str, *, head_only: bool) -> socket.socket:
    """A request that never arrives whole: half a head, or a head whose body stops after one byte."""
    parts = urlsplit(url)
    conn = socket.create_connection((parts.hostname, parts.port), timeout=WAIT)
    head = f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
    if not head_only:
        head += "Content-Type: application/json\r\nAccept: application/json\r\nContent-Length: 1000\r\n\r\n{"
    conn.sendall(head.encode())
    return conn


def test_a_session_holding_only_a_get_stream_is_reaped_and_slow_requests_hold_nothing(tmp_path: Path) -> None:
    """Issue 30 row 6: idle means no exchange: a session that only holds its GET stream is reaped
    after the idle timeout (its stream ends); a full gateway answers 503 with ``Retry-After``; requests
    whose head or body never arrive are cut after the read timeout (no descriptor held: 1,000 slow
    bodies held 1,008 after 60 s before)."""
    options = ("--max-sessions", "1", "--idle-timeout", "3")
    env = {"MCP_HTTP_READ_TIMEOUT": "1"}
    with (
        contextlib.ExitStack() as stack,
        http_gateway(tmp_path, *options, upstream=PEER_UPSTREAM, env=env) as gateway,
        httpx.Client(timeout=WAIT) as client,
    ):
        held = stack.enter_context(_raw_get(gateway.url, initialize(client, gateway.url)))
        params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        full = client.post(gateway.url, json=rpc(0, "initialize", params), headers=HEADERS)
        assert full.status_code == CanonicalError.TOO_MANY_SESSIONS.http_status
        assert full.json()["error"]["code"] == CanonicalError.TOO_MANY_SESSIONS.mcp_code
        assert 1 <= int(full.headers["retry-after"]) <= 3
        assert _until_closed(held, time.monotonic() + WAIT), "a session holding only its GET stream was never reaped"
        assert initialize(client, gateway.url)  # the reaped session's place is free
        before = _descriptors(gateway.process.pid)
        slow = [stack.enter_context(_slow_request(gateway.url, head_only=index % 5 == 0)) for index in range(40)]
        deadline = time.monotonic() + WAIT
        assert all(_until_closed(conn, deadline) for conn in slow), "a slow request kept its connection"
        while _descriptors(gateway.process.pid) > before:
            assert time.monotonic() < deadline, "the gateway still holds the slow requests' descriptors"
            time.sleep(0.05)


# -- Row 12: SIGTERM ends any process within 5 s, its log completed ----------------------------------

STOP_SECONDS = 5.0


def _flood(pipe: Any, frame: bytes) -> threading.Thread:
    """Write ``frame`` to ``pipe`` without end, from a thread (it blocks once the reader stops)."""

    def write() -> None:
        with contextlib.suppress(OSError, ValueError):
            while True:
                pipe.write(frame)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def _until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _stopped_within(process: subprocess.Popen[bytes], runs: Path | None) -> float:
    """SIGTERM, then the seconds until the process exited; its event log (under ``runs``) complete."""
    began = time.monotonic()
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(STOP_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(WAIT)
        raise AssertionError(f"still running {STOP_SECONDS} s after SIGTERM") from None
    took = time.monotonic() - began
    if runs is not None:
        logs = list(runs.rglob("*.jsonl*"))
        assert logs and not [path for path in logs if path.name.endswith(".partial")], logs
    return took


def _gateway_stdio_unread(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path | None]:
    runs = tmp_path / "runs"
    process = subprocess.Popen(
        gateway_command(upstream=PEER_UPSTREAM),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,  # never read
        stderr=subprocess.DEVNULL,
        env=server_env(tmp_path, MCP_RUNS_DIR=str(runs)),
    )
    assert process.stdin is not None
    _until_ready(tmp_path)
    _flood(process.stdin, json.dumps(_call(1, "release", "x" * 4000)).encode() + b"\n")  # answers never read
    _until(lambda: _blocked_writing(process.pid), "the gateway never stopped reading its client")
    return process, runs


def _serve_stdio_unread(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path | None]:
    runs = tmp_path / "runs"
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_server", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,  # never read
        stderr=subprocess.DEVNULL,
        env=server_env(tmp_path, MCP_RUNS_DIR=str(runs)),
    )
    assert process.stdin is not None
    _until_ready(tmp_path)
    _flood(process.stdin, json.dumps(rpc(1, "ping")).encode() + b"\n")
    _until(lambda: _blocked_writing(process.pid), "the server never waited for its client to read")
    return process, runs


def _until_ready(tmp_path: Path) -> None:
    ready = tmp_path / "mcp.ready"  # server_env's MCP_READY_FILE
    _until(lambda: ready.exists() and ready.read_text().endswith("\n"), "never ready")


def _blocked_writing(pid: int) -> bool:
    """Whether the process's stdin pipe is full: it reads no more (its client does not read it)."""
    writer = os.open(f"/proc/{pid}/fd/0", os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.write(writer, b"\n")
    except BlockingIOError:
        return True
    finally:
        os.close(writer)
    return False


def _http_slow_body(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path | None]:
    runs = tmp_path / "runs"
    ready = tmp_path / "http.ready"
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_server", "gateway", "--listen", "http://127.0.0.1:0/mcp", "--", *PEER_UPSTREAM],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=server_env(tmp_path, MCP_RUNS_DIR=str(runs), MCP_READY_FILE=str(ready)),
    )
    _until(lambda: ready.exists() and ready.read_text().endswith("\n"), "the gateway never became ready")
    url = ready.read_text().split()[-1]
    before = _descriptors(process.pid)
    _SLOW.append(_slow_request(url, head_only=False))  # a body that never comes, held at SIGTERM
    _until(lambda: _descriptors(process.pid) > before, "the slow request never reached the gateway")
    return process, runs


def _check_dev_zero(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path | None]:
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_server", "check", "/dev/zero"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=server_env(tmp_path),
    )
    _until(lambda: _read_bytes(process.pid) > 64 << 20, "check never read its capture")
    return process, None


def _read_bytes(pid: int) -> int:
    io = Path(f"/proc/{pid}/io").read_text()
    return int(next(line.split()[1] for line in io.splitlines() if line.startswith("rchar")))


_SLOW: list[socket.socket] = []
_STUCK = {
    "gateway-stdio-unread-stdout": _gateway_stdio_unread,
    "serve-stdio-unread-stdout": _serve_stdio_unread,
    "gateway-http-slow-body": _http_slow_body,
    "check-dev-zero": _check_dev_zero,
}


@pytest.mark.parametrize("case", list(_STUCK))
def test_sigterm_ends_the_process_within_5_s_whatever_its_peer_does(tmp_path: Path, case: str) -> None:
    """Issue 30 row 12: SIGTERM ends serve, the gateway on each front and check within 5 s, whatever
    their peers do (a STDIO client holding stdout unread kept the gateway 40 s and more before), and
    the run's event log is completed, not left ``.partial``."""
    process, runs = _STUCK[case](tmp_path)
    children = children_of(process.pid)
    try:
        assert _stopped_within(process, runs) < STOP_SECONDS
    finally:
        for conn in _SLOW:
            conn.close()
        _SLOW.clear()
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(child), signal.SIGKILL)
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


# -- Row 10: one approval runs once, across replicas --------------------------------------------------


@contextlib.contextmanager
def _redis(tmp_path: Path) -> Any:
    """``redis-server`` from the distribution on a loopback port of its own, nothing persisted; its URL."""
    executable, why = find_program("redis-server", "redis-server")
    if executable is None:
        pytest.skip(f"Redis is needed for single use across replicas: {why}")
    port = free_port()
    process = subprocess.Popen(
        [executable, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:

        def answers() -> bool:
            assert process.poll() is None, "redis-server exited"
            try:
                return bool(redis.Redis.from_url(url, socket_timeout=1).ping())
            except redis.RedisError:
                return False

        _until(answers, "redis-server never answered")
        yield url
    finally:
        process.terminate()
        process.wait(WAIT)


def test_one_approval_is_carried_out_once_whichever_replicas_its_retries_reach(tmp_path: Path) -> None:
    """Issue 30 row 10: one approval behind three replicas (HAProxy in front, as issue 21 deploys
    them) sharing Redis: the approved retry sent to every replica at once is carried out by one of
    them; the others refuse it as used (before, each replica carried it out once)."""
    policy = tmp_path / "policy.toml"
    policy.write_text(APPROVAL_POLICY)
    with (
        _redis(tmp_path) as url,
        balanced(tmp_path, "--policy", str(policy), MCP_APPROVAL_KEY=KEY, MCP_REDIS_URL=url) as pool,
        httpx.Client(timeout=WAIT) as raw,
    ):
        asked = body_of(raw.post(pool.url, json=stateless_call({"text": "once"}), headers=STATELESS_HEADERS))
        [key] = asked["result"]["inputRequests"]
        yes = {"inputResponses": {key: {"action": "accept", "content": {"approve": True}}}}
        retry = stateless_call({"text": "once"}, {"requestState": asked["result"]["requestState"], **yes})

        async def everywhere() -> list[dict[str, Any]]:
            async with httpx.AsyncClient(timeout=WAIT) as client:
                posts = [client.post(r.url, json=retry, headers=STATELESS_HEADERS) for r in pool.replicas]
                return [body_of(answer) for answer in await asyncio.gather(*posts)]

        answers = asyncio.run(everywhere())
    carried = [answer for answer in answers if "result" in answer]
    refused = [answer["error"]["code"] for answer in answers if "error" in answer]
    assert [answer["result"]["content"][0]["text"] for answer in carried] == ["once"]
    assert refused == [CanonicalError.APPROVAL_NOT_FOUND.mcp_code] * (REPLICAS - 1)
    executed = [report_of(d)["frames"]["server_to_client"].get("tools/call", 0) for d in pool.dirs]
    assert sum(executed) == 1
