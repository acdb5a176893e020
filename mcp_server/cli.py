"""The ``mcp-server`` command line. Diagnostics go to stderr; stdout is the protocol's, or a result's.

Set-up failures print ``mcp:error reason=setup_failed detail=...`` and exit 2.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__
from .core.files import ReadyFile
from .core.settings import ASSERT_FORMATS_HELP, Settings, SetupError, log_level, parse_host_port, seconds
from .execution.redaction import Redactor
from .registry.schemas import SchemaError

if TYPE_CHECKING:
    from .observe.events import EventLog
    from .observe.tracing import Tracer

__all__ = ["main"]


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


class _VersionAction(argparse.Action):
    """``--version``: the program's version, then each MCP schema in use with its source commit and
    SHA-256 (the official schemas are rewritten after release: this names the bytes)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        from .registry.schemas import schema_provenance

        lines = [f"mcp-server {__version__}"]
        for entry in schema_provenance():
            source = f"{entry['repository']}@{entry['commit']}" if entry["commit"] else "unrecorded source"
            lines.append(f"schema {entry['version']} {source} sha256={entry['sha256']}")
        sys.stdout.write("\n".join(lines) + "\n")
        parser.exit()


# Each help opens with a one-line example, for whoever tries a command before reading the README.
EXAMPLES = {
    "": "mcp-server doctor -- python my_server.py",
    "serve": "mcp-server serve --http 127.0.0.1:8000",
    "validate": "mcp-server validate result.json --schema CallToolResult",
    "gateway": "mcp-server gateway -- python my_server.py",
    "golden": "mcp-server golden check session.ndjson session.golden.jsonl",
    "approvals": "mcp-server approvals list --url http://127.0.0.1:8000",
    "report": "mcp-server report runs/mcp_server/gateway/20250101T000000Z-4242-report.json",
    "check": "mcp-server check session.ndjson --format json",
    "doctor": "mcp-server doctor -- python my_server.py",
    "wrap": "mcp-server wrap ~/.cursor/mcp.json",
    "lock": "mcp-server lock --output mcp.lock.json -- python my_server.py",
    "login": "mcp-server login --upstream https://example.com/mcp",
}


def _described(command: str, what: str) -> dict[str, Any]:
    """A subcommand's line in the list (``what``) and its own help, which opens with its example."""
    return {
        "help": what,
        "description": f"example: {EXAMPLES[command]}\n\n{what}",
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-server",
        description=f"example: {EXAMPLES['']}\n\nMCP conformance gateway and schema-validation server",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action=_VersionAction, nargs=0, help="the version, and each bundled schema's source"
    )
    parser.add_argument("--validate", metavar="FILE", help="validate one asset file and exit (as `validate FILE`)")
    commands = parser.add_subparsers(dest="command")
    logs = argparse.ArgumentParser(add_help=False)
    logs.add_argument(
        "--deterministic", action="store_true", help="fixed clock, derived ids, zero durations (MCP_DETERMINISTIC=1)"
    )
    logs.add_argument("--log-format", choices=["text", "json"], help="events on stderr (MCP_LOG_FORMAT; default text)")
    logs.add_argument("--log-stream", metavar="NAME", help="runs/mcp_server/NAME/ (default: the mode)")
    logs.add_argument("--assert-formats", action="store_true", help=ASSERT_FORMATS_HELP)
    serve = commands.add_parser("serve", **_described("serve", "run the MCP server (STDIO by default)"), parents=[logs])
    serve.add_argument("--socket", metavar="PATH", help="serve NDJSON on a Unix socket")
    serve.add_argument("--http", metavar="HOST:PORT", help="serve MCP Streamable HTTP")
    serve.add_argument("--policy", type=Path, help="execution policy, TOML or JSON (or MCP_POLICY_FILE)")
    serve.add_argument("--tools", type=Path, help="HTTP-backed tool catalogue (or MCP_HTTP_TOOLS_FILE)")
    _add_front_auth(serve, passthrough=False)
    validate = commands.add_parser("validate", **_described("validate", "validate one asset file"))
    validate.add_argument("file")
    validate.add_argument("--schema", metavar="NAME")
    _add_gateway(commands, logs)
    commands.add_parser("golden", **_described("golden", "record or check golden event logs"))
    _add_offline(commands)
    _add_wrap_and_doctor(commands)
    return parser


