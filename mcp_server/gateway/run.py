"""`mcp-server gateway`: a client on STDIO, the chain in both directions, an upstream behind it.

Client → upstream frames are checked as client messages, upstream → client frames as server
messages, in one ``Session``. When the upstream ends first, every request still pending gets
``UPSTREAM_UNAVAILABLE`` and the gateway exits non-zero; when the client ends first, the
upstream is stopped (SIGTERM, then SIGKILL) and reaped. The report is written either way.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from pathlib import Path

from ..chain import build_chain
from ..error_boundary import render_rejection
from ..errors import CanonicalError, Rejection
from ..registry import SchemaRegistry
from ..transport.ndjson import LineSplitter
from ..transport.stdio import start_reader
from ..types import Direction, Frame, Message, MessageKind, Reply, Session
from .config import GatewayConfig
from .relay import relay, track_session, verdict
from .report import ConformanceReport, render_table
from .tools import UpstreamTools
from .upstream import Upstream

__all__ = ["run_gateway"]

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
    report = ConformanceReport(upstream=upstream.name, mode=config.mode.value)
    tools = UpstreamTools(registry)
    chain = build_chain(
        relay(report),
        registry=registry,
        tools=tools,
        max_frame_bytes=max_frame_bytes,
        verdict=verdict(config, report, registry),
        after_check=[track_session(config, report, tools)],
    )
    session = Session()
    client = _ClientOut(stdout_fd)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, lambda: _publish(report, runs_dir))
    await upstream.start()

    async def deliver(reply: Reply | None, *, towards_upstream: bool) -> None:
        if reply is None:
            return
        if towards_upstream:
            await upstream.send(reply.to_bytes(), reply.document)
        else:
            client.write(reply.to_bytes())

    async def from_client() -> None:
        queue = start_reader(stdin_fd)
        splitter = LineSplitter(max_frame_bytes)
        while True:
            chunk = await queue.get()
            for raw, size in splitter.feed(chunk) if chunk else splitter.close():
                frame = Frame(
                    raw=raw, size=size, transport="stdio", session=session, direction=Direction.CLIENT_TO_SERVER
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
        for (direction, request_id), method in sorted(session.pending.items(), key=lambda item: str(item[0][1])):
            if direction is not Direction.CLIENT_TO_SERVER:
                continue
            stand_in = Frame(
                raw=b"",
                transport="stdio",
                session=session,
                message=Message(kind=MessageKind.REQUEST, id=request_id, method=method),
            )
            report.violation(
                "upstream_unavailable",
                direction=Direction.SERVER_TO_CLIENT,
                method=method,
                request_id=request_id,
                action="answered",
            )
            rendered = render_rejection(
                Rejection(CanonicalError.UPSTREAM_UNAVAILABLE, frame=stand_in), stand_in, registry
            )
            await deliver(rendered, towards_upstream=False)
        session.pending.clear()
        status = 1
    for task in (client_task, upstream_task, stopping):
        task.cancel()
    exit_code = await upstream.close()
    if status and exit_code:
        status = exit_code if 0 < exit_code < 126 else 1
    log.info("upstream exited with %s", exit_code)
    _publish(report, runs_dir)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1):
        loop.remove_signal_handler(signum)
    return status


def _publish(report: ConformanceReport, runs_dir: Path) -> None:
    path = report.write(runs_dir)
    sys.stderr.write(render_table(report.to_document()))
    sys.stderr.write(f"mcp:report path={path}\n")
    sys.stderr.flush()
