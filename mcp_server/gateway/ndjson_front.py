"""The gateway's NDJSON fronts: one client on STDIO, or one per Unix socket connection, each with an
upstream of its own, in one gateway session.

The client's frames are handled in the order it sent them, and every answer is written as soon as it
exists (none waits behind another request's). No request is left unanswered: when the
upstream ends first, every request still pending gets ``UPSTREAM_UNAVAILABLE`` and the gateway exits
non-zero; when the client ends its input, the upstream has the grace period to answer what is
pending, the rest is cancelled upstream, and the upstream is stopped and reaped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.session import Session
from ..core.settings import SetupError
from ..core.types import CLIENT_TO_SERVER, Frame, Message, Reply, RequestId
from ..execution.peer import PeerChannel
from ..transport.connection import Connection, NdjsonConnection
from ..transport.signals import stop_on_signals
from ..transport.stdio import open_writer, start_reader
from ..transport.unix_socket import accept_until_stopped, chunks_of
from .reports import final_report, publish
from .session import GatewayRun, GatewaySession

__all__ = ["NdjsonClient", "run_socket", "run_stdio"]

log = logging.getLogger("mcp_server.gateway")


class NdjsonClient:
    """The client's side of an NDJSON session: every answer written as soon as it exists.

    Whether the gateway made it or the upstream sent it, an answer never waits behind another
    request's (JSON-RPC matches replies by id); what must come in order is kept so where it is made
    (a call waits for the list that checks it: ``Readiness``).
    """

    ordered = True

    def __init__(self, run: GatewayRun, upstream: Connection, connection: NdjsonConnection) -> None:
        self.connection = connection
        self._frames = connection.frames()
        self.gateway = GatewaySession(run, upstream, lambda _: self, transport=connection.name)
        self.session: Session = self.gateway.session
        self.ended = False

    def relaying(self, frame: Frame, message: Message) -> None:
        return None

    def cancelled(self, request_id: RequestId) -> bool:
        return True  # one client: every request is its own

    def asker(self, message: Message) -> PeerChannel:
        return PeerChannel(self.connection.send, self.pump)  # the client's answer is read meanwhile

    async def passed(self, reply: Reply, message: Message | None) -> None:
        """A frame of the upstream's (or an answer in its place): written now."""
        await self.connection.send(reply.to_bytes())

    async def pump(self) -> bool:
        """Read and handle one more client frame; ``False`` at end of input."""
        line = await anext(self._frames, None)
        if line is None:
            self.ended = True
            return False
        raw, size = line
        handled = await self.gateway.from_client(Frame(raw, self.connection.name, self.session, size))
        if handled.reply is not None:
            await self.connection.send(handled.reply.to_bytes())
        return True

    async def _from_client(self) -> None:
        while not self.ended and await self.pump():
            pass

    async def run(self, stop: asyncio.Event) -> int:
        """Both directions until either side ends (or ``stop``); the exit status (non-zero: the
        upstream went away first)."""
        gateway = self.gateway
        await gateway.start()
        client_task = asyncio.ensure_future(self._from_client())
        upstream_task = asyncio.ensure_future(gateway.pump_upstream())
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({client_task, upstream_task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        _said(client_task, "client")
        _said(upstream_task, "upstream")
        gone = upstream_task.done() and not client_task.done()
        if gone:  # nobody will answer what the client waits for
            await gateway.settle_all("upstream_gone", upstream_alive=False)
        elif client_task.done() and not stopping.done():
            await self._grace(upstream_task, stopping)
            await gateway.settle_all("client_closed", upstream_alive=not upstream_task.done())
        else:
            await gateway.settle_all("gateway_stopped", upstream_alive=not upstream_task.done())
        closing: asyncio.Future[int | None] | None = None
        if client_task.done() and not upstream_task.done() and not stopping.done():
            # The client has said all it will (it closed its input). The upstream gets the same end of
            # input and exits; what it still sends reaches the client. Bounded: close() escalates.
            closing = asyncio.ensure_future(gateway.upstream.close())
            await asyncio.wait({upstream_task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        for task in (client_task, upstream_task, stopping):
            task.cancel()
        exit_code = await gateway.close_upstream(closing)
        log.info("upstream exited with %s", exit_code)
        if gone and exit_code:
            return exit_code if 0 < exit_code < 126 else 1
        return 1 if gone else 0

    async def _grace(self, upstream_task: asyncio.Future[Any], stopping: asyncio.Future[Any]) -> None:
        """The client ended its input: the upstream, its input still open, has the grace period to
        answer what is pending (a client that pipes its requests in still reads the replies)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.gateway.run.config.grace_seconds
        heard = self.gateway.heard
        while any(True for _ in self.session.waiting(CLIENT_TO_SERVER)) and not (
            upstream_task.done() or stopping.done()
        ):
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            heard.clear()
            waiting = asyncio.ensure_future(heard.wait())
            await asyncio.wait(
                {waiting, upstream_task, stopping}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
            )
            waiting.cancel()


def _said(task: asyncio.Future[Any], side: str) -> None:
    """A side's loop that ended on a fault of the gateway's own: said on stderr with its traceback
    (never on the wire), not taken for that side's end of input."""
    if task.done() and not task.cancelled() and task.exception() is not None:
        log.error("gateway: the %s side's loop ended on an internal error", side, exc_info=task.exception())


async def run_stdio(
    upstream: Connection,
    run: GatewayRun,
    runs_dir: Path,
    *,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    on_ready: Callable[[], None] = lambda: None,
) -> int:
    """One client on STDIO, one upstream: returns the exit status (non-zero when the upstream died).
    ``on_ready`` once a signal stops it as it should (the report written): not before."""
    report = run.report
    writer = await open_writer(stdout_fd)  # the client's side of STDIO: JSON-RPC frames only, one per line
    usr1 = (signal.SIGUSR1, lambda: publish(report, runs_dir))
    with stop_on_signals(usr1, on_stop=final_report(report, runs_dir)) as stop:
        on_ready()

        async def write(data: bytes) -> None:
            """A frame to the client, waiting while it reads slowly, but not past a stop: a client that
            holds its stdout unread does not keep the gateway from ending (``writer.close`` cuts it)."""
            with contextlib.suppress(BrokenPipeError):  # the client closed stdout: what it would read is dropped
                if not writer.write(data) and not stop.is_set():
                    stopping = asyncio.ensure_future(stop.wait())
                    room = asyncio.ensure_future(writer.room())
                    await asyncio.wait({room, stopping}, return_when=asyncio.FIRST_COMPLETED)
                    stopping.cancel()
                    room.cancel()

        held = run.config.held_bytes(CLIENT_TO_SERVER)
        client = NdjsonConnection(start_reader(stdin_fd).get, write, name="stdio", max_frame_bytes=held)
        try:
            return await NdjsonClient(run, upstream, client).run(stop)
        finally:
            publish(report, runs_dir)
            await writer.close(stop)


async def run_socket(
    new_upstream: Callable[[], Connection],
    listener: socket.socket,
    run: GatewayRun,
    runs_dir: Path,
    *,
    on_ready: Callable[[], None] = lambda: None,
) -> int:
    """Clients on a Unix socket: each connection is its own session with its own upstream (a
    STDIO server serves one client). Runs until SIGINT/SIGTERM; one report for every session."""
    report = run.report
    usr1 = (signal.SIGUSR1, lambda: publish(report, runs_dir))
    with stop_on_signals(usr1, on_stop=final_report(report, runs_dir)) as stop:

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            async def write(data: bytes) -> None:
                writer.write(data)
                await writer.drain()

            held = run.config.held_bytes(CLIENT_TO_SERVER)
            client = NdjsonConnection(chunks_of(reader), write, name="socket", max_frame_bytes=held)
            try:
                await NdjsonClient(run, new_upstream(), client).run(stop)
            except SetupError as exc:
                log.error("upstream: %s", exc)

        try:
            await accept_until_stopped(listener, connection, stop=stop, on_ready=on_ready)
        finally:
            publish(report, runs_dir)
    return 0
