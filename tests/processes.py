"""Processes the tests start and watch: a free loopback port, a server until it listens, its stop,
the children of a process read from /proc, a Python server imported once and forked per session, and
a lock the parallel workers take in turn.
One way of each, for every test that starts a process (holds no test).
"""

from __future__ import annotations

import fcntl
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

WAIT = 60.0
UPSTREAMS = Path(__file__).resolve().parent / "upstreams"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_listening(process: subprocess.Popen[bytes], url: str) -> None:
    """Until ``url`` answers HTTP at all (any status); fails when ``process`` exits first."""
    deadline = time.monotonic() + WAIT
    while True:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            assert process.poll() is None, f"{url}: the server exited {process.returncode}"
            assert time.monotonic() < deadline, f"{url}: the server never listened"
            time.sleep(0.05)


def stop(process: subprocess.Popen[bytes], signum: int = signal.SIGTERM) -> int:
    """``signum`` (unless it ended), then its exit status; SIGKILL after ``WAIT`` seconds."""
    if process.poll() is None:
        process.send_signal(signum)
    try:
        return process.wait(WAIT)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait(WAIT)


@contextmanager
def exclusive(lock: Path) -> Iterator[None]:
    """The block run by one process at a time among those that take ``lock`` (a file, created if
    missing): the parallel workers installing a package, or writing one results file."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)  # released when closed
        yield
    finally:
        os.close(descriptor)


def made_once(folder: Path, make: Callable[[Path], object]) -> Path:
    """``folder``, made by ``make`` once for the whole run: the first parallel worker to need it makes
    it while the others wait on its lock, then they use it as it is (a wheel built, a venv installed)."""
    done = folder.with_name(f"{folder.name}.done")
    with exclusive(folder.with_name(f"{folder.name}.lock")):
        if not done.exists():  # not made, or its maker failed half-way: made afresh
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            make(folder)
            done.touch()
    return folder


@contextmanager
def running(command: list[str], url: str, env: dict[str, str]) -> Iterator[str]:
    """``command`` started, once it listens at ``url``; stopped on exit."""
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    try:
        wait_listening(process, url)
        yield url
    finally:
        stop(process)


def alive(pid: str) -> bool:
    """Whether the process ``pid`` runs (not gone, not a zombie waiting to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def children_of(pid: int, *, upstreams_only: bool = False) -> list[str]:
    """The live child processes of ``pid``, read from /proc (``upstreams_only``: not the log's writer)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if upstreams_only and b"mcp_server.observe.writer_process" in command:
            continue
        if fields[1] == str(pid) and fields[0] != "Z":
            found.append(stat.parent.name)
    return found


def wait_gone(pid: str) -> None:
    """Until the process ``pid`` has exited (gone, or a zombie its parent has yet to reap)."""
    deadline = time.monotonic() + WAIT
    while alive(pid):
        assert time.monotonic() < deadline, f"process {pid} still running"
        time.sleep(0.02)


@contextmanager
def forked_server(script: Path, *args: str) -> Iterator[list[str]]:
    """The command that serves one STDIO session of ``script ARGS`` from a process that imported it
    once (``upstreams/forks.py``): a gateway's upstream command that starts in milliseconds, for the
    tests that open many sessions and test no upstream process's own life (start, signals, end)."""
    folder = Path(tempfile.mkdtemp(prefix="forks-"))  # a short path: a socket's is at most 107 bytes
    path = folder / "socket"
    forks = subprocess.Popen(
        [sys.executable, str(UPSTREAMS / "forks.py"), str(path), str(script), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
    )
    try:
        assert forks.stdout is not None
        ready, _, _ = select.select([forks.stdout], [], [], WAIT)
        assert ready and forks.stdout.readline() == b"ready\n", f"{script.name} did not start: {forks.poll()}"
        yield [sys.executable, "-I", "-S", str(UPSTREAMS / "forked.py"), str(path)]
    finally:
        stop(forks)
        assert forks.stdout is not None
        forks.stdout.close()
        path.unlink(missing_ok=True)
        folder.rmdir()
