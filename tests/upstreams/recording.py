"""A tap between the gateway and its upstream: ``recording.py CAPTURE -- COMMAND...`` runs COMMAND and
copies each line both ways unchanged, writing it to CAPTURE as ``{"direction", "frame"}`` (the line as
text): the frames exactly as the gateway's ledger checked them, for ``check`` to read again."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from typing import IO

capture_path, command = sys.argv[1], sys.argv[sys.argv.index("--") + 1 :]
capture = open(capture_path, "a", encoding="utf-8")  # noqa: SIM115 (open for the whole run)
lock = threading.Lock()
child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
assert child.stdin is not None and child.stdout is not None


def record(direction: str, line: bytes) -> None:
    text = line.rstrip(b"\n").decode("utf-8", "replace")
    with lock:
        capture.write(json.dumps({"direction": direction, "frame": text}) + "\n")
        capture.flush()


def tap(source: IO[bytes], sink: IO[bytes], direction: str) -> None:
    for line in iter(source.readline, b""):
        record(direction, line)
        sink.write(line)
        sink.flush()
    sink.close()


upstream = threading.Thread(target=tap, args=(child.stdout, sys.stdout.buffer, "server_to_client"))
upstream.start()
with contextlib.suppress(BrokenPipeError):  # the upstream ended first
    tap(sys.stdin.buffer, child.stdin, "client_to_server")
upstream.join()
sys.exit(child.wait())