def _add_front_auth(parser: argparse.ArgumentParser, *, passthrough: bool) -> None:
    """Who may use an HTTP front (issue 31, docs/authentication.md)."""
    forms = "tokens:FILE, jwt:ISSUER_URL" + (" or passthrough" if passthrough else "")
    parser.add_argument("--auth", metavar="SPEC", help=f"HTTP: check each request's bearer token: {forms} (MCP_AUTH)")
    parser.add_argument(
        "--auth-resource", metavar="URL", help="HTTP: the public MCP URL tokens are for (default: the one listened on)"
    )
    parser.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        help="HTTP: serve anyone who reaches a non-loopback address (MCP_ALLOW_UNAUTHENTICATED=1)",
    )


def _front_auth(
    args: argparse.Namespace, environ: Mapping[str, str], host: str | None, flag: str
) -> tuple[str | None, str | None]:
    """``--auth`` and ``--auth-resource`` (or their variables) of an HTTP front on ``host`` (``None``:
    no HTTP front), which may not serve other hosts unauthenticated (issue 31)."""
    from .execution.access import refuse_open_door

    if host is None:
        if args.auth:
            raise SetupError("--auth is for an HTTP front")
        return None, None
    auth = args.auth or environ.get("MCP_AUTH") or None
    allow = args.allow_unauthenticated or environ.get("MCP_ALLOW_UNAUTHENTICATED") == "1"
    refuse_open_door(host, authenticated=auth is not None, allowed=allow, flag=flag)
    resource = args.auth_resource or environ.get("MCP_AUTH_RESOURCE")
    if resource is not None and not resource.startswith(("http://", "https://")):
        raise SetupError(f"--auth-resource must be the http(s) URL clients reach the MCP endpoint at, got {resource!r}")
    return auth, resource


def _add_gateway(commands: Any, logs: argparse.ArgumentParser) -> None:
    gateway = commands.add_parser(
        "gateway",
        parents=[logs],
        **_described("gateway", "a validating proxy in front of an MCP server"),
        usage="mcp-server gateway [--listen stdio|unix:PATH|http://HOST:PORT/mcp] [--mode enforce|observe] "
        "[--config FILE] [--lock FILE] [--bridge VERSION] [--otel] [--max-frame-bytes N] "
        "[--max-server-frame-bytes N] (--upstream URL | --servers FILE | [--] COMMAND ...)",
    )
    gateway.add_argument(
        "--listen", default="stdio", help="where clients connect: stdio, unix:PATH or http://HOST:PORT/mcp"
    )
    gateway.add_argument(
        "--max-sessions", type=int, help="HTTP: open client sessions at most (default: sized to the memory, up to 100)"
    )
    gateway.add_argument("--idle-timeout", default="600", help="HTTP: seconds before an idle session ends")
    gateway.add_argument("--mode", choices=["enforce", "observe"], help="default: enforce (or the config's)")
    gateway.add_argument("--config", type=Path, help="gateway configuration (JSON or TOML)")
    gateway.add_argument("--upstream", metavar="URL", help="a remote Streamable HTTP MCP endpoint")
    gateway.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'", help=_HEADER_HELP)
    _add_front_auth(gateway, passthrough=True)
    gateway.add_argument(
        "--servers", type=Path, metavar="FILE", help="many upstreams: an MCP client's configuration (docs/aggregate.md)"
    )
    gateway.add_argument("--policy", type=Path, help="execution policy, TOML or JSON (or MCP_POLICY_FILE)")
    gateway.add_argument("--lock", type=Path, metavar="FILE", help="tool lockfile (`mcp-server lock`) to hold tools to")
    gateway.add_argument("--lock-server", metavar="NAME", help="the lockfile's server key (default: the only one)")
    gateway.add_argument(
        "--bridge",
        metavar="VERSION",
        help="the upstream speaks only VERSION: clients of the other era are translated (2025-11-25, 2026-07-28)",
    )
    gateway.add_argument(
        "--otel", action="store_true", help="export a span per forwarded call (MCP_OTEL=1; the otel extra; OTEL_*)"
    )
    gateway.add_argument(
        "--max-frame-bytes",
        type=_bytes,
        metavar="N",
        help="largest frame a client may send (MCP_MAX_FRAME_BYTES, the config's; default 1 MiB)",
    )
    gateway.add_argument(
        "--max-server-frame-bytes",
        type=_bytes,
        metavar="N",
        help="largest frame the upstream may send (MCP_MAX_SERVER_FRAME_BYTES, the config's; default 16 MiB)",
    )
    _upstream_command(gateway)


