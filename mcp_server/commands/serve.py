"""``mcp-server serve``: the MCP server of the project's own tools, on STDIO, a Unix socket or HTTP."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from pathlib import Path

from ..core.files import ReadyFile
from ..core.settings import Settings, parse_host_port
from .common import declare_front_auth, event_log, front_auth, listen_tcp, open_log, redact_logs, say

__all__ = ["declare", "run"]


def declare(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--socket", metavar="PATH", help="serve NDJSON on a Unix socket")
    parser.add_argument("--http", metavar="HOST:PORT", help="serve MCP Streamable HTTP")
    parser.add_argument("--policy", type=Path, help="execution policy, TOML or JSON (or MCP_POLICY_FILE)")
    parser.add_argument("--tools", type=Path, help="HTTP-backed tool catalogue (or MCP_HTTP_TOOLS_FILE)")
    declare_front_auth(parser, passthrough=False)


def run(args: argparse.Namespace, command: list[str], environ: Mapping[str, str]) -> int:
    from dataclasses import replace

    from ..serve import startup

    settings = Settings.from_env(environ)
    if args.socket:
        settings = replace(settings, endpoint="socket", socket_path=Path(args.socket))
    if args.http:
        host, port = parse_host_port(args.http, name="--http")
        settings = replace(settings, endpoint="http", http_host=host, http_port=port)
    http = settings.endpoint == "http"
    auth, resource = front_auth(args, environ, settings.http_host if http else None, "--http")
    ready_file = ReadyFile(settings.ready_file)
    ready_file.claim()  # never another's file: refused before anything starts
    events = event_log(settings, args, "serve")
    server = startup.prepare(
        settings,
        environ,
        events,
        policy_path=args.policy,
        tools_path=args.tools,
        assert_formats=args.assert_formats,
        auth=auth,
    )
    redact_logs(server.execution.policy.redactor)
    mode = settings.endpoint
    open_log(events, server.execution.policy.redactor)
    registry = server.registry
    detail = {"mode": "serve", "versions": registry.versions, "schemas": registry.provenance}
    events.emit("start", status="started", transport=mode, detail=detail)
    dirs = f"schemas_dir={server.corpus.schemas_dir} examples_dir={server.corpus.examples_dir}"

    def ready(line: str, address: str | None = None) -> Callable[[], None]:
        def on_ready() -> None:
            say(f"mcp:ready mode={mode} {line}{dirs}")  # said before the file that tells a waiter it is ready
            ready_file.write(address)

        return on_ready

    try:
        if mode == "stdio":
            startup.run_stdio(server, ready(""))
        elif mode == "socket":
            startup.run_socket(server, ready(f"path={settings.socket_path} "))
        else:
            listener, url = listen_tcp(settings.http_host, settings.http_port, "/mcp")
            startup.run_http(server, listener, ready(f"url={url} ", url), resource=resource or url)
    finally:
        ready_file.remove()
        events.emit("stop", status="stopped", transport=mode, detail={"mode": "serve"})
        events.close()
        say(f"mcp:shutdown mode={mode}")
    return 0
