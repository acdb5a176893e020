"""The ``mcp-server`` command line. Diagnostics go to stderr; stdout is the protocol's, or a result's.

Set-up failures print ``mcp:error reason=setup_failed detail=...`` and exit 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from . import __version__
from .registry import SchemaError, SchemaRegistry
from .settings import Settings, SetupError, parse_host_port

__all__ = ["main"]


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-server", description="MCP conformance gateway and schema-validation server"
    )
    parser.add_argument("--version", action="version", version=f"mcp-server {__version__}")
    parser.add_argument("--validate", metavar="FILE", help="validate one asset file and exit (as `validate FILE`)")
    commands = parser.add_subparsers(dest="command")
    serve = commands.add_parser("serve", help="run the MCP server (STDIO by default)")
    serve.add_argument("--socket", metavar="PATH", help="serve NDJSON on a Unix socket")
    serve.add_argument("--http", metavar="HOST:PORT", help="serve MCP Streamable HTTP")
    validate = commands.add_parser("validate", help="validate one asset file")
    validate.add_argument("file")
    validate.add_argument("--schema", metavar="NAME")
    gateway = commands.add_parser(
        "gateway",
        help="a validating proxy in front of an MCP server",
        usage="mcp-server gateway [--listen stdio|unix:PATH|http://HOST:PORT/mcp] [--mode enforce|observe] "
        "[--config FILE] (--upstream URL | -- COMMAND ...)",
    )
    gateway.add_argument(
        "--listen", default="stdio", help="where clients connect: stdio, unix:PATH or http://HOST:PORT/mcp"
    )
    gateway.add_argument("--max-sessions", type=int, default=100, help="HTTP: open client sessions at most")
    gateway.add_argument("--idle-timeout", type=float, default=600.0, help="HTTP: seconds before an idle session ends")
    gateway.add_argument("--mode", choices=["enforce", "observe"], help="default: enforce (or the config's)")
    gateway.add_argument("--config", type=Path, help="gateway configuration (JSON or TOML)")
    gateway.add_argument("--upstream", metavar="URL", help="a remote Streamable HTTP MCP endpoint")
    report = commands.add_parser("report", help="print a gateway conformance report again")
    report.add_argument("file")
    from .check_command import add_check_arguments

    add_check_arguments(commands.add_parser("check", help="validate a recorded MCP session (NDJSON capture) offline"))
    return parser


def _setup_logging() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("mcp:%(levelname)s %(message)s"))
    root = logging.getLogger("mcp_server")
    root.addHandler(handler)
    root.setLevel(logging.INFO if os.environ.get("MCP_LOG_LEVEL", "").lower() == "info" else logging.WARNING)
    root.propagate = False


def _write_ready(path: Path, address: str | None = None) -> None:
    """``<pid> <ISO-8601 UTC>`` (and the address, for a server that picked its own port)."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + f".{os.getpid()}.tmp")
    temporary.write_text(f"{os.getpid()} {stamp}" + (f" {address}" if address else "") + "\n")
    temporary.replace(path)


