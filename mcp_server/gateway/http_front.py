"""The gateway's Streamable HTTP front: gateway sessions as conversations of the shared HTTP session
manager (``transport/streamable.py``), which does everything about HTTP; the routes beside them.

A client session (``initialize`` negotiated a stateful version) gets a gateway session with an
upstream of its own (``http_session.py``); every request of the stateless 2026-07-28 protocol goes to
one shared gateway session, where a request is known by the exchange (the POST) that carried it,
never by what its client chose (``http_renames.py``), and what the upstream sends besides replies
reaches only the stream of the request it belongs to (``http_server_messages.py``). Who may post is
``http_access.py``'s; what a POST naming no session opens, ``http_conversations.py``'s (spec:
transports, "Streamable HTTP").
"""

from __future__ import annotations

import asyncio
import signal
import socket
from collections.abc import Callable
from pathlib import Path

from ..core.errors import Rejection
from ..execution.access import METADATA_PATH
from ..observe.metrics import CONTENT_TYPE, Metrics
from ..transport.connection import Connection
from ..transport.http import Send, refuse, serve_http, text_route
from ..transport.streamable import HttpOptions, Route, StreamableHttp
from .http_access import FrontAccess, upstream_metadata
from .http_conversations import GatewayConversations
from .reports import final_report, publish
from .session import GatewayRun

__all__ = ["FrontAccess", "GatewayConversations", "run_gateway_http"]


async def run_gateway_http(
    new_upstream: Callable[[], Connection],
    run: GatewayRun,
    options: HttpOptions,
    listener: socket.socket,
    runs_dir: Path,
    on_ready: Callable[[], None],
    access: FrontAccess | None = None,
) -> int:
    """Serve the HTTP front until SIGINT/SIGTERM; one report for every session (SIGUSR1 writes it),
    ``GET /health``, and ``/metrics`` beside the MCP path when there is a log to count from; with
    ``access``, the front's protected resource metadata and its guard."""
    report, events = run.report, run.events
    told = None if events is None else events.http_refusal

    async def refused(send: Send, rejection: Rejection, extra: tuple[tuple[bytes, bytes], ...]) -> None:
        await refuse(send, rejection, extra, told=told)  # a refusal is a frame of the log

    # A load balancer's health check: the replica answers while it serves (it stops on SIGTERM).
    routes: dict[str, Route] = {"/health": text_route(lambda: b"ok\n", b"text/plain", refused)}
    if events is not None:
        metrics = Metrics(run.registry)
        events.count_with(metrics.count)
        routes["/metrics"] = text_route(metrics.render, CONTENT_TYPE.encode(), refused)
    access = access or FrontAccess()
    guard = None
    if access.auth is not None:
        routes[METADATA_PATH] = text_route(access.auth.metadata, b"application/json", refused)
        guard = access.auth.guard()
    elif access.passthrough is not None:
        routes[METADATA_PATH] = upstream_metadata(access.passthrough, refused)
    conversations = GatewayConversations(new_upstream, run, access)
    app = StreamableHttp(conversations, options, refused, routes, guard)

    async def stop() -> None:
        conversations.stopping = True
        await app.close()
        await conversations.close()

    reaper = asyncio.ensure_future(app.reap_forever())
    usr1 = (signal.SIGUSR1, lambda: publish(report, runs_dir))
    try:
        await serve_http(
            app,
            listener,
            on_ready=on_ready,
            signals=[usr1],
            on_signal=final_report(report, runs_dir),
            on_stop=stop,
            read_seconds=options.read_seconds,
        )
    finally:
        reaper.cancel()
        await stop()
        publish(report, runs_dir)
    return 0
