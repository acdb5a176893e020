"""One session of a server that `forks.py` holds imported: this command's standard input, output and
error go to a child forked there, and the child's end is this command's (its exit status, or the
signal that ended it). A signal sent to this command goes on to the child.

Run: ``python -I -S forked.py SOCKET`` (no site: the standard library is all it needs).
"""

import os
import signal
import socket
import sys


def _line(connection: socket.socket) -> int:
    """The next number ``forks.py`` sends; at its end, 1 (it went away)."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = connection.recv(64)
        if not chunk:
            return 1
        data += chunk
    return int(data)


def main() -> None:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(sys.argv[1])
    socket.send_fds(connection, [b"s"], [0, 1, 2])
    child = _line(connection)
    nothing = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the pipes are the child's alone now: they close when it ends
        os.dup2(nothing, fd)
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, lambda received, frame: os.kill(child, received))
    status = _line(connection)
    if status < 0:  # ended by a signal: so do we
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    os._exit(status)


if __name__ == "__main__":
    main()
