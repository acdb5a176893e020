"""``mcp-server gateway``: the validating proxy in front of one MCP server (or many), on STDIO, a Unix
socket or HTTP."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.files import ReadyFile
from ..core.settings import Settings, SetupError, seconds
from .common import (
    HEADER_HELP,
    declare_front_auth,
    declare_upstream_command,
    event_log,
    front_auth,
    listen_tcp,
    open_log,
    positive_bytes,
    redact_logs,
    say,
)

if TYPE_CHECKING:
    from ..observe.tracing import Tracer
    from ..transport.child_process import Started

__all__ = ["USAGE", "declare", "run"]

USAGE = (
    "mcp-server gateway [--listen stdio|unix:PATH|http://HOST:PORT/mcp] [--mode enforce|observe] "
    "[--config FILE] [--lock FILE] [--bridge VERSION] [--otel] [--max-frame-bytes N] "
    "[--max-server-frame-bytes N] (--upstream URL | --servers FILE | [--] COMMAND ...)"
)


def declare(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--listen", default="stdio", help="where clients connect: stdio, unix:PATH or http://HOST:PORT/mcp"
    )
    parser.add_argument(
        "--max-sessions", type=int, help="HTTP: open client sessions at most (default: sized to the memory, up to 100)"
    )
    parser.add_argument("--idle-timeout", default="600", help="HTTP: seconds before an idle session ends")
    parser.add_argument("--mode", choices=["enforce", "observe"], help="default: enforce (or the config's)")
    parser.add_argument("--config", type=Path, help="gateway configuration (JSON or TOML)")
    parser.add_argument("--upstream", metavar="URL", help="a remote Streamable HTTP MCP endpoint")
    parser.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'", help=HEADER_HELP)
    declare_front_auth(parser, passthrough=True)
    parser.add_argument(
        "--servers", type=Path, metavar="FILE", help="many upstreams: an MCP client's configuration (docs/aggregate.md)"
    )
    parser.add_argument("--policy", type=Path, help="execution policy, TOML or JSON (or MCP_POLICY_FILE)")
    parser.add_argument("--lock", type=Path, metavar="FILE", help="tool lockfile (`mcp-server lock`) to hold tools to")
    parser.add_argument("--lock-server", metavar="NAME", help="the lockfile's server key (default: the only one)")
    parser.add_argument(
        "--bridge",
        metavar="VERSION",
        help="the upstream speaks only VERSION: clients of the other era are translated (2025-11-25, 2026-07-28)",
    )
    parser.add_argument(
        "--otel", action="store_true", help="export a span per forwarded call (MCP_OTEL=1; the otel extra; OTEL_*)"
    )
    parser.add_argument(
        "--max-frame-bytes",
        type=positive_bytes,
        metavar="N",
        help="largest frame a client may send (MCP_MAX_FRAME_BYTES, the config's; default 1 MiB)",
    )
    parser.add_argument(
        "--max-server-frame-bytes",
        type=positive_bytes,
        metavar="N",
        help="largest frame the upstream may send (MCP_MAX_SERVER_FRAME_BYTES, the config's; default 16 MiB)",
    )
    declare_upstream_command(parser)


def run(args: argparse.Namespace, command: list[str], environ: Mapping[str, str]) -> int:
    settings = Settings.from_env(environ)
    if args.listen != "stdio" or not command or args.upstream or args.servers:
        return _run(args, command, environ, settings)
    # One client on STDIO before one command: the upstream starts first and boots while the gateway
    # loads (its imports, schemas and policy), as it would for a client that started it direct (issue 34).
    from ..transport.child_process import discard, start_child
    from ..transport.event_loop import runner

    front_auth(args, environ, None, "--listen")  # what is refused before anything starts, first
    ReadyFile(settings.ready_file).claim()
    with runner(settings.event_loop, stdio=True) as loop:
        early = [loop.run(start_child(command))]
        try:
            return _run(args, command, environ, settings, loop, early)
        finally:
            if early:  # refused before its session took it
                loop.run(discard(early.pop()))


def _run(
    args: argparse.Namespace,
    command: list[str],
    environ: Mapping[str, str],
    settings: Settings,
    loop: asyncio.Runner | None = None,
    early: list[Started] | None = None,
) -> int:
    """The gateway run; ``loop`` and ``early``: the loop its upstream was started on, and that upstream
    (taken by the session)."""
    from ..gateway import startup
    from ..transport.event_loop import loop_name

    listen = startup.parse_listen(args.listen)  # a bad value is refused before anything starts
    auth, resource = front_auth(args, environ, listen.host if listen.front == "http" else None, "--listen")
    ready_file = ReadyFile(settings.ready_file)
    ready_file.claim()  # never another's file: refused before anything starts
    events = event_log(settings, args, "gateway")
    options = _gateway_options(args, command, settings, environ)
    gateway = startup.prepare(settings, environ, events, **options, auth=auth, interactive=True, started=early)
    redact_logs(gateway.redactor)
    open_log(events, gateway.redactor)
    detail = {"mode": "gateway", "schemas": gateway.run.registry.provenance}
    events.emit("start", status="started", transport=listen.front, detail=detail)
    ready = f"upstream={gateway.upstream_name} policy={gateway.run.config.mode.value}"
    ready += f" loop={loop_name(settings.event_loop, stdio=listen.front == 'stdio')}"  # uvloop where installed

    def on_ready(where: str, address: str | None = None) -> Callable[[], None]:
        def said() -> None:
            say(f"mcp:ready mode=gateway listen={where} {ready}")  # said before the file a waiter watches
            ready_file.write(address)

        return said

    try:
        if listen.front == "stdio":
            return startup.run_stdio(gateway, on_ready("stdio"), loop)
        if listen.front == "http":
            listener, url = listen_tcp(listen.host, listen.port, listen.path)
            idle = seconds(args.idle_timeout, name="--idle-timeout")  # nan turned reaping off
            limits = {"max_sessions": args.max_sessions, "idle_seconds": idle}
            return startup.run_http(gateway, listener, listen, on_ready(url, url), resource=resource or url, **limits)
        from ..transport.unix_socket import bind_unix_socket

        path = Path(listen.path)
        listener = bind_unix_socket(path, settings.socket_mode)
        try:
            return startup.run_socket(gateway, listener, on_ready(f"unix:{path}", str(path)))
        finally:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    finally:
        ready_file.remove()  # only the one this process wrote: a gateway that never bound removes none
        gateway.run.tracer.close()
        events.emit("stop", status="stopped", transport=listen.front, detail={"mode": "gateway"})
        events.close()
        say("mcp:shutdown mode=gateway")


def _gateway_options(
    args: argparse.Namespace, command: list[str], settings: Settings, environ: Mapping[str, str]
) -> dict[str, Any]:
    """What the command line says of the gateway run, as ``startup.prepare`` takes it."""
    return {
        "upstream_url": args.upstream,
        "command": command,
        "config_path": args.config,
        "mode": args.mode,
        "policy_path": args.policy,
        "assert_formats": args.assert_formats,
        "lock_path": args.lock,
        "lock_server": args.lock_server,
        "tracer": _tracer(args, settings, environ),
        "bridge": args.bridge,
        "headers": args.header,
        "limits": (args.max_frame_bytes, args.max_server_frame_bytes),
        "servers_path": args.servers,
    }


def _tracer(args: argparse.Namespace, settings: Settings, environ: Mapping[str, str]) -> Tracer:
    """W3C trace context across the gateway; OpenTelemetry export (the ``otel`` extra) when asked
    for, imported only then."""
    if not (args.otel or environ.get("MCP_OTEL") == "1"):
        from ..observe.tracing import Tracer

        return Tracer(settings.seed if settings.deterministic or args.deterministic else None)
    try:
        from ..observe.otel import OtelTracer, exporter_from_env
    except ImportError:
        raise SetupError("--otel needs the otel extra: pip install 'mcp-server[otel]'") from None
    return OtelTracer(exporter_from_env(environ))
