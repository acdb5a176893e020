"""Gateway replicas behind a real load balancer, as the tests start them: HAProxy from the
distribution's packages with the repository's `deploy/haproxy/haproxy.cfg` before three
`gateway --listen http://…` replicas on loopback; on the way out, no process of theirs is left
(holds no test)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from ..conftest import ROOT, server_env
from ..distro import find_program
from ..processes import alive, children_of, free_port
from .gateways import SDK_UPSTREAM, Gateway, http_gateway

WAIT = 60.0

HAPROXY_CONFIG = ROOT / "deploy" / "haproxy" / "haproxy.cfg"


REPLICAS = 3


KEY = "replicas-share-this-key-of-32-bytes-or-more"


@dataclass
class Pool:
    url: str  # the load balancer's MCP endpoint
    replicas: list[Gateway]
    dirs: list[Path]  # each replica's own run directory

    def upstreams(self) -> list[list[str]]:
        """Each replica's live upstream processes."""
        return [replica.children() for replica in self.replicas]


def _haproxy() -> str:
    found, why = find_program("haproxy", "haproxy")
    if found is None:
        pytest.skip(f"HAProxy is needed for the load-balancer tests: {why}")
    return found


def _wait_healthy(url: str, haproxy: subprocess.Popen[bytes], log: Path) -> None:
    """Until the load balancer answers a health check through to a replica."""
    deadline = time.monotonic() + WAIT
    health = url.removesuffix("/mcp") + "/health"
    while True:
        assert haproxy.poll() is None, f"haproxy exited {haproxy.returncode}: {log.read_text()[-2000:]}"
        try:
            if httpx.get(health, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "the load balancer never answered"
        time.sleep(0.05)


@contextmanager
def balanced(
    tmp_path: Path, *options: str, upstream: list[str] = SDK_UPSTREAM, port: int | None = None, **env: str
) -> Iterator[Pool]:
    """HAProxy with the shipped configuration (on ``port``, else a free one) before three gateway
    replicas (``options``, ``env``); on the way out, no process of theirs is left."""
    executable = _haproxy()
    dirs = [tmp_path / f"replica-{index}" for index in range(1, REPLICAS + 1)]
    with ExitStack() as stack:
        replicas = []
        for directory in dirs:
            directory.mkdir()
            replicas.append(stack.enter_context(http_gateway(directory, *options, upstream=upstream, env=env)))
        port, log = port or free_port(), tmp_path / "haproxy.log"
        addresses = {f"MCP_GATEWAY_{i}": urlsplit(r.url).netloc for i, r in enumerate(replicas, start=1)}
        haproxy = subprocess.Popen(
            [executable, "-db", "-f", str(HAPROXY_CONFIG)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stack.enter_context(log.open("wb")),
            env=server_env(tmp_path, MCP_LB_BIND=f"127.0.0.1:{port}", **addresses),
        )
        pool = Pool(f"http://127.0.0.1:{port}/mcp", replicas, dirs)
        try:
            _wait_healthy(pool.url, haproxy, log)
            yield pool
        finally:
            haproxy.terminate()
            haproxy.wait(WAIT)
            spawned = [pid for replica in replicas for pid in children_of(replica.process.pid)]
            stack.close()  # every replica stopped (SIGTERM)
            assert all_gone(spawned), "a process outlived its replica"


def all_gone(pids: list[str]) -> bool:
    """Whether every process of ``pids`` has ended, waiting for the last ones a bounded time."""
    deadline = time.monotonic() + WAIT
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not any(alive(pid) for pid in pids)
