"""`mcp-server gateway`: clients on STDIO or a Unix socket, the chain in both directions, an upstream behind.

Client → upstream frames are checked as client messages, upstream → client frames as server
messages, in one ``Session``. When the upstream ends first, every request still pending gets
``UPSTREAM_UNAVAILABLE`` and the gateway exits non-zero; when the client ends first, the
upstream is stopped (SIGTERM, then SIGKILL) and reaped. The report is written either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import NamedTuple

from ..chain import build_chain
from ..error_boundary import render_rejection
from ..errors import CanonicalError, Rejection
from ..registry import SchemaRegistry
from ..settings import SetupError
from ..transport.ndjson import LineSplitter
from ..transport.signals import stop_on_signals
from ..transport.stdio import start_reader
from ..transport.unix_socket import accept_until_stopped, chunks_of
from ..types import Direction, Frame, Handler, Message, MessageKind, Reply, RequestId, Session
from .config import GatewayConfig
from .relay import relay, track_session, verdict
from .report import ConformanceReport, render_table
from .tools import UpstreamTools
from .upstream import Upstream

__all__ = ["Checks", "publish", "run_gateway", "run_gateway_unix", "session_chain", "unavailable_replies"]

log = logging.getLogger("mcp_server.gateway")


class _ClientOut:
    """The client's side of STDIO: JSON-RPC frames only, one per line."""

    def __init__(self, fd: int) -> None:
        self._out = os.fdopen(os.dup(fd), "wb", buffering=0)
        self.closed = False

    def write(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            self._out.write(data + b"\n")
        except BrokenPipeError:
            self.closed = True


class Checks(NamedTuple):
    """What every session of one gateway run shares: the schemas, the rules, the report, the limit."""

    registry: SchemaRegistry
    config: GatewayConfig
    report: ConformanceReport
    max_frame_bytes: int


async def run_gateway(
    upstream: Upstream,
    *,
    registry: SchemaRegistry,
    config: GatewayConfig,
    max_frame_bytes: int,
    runs_dir: Path,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
) -> int:
    """One client on STDIO, one upstream: returns the exit status (non-zero when the upstream died)."""
    report = ConformanceReport(upstream=upstream.name, mode=config.mode.value)
    client = _ClientOut(stdout_fd)

    async def write(data: bytes) -> None:
        client.write(data)

    with stop_on_signals((signal.SIGUSR1, lambda: publish(report, runs_dir))) as stop:
        try:
            return await _session(
                upstream,
                start_reader(stdin_fd).get,
                write,
                transport="stdio",
                checks=Checks(registry, config, report, max_frame_bytes),
                stop=stop,
            )
        finally:
            publish(report, runs_dir)


async def run_gateway_unix(
    new_upstream: Callable[[], Upstream],
    listener: socket.socket,
    *,
    registry: SchemaRegistry,
    config: GatewayConfig,
    max_frame_bytes: int,
    runs_dir: Path,
    on_ready: Callable[[], None] = lambda: None,
) -> int:
    """Clients on a Unix socket: each connection is its own session with its own upstream (a
    STDIO server serves one client). Runs until SIGINT/SIGTERM; one report for every session."""
    report = ConformanceReport(upstream=new_upstream().name, mode=config.mode.value)
    checks = Checks(registry, config, report, max_frame_bytes)
    with stop_on_signals((signal.SIGUSR1, lambda: publish(report, runs_dir))) as stop:

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            async def write(data: bytes) -> None:
                writer.write(data + b"\n")
                await writer.drain()

            try:
                await _session(new_upstream(), chunks_of(reader), write, transport="socket", checks=checks, stop=stop)
            except SetupError as exc:
                log.error("upstream: %s", exc)

        try:
            await accept_until_stopped(listener, connection, stop=stop, on_ready=on_ready)
        finally:
            publish(report, runs_dir)
    return 0


async def _session(
    upstream: Upstream,
    next_chunk: Callable[[], Awaitable[bytes]],
    write: Callable[[bytes], Awaitable[None]],
    *,
    transport: str,
    checks: Checks,
    stop: asyncio.Event,
) -> int:
    """One client and one upstream, both directions through the chain, until either side ends."""
    chain = session_chain(checks)
    max_frame_bytes = checks.max_frame_bytes
    session = Session()
    await upstream.start()

    async def deliver(reply: Reply | None, *, towards_upstream: bool) -> None:
        if reply is None:
            return
        if towards_upstream:
            await upstream.send(reply.to_bytes(), reply.document)
        else:
            await write(reply.to_bytes())

    async def from_client() -> None:
        splitter = LineSplitter(max_frame_bytes)
        while True:
            chunk = await next_chunk()
            for raw, size in splitter.feed(chunk) if chunk else splitter.close():
                frame = Frame(
                    raw=raw, size=size, transport=transport, session=session, direction=Direction.CLIENT_TO_SERVER
                )
                reply = await chain(frame)
                await deliver(reply, towards_upstream=reply is not None and reply.to_peer)
            if not chunk:
                return

    async def from_upstream() -> None:
        async for raw, size in upstream.frames():
            frame = Frame(
                raw=raw, size=size, transport="upstream", session=session, direction=Direction.SERVER_TO_CLIENT
            )
            reply = await chain(frame)
            if session.protocol_version is not None and hasattr(upstream, "note_version"):
                upstream.note_version(session.protocol_version)
            await deliver(reply, towards_upstream=reply is None or not reply.to_peer)

    client_task = asyncio.ensure_future(from_client())
    upstream_task = asyncio.ensure_future(from_upstream())
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({client_task, upstream_task, stopping}, return_when=asyncio.FIRST_COMPLETED)
    status = 0
    if upstream_task.done() and not client_task.done():
        # The upstream went away first: nobody will answer what the client is waiting for.
        for _, rendered in unavailable_replies(session, checks, transport):
            with contextlib.suppress(ConnectionError, OSError):
                await deliver(rendered, towards_upstream=False)
        session.pending.clear()
        status = 1
    for task in (client_task, upstream_task, stopping):
        task.cancel()
    exit_code = await upstream.close()
    if status and exit_code:
        status = exit_code if 0 < exit_code < 126 else 1
    log.info("upstream exited with %s", exit_code)
    return status


def session_chain(checks: Checks) -> Handler:
    """The one chain of a gateway session, both directions: the checks, the verdict, the relay."""
    registry, config, report, max_frame_bytes = checks
    tools = UpstreamTools(registry)
    return build_chain(
        relay(report),
        registry=registry,
        tools=tools,
        max_frame_bytes=max_frame_bytes,
        verdict=verdict(config, report, registry),
        after_check=[track_session(config, report, tools)],
    )


def unavailable_replies(session: Session, checks: Checks, transport: str) -> list[tuple[RequestId, Reply]]:
    """UPSTREAM_UNAVAILABLE for every client request still pending in ``session`` (the upstream is
    gone: nobody else will answer them), each counted in the report."""
    replies = []
    for (direction, request_id), method in sorted(session.pending.items(), key=lambda item: str(item[0][1])):
        if direction is not Direction.CLIENT_TO_SERVER:
            continue
        stand_in = Frame(
            raw=b"",
            transport=transport,
            session=session,
            message=Message(kind=MessageKind.REQUEST, id=request_id, method=method),
        )
        checks.report.violation(
            "upstream_unavailable",
            direction=Direction.SERVER_TO_CLIENT,
            method=method,
            request_id=request_id,
            action="answered",
        )
        rendered = render_rejection(
            Rejection(CanonicalError.UPSTREAM_UNAVAILABLE, frame=stand_in), stand_in, checks.registry
        )
        if rendered is not None:
            replies.append((request_id, rendered))
    return replies


def publish(report: ConformanceReport, runs_dir: Path) -> None:
    path = report.write(runs_dir)
    sys.stderr.write(render_table(report.to_document()))
    sys.stderr.write(f"mcp:report path={path}\n")
    sys.stderr.flush()
