"""The Unix socket transport as a real service: many clients, ordering, a slow request, signals (issue 4)."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ..conftest import initialize_frame, server_command, server_env
from ..held_backend import held_backend
from ..servers import serving

WAIT = 20.0


def connect(path: str) -> socket.socket:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(WAIT)
    client.connect(path)
    return client


def send(client: socket.socket, *frames: dict[str, Any] | bytes) -> None:
    client.sendall(b"".join((f if isinstance(f, bytes) else json.dumps(f).encode()) + b"\n" for f in frames))


def read_lines(client: socket.socket, count: int) -> list[dict[str, Any]]:
    buffer = b""
    while buffer.count(b"\n") < count:
        chunk = client.recv(65536)
        assert chunk, "the server closed the connection"
        buffer += chunk
    return [json.loads(line) for line in buffer.split(b"\n")[:count]]


def populate(request_id: int) -> dict[str, Any]:
    params = {"asset": {"id": "a"}, "validate_first": False}
    return {"jsonrpc": "2.0", "id": request_id, "method": "populate_backend", "params": params}


def test_ready_line_mode_and_removal_on_sigterm(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "mcp.sock"
    with serving(tmp_path, ["--socket", str(path)]) as server:
        assert stat.S_ISSOCK(path.stat().st_mode)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert f"mcp:ready mode=socket path={path} schemas_dir=" in server.stderr()
        assert " examples_dir=" in server.stderr()
        pid, stamp = server.ready_file.read_text().split()
        assert int(pid) == server.process.pid and stamp.endswith("Z")
        assert server.stop(signal.SIGTERM) == 0
        assert not path.exists() and not server.ready_file.exists()
        assert "mcp:shutdown mode=socket" in server.stderr()


def test_mcp_endpoint_socket_with_a_mode_from_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "env.sock"
    with serving(tmp_path, [], MCP_ENDPOINT="socket", MCP_SOCKET_PATH=str(path), MCP_SOCKET_MODE="0660") as server:
        assert stat.S_IMODE(path.stat().st_mode) == 0o660
        with connect(str(path)) as client:
            send(client, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert read_lines(client, 1) == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
        assert server.stop(signal.SIGINT) == 0
        assert not path.exists()


def test_a_slow_request_holds_up_only_its_own_connection_and_order_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "mcp.sock"
    with held_backend() as backend, serving(tmp_path, ["--socket", str(path)], SYN_BACKEND_URL=backend.url):
        slow, fast = connect(str(path)), connect(str(path))
        with slow, fast:
            send(slow, populate(1), {"jsonrpc": "2.0", "id": 2, "method": "ping"})
            assert backend.arrived.wait(WAIT)
            for index in range(20):  # the other connection is served while the slow one waits
                send(fast, {"jsonrpc": "2.0", "id": index, "method": "ping"})
                assert read_lines(fast, 1)[0]["id"] == index
            slow.settimeout(0.2)
            with pytest.raises(TimeoutError):
                slow.recv(1)  # nothing yet: the ping queued behind the slow call waits its turn
            slow.settimeout(WAIT)
            backend.release.set()
            first, second = read_lines(slow, 2)
            assert first["id"] == 1 and first["result"]["ok"] is True
            assert second == {"jsonrpc": "2.0", "id": 2, "result": {}}


def test_many_clients_each_get_their_own_replies_in_order(tmp_path: Path) -> None:
    path = tmp_path / "mcp.sock"
    with serving(tmp_path, ["--socket", str(path)]):
        results: dict[int, list[Any]] = {}

        def client(number: int) -> None:
            with connect(str(path)) as conn:
                send(conn, initialize_frame("2025-11-25", request_id=f"c{number}-init"))  # type: ignore[arg-type]
                frames = [{"jsonrpc": "2.0", "id": f"c{number}-{i}", "method": "ping"} for i in range(50)]
                send(conn, *frames)
                results[number] = [reply["id"] for reply in read_lines(conn, 51)]

        threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT)
        assert sorted(results) == list(range(8))
        for number, ids in results.items():
            assert ids == [f"c{number}-init"] + [f"c{number}-{i}" for i in range(50)]


def test_a_client_that_vanishes_or_sends_half_a_line_or_floods_does_not_hurt_others(tmp_path: Path) -> None:
    path = tmp_path / "mcp.sock"
    with held_backend() as backend, serving(tmp_path, ["--socket", str(path)], SYN_BACKEND_URL=backend.url) as server:
        half = connect(str(path))
        half.sendall(b'{"jsonrpc":"2.0","id":1,"meth')
        vanishing = connect(str(path))
        send(vanishing, populate(5))
        assert backend.arrived.wait(WAIT)
        vanishing.close()  # gone mid-request
        flooder = connect(str(path))
        big = (
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "get_schema", "arguments": {"name": "CallToolResult"}},
                }
            ).encode()
            + b"\n"
        )
        flooder.setblocking(False)
        sent = 0
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # write without ever reading, until the server stops taking more
            try:
                sent += flooder.send(big * 64)
            except BlockingIOError:
                break
        backend.release.set()
        with connect(str(path)) as healthy:
            send(healthy, {"jsonrpc": "2.0", "id": "ok", "method": "ping"})
            assert read_lines(healthy, 1) == [{"jsonrpc": "2.0", "id": "ok", "result": {}}]
        half.close()
        flooder.close()
        assert sent > 0
        assert server.process.poll() is None
        assert server.stop() == 0


def test_an_oversized_line_on_the_socket_gets_the_size_guard_reply(tmp_path: Path) -> None:
    path = tmp_path / "mcp.sock"
    with serving(tmp_path, ["--socket", str(path)], MCP_MAX_FRAME_BYTES="1000"), connect(str(path)) as client:
        send(client, b'{"x":"' + b"y" * 5000 + b'"}', {"jsonrpc": "2.0", "id": 2, "method": "ping"})
        too_big, pong = read_lines(client, 2)
        assert too_big["id"] is None and too_big["error"]["message"] == "Payload too large"
        assert pong["id"] == 2


def test_a_stale_socket_file_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "stale.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # the file stays; nobody listens on it
    with serving(tmp_path, ["--socket", str(path)]), connect(str(path)) as client:
        send(client, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert read_lines(client, 1)[0]["result"] == {}


def start_and_fail(tmp_path: Path, args: list[str], **env: str) -> str:
    process = subprocess.run(
        [*server_command(), *args], capture_output=True, timeout=WAIT, env=server_env(tmp_path, **env)
    )
    assert process.returncode == 2 and process.stdout == b""
    assert b"Traceback" not in process.stderr
    return process.stderr.decode()


def test_a_regular_file_or_a_live_socket_at_the_path_is_refused_with_exit_2(tmp_path: Path) -> None:
    regular = tmp_path / "not-a-socket"
    regular.write_text("precious")
    assert "is not a socket; refusing to replace it" in start_and_fail(tmp_path, ["--socket", str(regular)])
    assert regular.read_text() == "precious"
    live = tmp_path / "live.sock"
    with serving(tmp_path, ["--socket", str(live)]):
        assert "is in use by another server" in start_and_fail(tmp_path, ["--socket", str(live)])


@pytest.mark.parametrize("mode", ["rw", "0999", "1777", "-1"])
def test_a_bad_socket_mode_is_a_setup_error(tmp_path: Path, mode: str) -> None:
    stderr = start_and_fail(tmp_path, ["--socket", str(tmp_path / "m.sock")], MCP_SOCKET_MODE=mode)
    assert "mcp:error reason=setup_failed detail=MCP_SOCKET_MODE must be an octal mode such as 0600" in stderr


def test_the_socket_is_never_wider_than_its_mode_while_it_is_created(tmp_path: Path) -> None:
    """The umask is tightened around bind, and put back afterwards for the rest of the process."""
    from mcp_server.transport.unix_socket import bind_unix_socket

    before = os.umask(0)
    try:
        listener = bind_unix_socket(tmp_path / "u.sock", 0o600)
        listener.close()
        assert stat.S_IMODE((tmp_path / "u.sock").stat().st_mode) == 0o600
    finally:
        assert os.umask(before) == 0
