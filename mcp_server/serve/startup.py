"""``mcp-server serve``: what the server is made of (corpus, policy, tools, the handler) and how each
transport runs it. The command line gives the settings and the event log; nothing here parses it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ..core.settings import Settings, SetupError
from ..core.types import Handler
from ..execution.access import AccessCheck, load_access
from ..execution.gate import event_sink
from ..execution.peer import attach_peer
from ..execution.setup import ExecutionSetup, load_execution_setup
from ..observe.events import EventLog
from ..registry.corpus import Corpus, load_corpus
from ..registry.schemas import SchemaRegistry
from .app import build_server
from .tools import ToolSet
from .tools.catalog import builtin_tools

__all__ = ["Server", "prepare", "run_http", "run_socket", "run_stdio"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Server:
    settings: Settings
    registry: SchemaRegistry
    corpus: Corpus
    execution: ExecutionSetup
    tools: ToolSet
    handler: Handler
    events: EventLog
    front_check: Callable[[str], AccessCheck] | None = None  # ``--auth``: made once the URL is known


def prepare(
    settings: Settings,
    environ: Mapping[str, str],
    events: EventLog,
    *,
    policy_path: Path | None = None,
    tools_path: Path | None = None,
    assert_formats: bool = False,
    auth: str | None = None,
) -> Server:
    """Everything ``serve`` runs, read and checked before any transport starts (``SetupError``).
    ``assert_formats``: string formats are checked (``invalid_format``) instead of annotations."""
    registry = SchemaRegistry(assert_formats=settings.assert_formats or assert_formats)
    front_check = None if auth is None else load_access(auth)  # a bad --auth is refused first
    corpus = load_corpus(environ, registry)
    execution = load_execution_setup(
        environ,
        registry,
        max_frame_bytes=settings.max_frame_bytes,
        policy_path=policy_path,
        tools_path=tools_path,
        sink=event_sink(events.emit),
    )
    _check_approver(execution, settings.endpoint)
    own = builtin_tools(environ, registry, corpus, execution.policy)
    extra = []
    if execution.executor is not None:  # an HTTP-backed catalogue: the HTTP client stack comes with it
        from .tools.http_backed import catalogue_tools

        extra = catalogue_tools(execution.executor)
    clash = {t.name for t in own} & {t.name for t in extra}
    if clash:
        raise SetupError(f"tool catalogue: {sorted(clash)[0]!r} is the name of a built-in tool")
    tools = ToolSet([*own, *extra], registry, io=None if execution.executor is None else execution.executor.io)
    execution.gate.decisions = partial(events.emit, "policy")
    handler = build_server(registry, tools, settings, policy=execution.stage_policy, gate=execution.gate, events=events)
    return Server(
        settings=settings,
        registry=registry,
        corpus=corpus,
        execution=execution,
        tools=tools,
        handler=handler,
        events=events,
        front_check=front_check,
    )


def _check_approver(execution: ExecutionSetup, endpoint: str) -> None:
    """Calls held for approval need an approver the caller cannot be. Over HTTP the REST approver
    (``/approvals``) is open to any client of ``/mcp`` unless ``MCP_APPROVER_TOKEN`` guards it: a client
    could read its own held call and approve it; without HTTP there is no approver but the client
    itself (elicitation), so turning elicitation off leaves none. Either is a ``SetupError``."""
    policy, executor = execution.policy, execution.executor
    holds = policy.default_rule.approval or any(rule.approval for _, rule in policy.tool_rules)
    holds = holds or (executor is not None and any(tool.approval for tool in executor.by_id.values()))
    if not holds:
        return
    if endpoint == "http" and execution.approver_token is None:
        raise SetupError(
            "calls are held for approval: set MCP_APPROVER_TOKEN (16+ characters), which /approvals then"
            " requires, or any client of /mcp could approve its own call"
        )
    if endpoint != "http" and not policy.approval_by_elicitation:
        raise SetupError(
            "calls are held for approval with [approval] elicitation = false, but only `serve --http` has an"
            " approver out of band (/approvals): no held call could ever be approved"
        )


def run_stdio(server: Server, on_ready: Callable[[], None]) -> None:
    from ..transport.stdio import serve_stdio

    limit = server.settings.max_frame_bytes
    asyncio.run(serve_stdio(server.handler, max_frame_bytes=limit, on_ready=on_ready, connect=attach_peer))


def run_socket(server: Server, on_ready: Callable[[], None]) -> None:
    from ..transport.unix_socket import bind_unix_socket, serve_unix_socket

    settings = server.settings
    listener = bind_unix_socket(settings.socket_path, settings.socket_mode)
    try:
        limit = settings.max_frame_bytes
        serving = serve_unix_socket(
            server.handler, listener, max_frame_bytes=limit, on_ready=on_ready, connect=attach_peer
        )
        asyncio.run(serving)
    finally:
        with contextlib.suppress(FileNotFoundError):
            settings.socket_path.unlink()  # ours: bound above (a file that was there is never removed)


def run_http(server: Server, listener: object, on_ready: Callable[[], None], *, resource: str | None = None) -> None:
    """Streamable HTTP at ``/mcp``, the REST face, ``/metrics`` (the HTTP stack is imported only here);
    ``resource``: the public MCP URL a token is for."""
    import socket

    from ..execution.access import FrontAuth
    from ..observe.metrics import Metrics
    from ..transport.http import serve_http
    from ..transport.streamable import HttpOptions
    from .http_app import serve_http_app
    from .rest import RestFace

    assert isinstance(listener, socket.socket)
    settings, registry, execution = server.settings, server.registry, server.execution
    metrics = Metrics(registry, extra_methods=[tool.name for tool in server.tools])
    server.events.count_with(metrics.count)
    rest = RestFace(
        registry=registry,
        gate=execution.gate,
        executor=execution.executor,
        max_body_bytes=settings.max_frame_bytes,
        approver_token=execution.approver_token,
    )
    options = HttpOptions(
        max_frame_bytes=settings.max_frame_bytes,
        allowed_hosts=settings.allowed_hosts,
        max_sessions=settings.max_sessions,
        read_seconds=settings.http_read_seconds,
    )
    if resource is None:  # the URL listened on
        host, port = listener.getsockname()[:2]
        resource = f"http://{'[' + host + ']' if ':' in host else host}:{port}/mcp"
    auth = None if server.front_check is None else FrontAuth(check=server.front_check(resource), resource=resource)
    app = serve_http_app(server.handler, registry, options, rest, metrics=metrics, events=server.events, auth=auth)
    asyncio.run(serve_http(app, listener, on_ready=on_ready, read_seconds=options.read_seconds))