def _serve(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    from dataclasses import replace

    from .corpus import load_corpus
    from .server import build_server
    from .tools import ToolSet
    from .tools.catalog import builtin_tools

    settings = Settings.from_env(environ)
    if args.socket:
        settings = replace(settings, endpoint="socket", socket_path=Path(args.socket))
    if args.http:
        host, port = parse_host_port(args.http, name="--http")
        settings = replace(settings, endpoint="http", http_host=host, http_port=port)
    registry = SchemaRegistry()
    corpus = load_corpus(environ, registry)
    tools = ToolSet(builtin_tools(environ, registry, corpus), registry)
    handler = build_server(registry, tools, settings)
    dirs = f"schemas_dir={corpus.schemas_dir} examples_dir={corpus.examples_dir}"
    mode = settings.endpoint
    cleanup: list[Path] = []  # what this process created, removed on the way out
    try:
        if mode == "stdio":
            from .transport.stdio import serve_stdio

            def ready() -> None:
                _write_ready(settings.ready_file)
                cleanup.append(settings.ready_file)
                _say(f"mcp:ready mode=stdio {dirs}")

            asyncio.run(serve_stdio(handler, max_frame_bytes=settings.max_frame_bytes, on_ready=ready))
        elif mode == "socket":
            from .transport.unix_socket import bind_unix_socket, serve_unix_socket

            listener = bind_unix_socket(settings.socket_path, settings.socket_mode)
            cleanup.append(settings.socket_path)

            def ready() -> None:
                _write_ready(settings.ready_file)
                cleanup.append(settings.ready_file)
                _say(f"mcp:ready mode=socket path={settings.socket_path} {dirs}")

            asyncio.run(serve_unix_socket(handler, listener, max_frame_bytes=settings.max_frame_bytes, on_ready=ready))
        else:
            from .transport.http import HttpOptions, McpHttpApp, bind_tcp, serve_http

            try:
                listener = bind_tcp(settings.http_host, settings.http_port)
            except OSError as exc:
                raise SetupError(
                    f"cannot listen on {settings.http_host}:{settings.http_port}: {exc.strerror}"
                ) from None
            host, port = listener.getsockname()[:2]
            url = f"http://{'[' + host + ']' if ':' in host else host}:{port}/mcp"
            options = HttpOptions(
                max_frame_bytes=settings.max_frame_bytes,
                allowed_hosts=settings.allowed_hosts,
                max_sessions=settings.max_sessions,
            )

            def ready() -> None:
                _write_ready(settings.ready_file, url)
                cleanup.append(settings.ready_file)
                _say(f"mcp:ready mode=http url={url} {dirs}")

            asyncio.run(serve_http(McpHttpApp(handler, registry, options), listener, on_ready=ready))
    finally:
        for path in cleanup:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        _say(f"mcp:shutdown mode={mode}")
    return 0


def _gateway(args: argparse.Namespace, command: list[str], environ: Mapping[str, str]) -> int:
    from .gateway.config import GatewayConfig
    from .gateway.run import run_gateway, run_gateway_unix
    from .gateway.upstream import HttpUpstream, StdioUpstream, Upstream

    listen = args.listen
    if listen.startswith("http:"):
        return _gateway_http(args, command, environ)
    if listen != "stdio" and not (listen.startswith("unix:") and len(listen) > len("unix:")):
        raise SetupError(f"--listen must be stdio, unix:PATH or http://HOST:PORT/PATH, got {listen!r}")
    settings = Settings.from_env(environ)
    registry = SchemaRegistry()
    config = GatewayConfig.load(args.config, registry, mode=args.mode)
    if args.upstream and command:
        raise SetupError("give either --upstream URL or `-- COMMAND ...`, not both")

    def new_upstream() -> Upstream:
        if args.upstream:
            return HttpUpstream(args.upstream, max_frame_bytes=settings.max_frame_bytes)
        return StdioUpstream(command, max_frame_bytes=settings.max_frame_bytes, grace_seconds=config.grace_seconds)

    upstream = new_upstream()
    runs_dir = Path(environ.get("MCP_RUNS_DIR") or "runs")
    ready = f"upstream={upstream.name} policy={config.mode.value}"
    if listen == "stdio":
        _say(f"mcp:ready mode=gateway listen=stdio {ready}")
        try:
            return asyncio.run(
                run_gateway(
                    upstream,
                    registry=registry,
                    config=config,
                    max_frame_bytes=settings.max_frame_bytes,
                    runs_dir=runs_dir,
                )
            )
        finally:
            _say("mcp:shutdown mode=gateway")
    from .transport.unix_socket import bind_unix_socket

    path = Path(listen.removeprefix("unix:"))
    listener = bind_unix_socket(path, settings.socket_mode)
    try:
        return asyncio.run(
            run_gateway_unix(
                new_upstream,
                listener,
                registry=registry,
                config=config,
                max_frame_bytes=settings.max_frame_bytes,
                runs_dir=runs_dir,
                on_ready=lambda: _say(f"mcp:ready mode=gateway listen=unix:{path} {ready}"),
            )
        )
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        _say("mcp:shutdown mode=gateway")


def _gateway_http(args: argparse.Namespace, command: list[str], environ: Mapping[str, str]) -> int:
    from .gateway.config import GatewayConfig
    from .gateway.http_front import FrontOptions, parse_listen_url, run_gateway_http
    from .gateway.upstream import HttpUpstream, StdioUpstream, Upstream
    from .transport.http import bind_tcp

    host, port, path = parse_listen_url(args.listen)
    if args.max_sessions <= 0 or args.idle_timeout <= 0:
        raise SetupError("--max-sessions and --idle-timeout must be positive")
    if args.upstream and command:
        raise SetupError("give either --upstream URL or `-- COMMAND ...`, not both")
    settings = Settings.from_env(environ)
    registry = SchemaRegistry()
    config = GatewayConfig.load(args.config, registry, mode=args.mode)

    def new_upstream() -> Upstream:
        if args.upstream:
            return HttpUpstream(args.upstream, max_frame_bytes=settings.max_frame_bytes)
        return StdioUpstream(command, max_frame_bytes=settings.max_frame_bytes, grace_seconds=config.grace_seconds)

    name = new_upstream().name
    try:
        listener = bind_tcp(host, port)
    except OSError as exc:
        raise SetupError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    bound_host, bound_port = listener.getsockname()[:2]
    url = f"http://{'[' + bound_host + ']' if ':' in bound_host else bound_host}:{bound_port}{path}"
    options = FrontOptions(
        path=path,
        allowed_hosts=settings.allowed_hosts,
        max_sessions=args.max_sessions,
        idle_seconds=args.idle_timeout,
        max_frame_bytes=settings.max_frame_bytes,
    )

    def ready() -> None:
        _write_ready(settings.ready_file, url)
        _say(f"mcp:ready mode=gateway listen={url} upstream={name} policy={config.mode.value}")

    try:
        return asyncio.run(
            run_gateway_http(
                new_upstream,
                listener,
                registry=registry,
                config=config,
                options=options,
                runs_dir=Path(environ.get("MCP_RUNS_DIR") or "runs"),
                on_ready=ready,
            )
        )
    finally:
        with contextlib.suppress(FileNotFoundError):
            settings.ready_file.unlink()
        _say("mcp:shutdown mode=gateway")


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    environ = os.environ if environ is None else environ
    command: list[str] = []
    if argv[:1] == ["gateway"] and "--" in argv:
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1 :]
    if argv[:1] == ["report"]:
        from .gateway.report import main_report

        return main_report(argv[1:])
    args = _parser().parse_args(argv)
    _setup_logging()
    try:
        if args.validate or args.command == "validate":
            from .validate_command import main_validate

            target = args.validate or args.file
            extra = ["--schema", args.schema] if getattr(args, "schema", None) else []
            return main_validate([target, *extra], environ)
        if args.command == "check":
            from .check_command import run_check

            return run_check(args)
        if args.command == "gateway":
            return _gateway(args, command, environ)
        return _serve(args, environ)
    except (SetupError, SchemaError) as exc:
        _say(f"mcp:error reason=setup_failed detail={exc}")
        return 2
    except KeyboardInterrupt:
        return 0
