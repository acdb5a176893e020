"""A Python MCP server imported once and forked for each session it serves over STDIO.

A gateway before a STDIO upstream starts one process per session; a server written with the `mcp`
SDK spends about 0.6 s of CPU importing it before it reads a frame, and the conformance suite opens
hundreds of sessions. Here the server's script runs its module-level code once (its tools declared,
its options read); then each session's command (`forked.py SOCKET`, which starts in milliseconds)
hands this process its standard input, output and error, and a child forked from here runs the
script's `main()` on them: the same server, on the pipes the gateway made, as a fresh start of the
script would. The child's exit status is the command's.

Run: ``python forks.py SOCKET SCRIPT [ARGS...]``: says ``ready`` on stdout once it listens; SIGTERM
stops it and the sessions it still serves.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import selectors
import signal
import socket
import sys
import traceback
from collections.abc import Callable
from typing import Any


def _serve_one(connection: socket.socket, main: Callable[[], Any], closing: list[socket.socket]) -> None:
    """In the forked child: the session's STDIO in place of ours, then the script's ``main()``."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for number in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(number, signal.SIG_DFL)
        for other in closing:
            other.close()
        _, fds, _, _ = socket.recv_fds(connection, 1, 3)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        connection.sendall(f"{os.getpid()}\n".encode())
        connection.close()
        try:
            main()
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        except BaseException:
            traceback.print_exc()
        with contextlib.suppress(OSError):
            sys.stdout.flush()
            sys.stderr.flush()
    finally:
        os._exit(code)


def _reap(children: dict[int, socket.socket]) -> None:
    """Each child that ended: its exit status to the command that waits for it."""
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        waiting = children.pop(pid, None)
        if waiting is not None:
            with contextlib.suppress(OSError):
                waiting.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
            waiting.close()


def main() -> None:
    path, script, *args = sys.argv[1:]
    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(script))  # as when the script itself is run
    served = runpy.run_path(script, run_name="forked")  # its module-level code; not its main() yet
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(128)
    wake, woken = socket.socketpair()
    for end in (wake, woken):
        end.setblocking(False)
    signal.set_wakeup_fd(woken.fileno())
    signal.signal(signal.SIGCHLD, lambda number, frame: None)
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(0))
    children: dict[int, socket.socket] = {}
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(wake, selectors.EVENT_READ)
    print("ready", flush=True)
    try:
        while True:
            for key, _ in selector.select():
                if key.fileobj is wake:
                    with contextlib.suppress(BlockingIOError):
                        wake.recv(4096)
                    _reap(children)
                    continue
                connection, _ = listener.accept()
                pid = os.fork()
                if pid == 0:
                    _serve_one(connection, served["main"], [listener, wake, woken])
                children[pid] = connection
    finally:
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        listener.close()
        with contextlib.suppress(OSError):
            os.unlink(path)


if __name__ == "__main__":
    main()