def _bytes(value: str) -> int:
    """A frame limit on the command line: a positive number of bytes."""
    if not value.isdigit() or int(value) <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of bytes, got {value!r}")
    return int(value)


def _upstream_command(parser: argparse.ArgumentParser) -> None:
    """The upstream's command, after the options: with ``--`` before it or without (as ``npx`` and the
    Inspector pass it)."""
    parser.add_argument("upstream_command", nargs=argparse.REMAINDER, metavar="COMMAND", help=argparse.SUPPRESS)


_HEADER_HELP = "sent to the --upstream with every request (repeatable); VALUE may hold ${VAR} or ${file:PATH}"


def _add_offline(commands: Any) -> None:
    """``approvals``, ``report`` and ``check``: what works on a run's files or a server's approvals."""
    from .observe.report import add_report_arguments
    from .offline.check import add_check_arguments

    approvals = commands.add_parser(
        "approvals", **_described("approvals", "list or answer tool calls held for approval")
    )
    approvals.add_argument("--url", help="the server's base URL (default: MCP_APPROVALS_URL or http://127.0.0.1:8000)")
    approvals.add_argument("action", choices=["list", "allow", "deny"])
    approvals.add_argument("id", nargs="?", help="the held call's approval id")
    approvals.add_argument("sha256", nargs="?", help="to allow: the arguments' SHA-256 shown by `list`")
    add_report_arguments(
        commands.add_parser("report", **_described("report", "a gateway conformance report again: its table or page"))
    )
    add_check_arguments(
        commands.add_parser("check", **_described("check", "validate a recorded MCP session (NDJSON capture) offline"))
    )


def _add_wrap_and_doctor(commands: Any) -> None:
    """``wrap`` (a client's configuration behind the gateway), ``doctor`` (an upstream checked in one
    go) and ``lock`` (its tools recorded for the gateway to hold them to)."""
    from .offline.wrap import add_wrap_arguments

    doctor = commands.add_parser(
        "doctor",
        **_described("doctor", "check an MCP server in one go: every protocol version, its tools, every frame"),
        usage="mcp-server doctor [--format text|json] [--timeout SECONDS] [--config FILE] [--policy FILE] "
        "(--upstream URL | [--] COMMAND ...)",
    )
    doctor.add_argument("--upstream", metavar="URL", help="a Streamable HTTP MCP endpoint (else the command after --)")
    doctor.add_argument("--timeout", default="10", help="seconds each request waits at most (10)")
    doctor.add_argument("--format", choices=["text", "json"], default="text", help="the verdict's form (text)")
    doctor.add_argument("--config", type=Path, help="gateway configuration (JSON or TOML): rules turned off")
    doctor.add_argument("--policy", type=Path, help="execution policy, TOML or JSON (or MCP_POLICY_FILE)")
    doctor.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'", help=_HEADER_HELP)
    _upstream_command(doctor)
    add_wrap_arguments(
        commands.add_parser(
            "wrap", **_described("wrap", "put every server of an MCP client's configuration behind the gateway")
        )
    )
    lock = commands.add_parser(
        "lock",
        **_described("lock", "record every tool an MCP server lists in a lockfile, for `gateway --lock`"),
        usage="mcp-server lock [--output FILE] [--server NAME] [--timeout SECONDS] (--upstream URL | [--] COMMAND ...)",
    )
    lock.add_argument("--upstream", metavar="URL", help="a Streamable HTTP MCP endpoint (else the command after --)")
    lock.add_argument("--output", type=Path, default=Path("mcp.lock.json"), help="the lockfile (mcp.lock.json)")
    lock.add_argument("--server", metavar="NAME", help="its entry's key (default: the server's serverInfo.name)")
    lock.add_argument("--timeout", default="10", help="seconds each request waits at most (10)")
    lock.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'", help=_HEADER_HELP)
    _upstream_command(lock)
    login = commands.add_parser(
        "login",
        **_described("login", "log the gateway in to an HTTP upstream that asks for OAuth, ahead of time"),
    )
    login.add_argument("--upstream", metavar="URL", required=True, help="the Streamable HTTP MCP endpoint")
    login.add_argument("--config", type=Path, help="gateway configuration (JSON or TOML): its oauth table")


