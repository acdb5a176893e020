"""A child-process upstream never outlives the gateway that started it (issue 21: a replica killed
leaves no process behind). Real processes: the gateway, an upstream that ignores its input's end
and SIGTERM, and ``kill -9``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..conftest import server_env
from ..processes import alive, children_of

WAIT = 20.0
# Ignores SIGTERM and never reads its input: only SIGKILL ends it. It says when it is ready (in words
# its command line, which the gateway's ready line shows, does not hold).
STUBBORN = [
    sys.executable,
    "-c",
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "sys.stderr.write('set' + 'tled\\n'); sys.stderr.flush()\n"
    "time.sleep(120)\n",
]


def test_an_upstream_dies_with_a_gateway_killed_outright(tmp_path: Path) -> None:
    """Issue 21: after `kill -9` of a gateway (a replica lost), its upstream process (one that ignores
    the end of its input and SIGTERM) is gone too: no orphan keeps a session's resources."""
    command = [sys.executable, "-m", "mcp_server", "gateway", "--", *STUBBORN]
    gateway = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=server_env(tmp_path)
    )
    upstreams: list[str] = []
    try:
        assert gateway.stderr is not None
        lines = iter(gateway.stderr.readline, b"")  # the upstream's stderr comes through the gateway's
        assert any(line == b"upstream: settled\n" for line in lines), "the upstream never started"
        upstreams += children_of(gateway.pid, upstreams_only=True)
        assert len(upstreams) == 1
        gateway.send_signal(signal.SIGKILL)
        gateway.wait(WAIT)
        deadline = time.monotonic() + WAIT
        while alive(upstreams[0]) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not alive(upstreams[0]), "the upstream outlived its gateway"
    finally:
        for pid in upstreams:  # an orphan of a failed run is not left behind either
            if alive(pid):
                os.kill(int(pid), signal.SIGKILL)
        if gateway.poll() is None:
            gateway.kill()
            gateway.wait(WAIT)
        for pipe in (gateway.stdin, gateway.stderr):
            assert pipe is not None
            pipe.close()