def _setup_logging(environ: Mapping[str, str]) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("mcp:%(levelname)s %(message)s"))
    root = logging.getLogger("mcp_server")
    root.addHandler(handler)
    root.setLevel(logging.WARNING if log_level(environ) == "warning" else logging.INFO)
    root.propagate = False
    # Execution records are the boundary's audit trail: written whatever MCP_LOG_LEVEL says.
    logging.getLogger("mcp_server.execution.gate").setLevel(logging.INFO)


def _redact_logs(redactor: Redactor) -> None:
    """Every line of the ``mcp_server`` loggers passes the policy's secret patterns first."""

    def redact(record: logging.LogRecord) -> bool:
        record.msg, _ = redactor.redact_text(record.getMessage())
        record.args = ()
        if record.exc_info and not record.exc_text:  # a traceback quotes values too: formatted here, redacted
            record.exc_text = redactor.redact_text(logging.Formatter().formatException(record.exc_info))[0]
        return True

    for handler in logging.getLogger("mcp_server").handlers:
        handler.addFilter(redact)


_STREAM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def _event_log(settings: Settings, args: argparse.Namespace, stream: str) -> EventLog:
    """The run's event log (not open yet): the file under the runs directory and the stderr lines."""
    from .observe.events import EventLog, EventLogSettings

    name = args.log_stream or stream
    if not _STREAM_NAME.match(name):
        raise SetupError(f"--log-stream must be a plain name (letters, digits, . _ -), got {name!r}")
    log = EventLog(
        EventLogSettings(
            runs_dir=settings.runs_dir,
            stream=name,
            keep=settings.runs_keep,
            max_bytes=settings.log_max_bytes,
            keep_files=settings.log_keep_files,
            deterministic=settings.deterministic or args.deterministic,
            seed=settings.seed,
        )
    )
    log.set_stderr(format=args.log_format or settings.log_format, every_event=settings.log_every_event)
    return log


def _open_log(log: EventLog, redactor: Redactor) -> EventLog:
    """Open the log once the policy is known: what an event carries of the traffic is redacted."""
    log.set_redactor(redactor)
    try:
        return log.open()
    except OSError as exc:
        raise SetupError(f"cannot write the event log under {log.directory}: {exc.strerror}") from None


def _serve(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    from dataclasses import replace

    from .serve import startup

    settings = Settings.from_env(environ)
    if args.socket:
        settings = replace(settings, endpoint="socket", socket_path=Path(args.socket))
    if args.http:
        host, port = parse_host_port(args.http, name="--http")
        settings = replace(settings, endpoint="http", http_host=host, http_port=port)
    http = settings.endpoint == "http"
    auth, resource = _front_auth(args, environ, settings.http_host if http else None, "--http")
    ready_file = ReadyFile(settings.ready_file)
    ready_file.claim()  # never another's file: refused before anything starts
    events = _event_log(settings, args, "serve")
    server = startup.prepare(
        settings,
        environ,
        events,
        policy_path=args.policy,
        tools_path=args.tools,
        assert_formats=args.assert_formats,
        auth=auth,
    )
    _redact_logs(server.boundary.policy.redactor)
    mode = settings.endpoint
    _open_log(events, server.boundary.policy.redactor)
    registry = server.registry
    detail = {"mode": "serve", "versions": registry.versions, "schemas": registry.provenance}
    events.emit("start", status="started", transport=mode, detail=detail)
    dirs = f"schemas_dir={server.corpus.schemas_dir} examples_dir={server.corpus.examples_dir}"

    def ready(line: str, address: str | None = None) -> Callable[[], None]:
        def on_ready() -> None:
            ready_file.write(address)
            _say(f"mcp:ready mode={mode} {line}{dirs}")

        return on_ready

    try:
        if mode == "stdio":
            startup.run_stdio(server, ready(""))
        elif mode == "socket":
            startup.run_socket(server, ready(f"path={settings.socket_path} "))
        else:
            listener, url = _listen_tcp(settings.http_host, settings.http_port, "/mcp")
            startup.run_http(server, listener, ready(f"url={url} ", url), resource=resource or url)
    finally:
        ready_file.remove()
        events.emit("stop", status="stopped", transport=mode, detail={"mode": "serve"})
        events.close()
        _say(f"mcp:shutdown mode={mode}")
    return 0


def _gateway(args: argparse.Namespace, command: list[str], environ: Mapping[str, str]) -> int:
    from .gateway import startup

    listen = startup.parse_listen(args.listen)  # a bad value is refused before anything starts
    auth, resource = _front_auth(args, environ, listen.host if listen.front == "http" else None, "--listen")
    settings = Settings.from_env(environ)
    ready_file = ReadyFile(settings.ready_file)
    ready_file.claim()  # never another's file: refused before anything starts
    events = _event_log(settings, args, "gateway")
    options = _gateway_options(args, command, settings, environ)
    gateway = startup.prepare(settings, environ, events, **options, auth=auth, interactive=True)
    _redact_logs(gateway.redactor)
    _open_log(events, gateway.redactor)
    detail = {"mode": "gateway", "schemas": gateway.checks.registry.provenance}
    events.emit("start", status="started", transport=listen.front, detail=detail)
    ready = f"upstream={gateway.upstream_name} policy={gateway.checks.config.mode.value}"

    def on_ready(where: str, address: str | None = None) -> Callable[[], None]:
        def said() -> None:
            ready_file.write(address)
            _say(f"mcp:ready mode=gateway listen={where} {ready}")

        return said

    try:
        if listen.front == "stdio":
            on_ready("stdio")()
            return startup.run_stdio(gateway)
        if listen.front == "http":
            listener, url = _listen_tcp(listen.host, listen.port, listen.path)
            idle = seconds(args.idle_timeout, name="--idle-timeout")  # nan turned reaping off
            limits = {"max_sessions": args.max_sessions, "idle_seconds": idle}
            return startup.run_http(gateway, listener, listen, on_ready(url, url), resource=resource or url, **limits)
        from .transport.unix_socket import bind_unix_socket

        path = Path(listen.path)
        listener = bind_unix_socket(path, settings.socket_mode)
        try:
            return startup.run_socket(gateway, listener, on_ready(f"unix:{path}", str(path)))
        finally:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    finally:
        ready_file.remove()  # only the one this process wrote: a gateway that never bound removes none
        gateway.checks.tracer.close()
        events.emit("stop", status="stopped", transport=listen.front, detail={"mode": "gateway"})
        events.close()
        _say("mcp:shutdown mode=gateway")


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
        from .observe.tracing import Tracer

        return Tracer(settings.seed if settings.deterministic or args.deterministic else None)
    try:
        from .observe.otel import OtelTracer, exporter_from_env
    except ImportError:
        raise SetupError("--otel needs the otel extra: pip install 'mcp-server[otel]'") from None
    return OtelTracer(exporter_from_env(environ))


def _lock(args: argparse.Namespace, command: list[str], environ: Mapping[str, str]) -> int:
    from .gateway import lock, startup

    settings = Settings.from_env(environ)
    gateway = startup.prepare(
        settings, environ, None, upstream_url=args.upstream, command=command, mode="observe", headers=args.header
    )
    timeout = seconds(args.timeout, name="--timeout")
    return lock.run_lock(gateway, url=args.upstream, output=args.output, server=args.server, timeout=timeout)


def _doctor(args: argparse.Namespace, command: list[str], environ: Mapping[str, str]) -> int:
    from .gateway import doctor, startup

    settings = Settings.from_env(environ)
    gateway = startup.prepare(
        settings,
        environ,
        None,
        upstream_url=args.upstream,
        command=command,
        config_path=args.config,
        mode="observe",  # everything passes, so that everything is seen and counted
        policy_path=args.policy,
        headers=args.header,
    )
    timeout = seconds(args.timeout, name="--timeout")
    return doctor.run_doctor(gateway, url=args.upstream, command=command, timeout=timeout, format=args.format)


def _login(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """``mcp-server login``: the gateway's OAuth login to an upstream now, its tokens kept for later runs."""
    import asyncio

    from .gateway import startup

    settings = Settings.from_env(environ)
    gateway = startup.prepare(
        settings, environ, None, upstream_url=args.upstream, command=[], config_path=args.config, interactive=True
    )
    if gateway.login is None:
        raise SetupError(
            "nothing to log in with: the oauth extra is needed (pip install 'mcp-server[oauth]'), and no "
            "Authorization header or oauth.enabled = false may be configured"
        )
    from .execution.upstream_login import login_now

    return asyncio.run(login_now(gateway.login, gateway.upstream_name))


def _listen_tcp(host: str, port: int, path: str) -> tuple[socket.socket, str]:
    """A listening socket bound before the server starts, and its URL (port 0: the one picked)."""
    from .transport.http import bind_tcp

    try:
        listener = bind_tcp(host, port)
    except OSError as exc:
        raise SetupError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    bound_host, bound_port = listener.getsockname()[:2]
    return listener, f"http://{'[' + bound_host + ']' if ':' in bound_host else bound_host}:{bound_port}{path}"


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    environ = os.environ if environ is None else environ
    command: list[str] = []
    if argv[:1] in (["gateway"], ["doctor"], ["lock"]) and "--" in argv:
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1 :]
    if argv[:1] == ["golden"]:
        from .offline.golden import main_golden

        return main_golden(argv[1:])
    args = _parser().parse_args(argv)
    command = command or list(getattr(args, "upstream_command", None) or [])
    try:
        _setup_logging(environ)
        if args.validate or args.command == "validate":
            from .offline.validate import main_validate

            target = args.validate or args.file
            extra = ["--schema", args.schema] if getattr(args, "schema", None) else []
            return main_validate([target, *extra], environ)
        if args.command == "check":
            from .offline.check import run_check

            return run_check(args)
        if args.command == "gateway":
            return _gateway(args, command, environ)
        if args.command == "report":
            from .observe.report import run_report

            return run_report(args)
        if args.command == "doctor":
            return _doctor(args, command, environ)
        if args.command == "lock":
            return _lock(args, command, environ)
        if args.command == "login":
            return _login(args, environ)
        if args.command == "wrap":
            from .offline.wrap import run_wrap

            return run_wrap(args)
        if args.command == "approvals":
            from .offline.approvals import run_approvals

            return run_approvals(args, environ)
        return _serve(args, environ)
    except (SetupError, SchemaError) as exc:
        _say(f"mcp:error reason=setup_failed detail={exc}")
        return 2
    except KeyboardInterrupt:
        return 0
