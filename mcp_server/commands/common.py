"""What several commands share: the run's event log and its stderr lines, secrets kept out of the
logs, an HTTP front's access options, a listening socket, the upstream's command after ``--``."""

from __future__ import annotations

import argparse
import logging
import re
import socket
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..core.settings import ASSERT_FORMATS_HELP, Settings, SetupError
from ..execution.redaction import Redactor

if TYPE_CHECKING:
    from ..observe.events import EventLog

__all__ = [
    "HEADER_HELP",
    "declare_front_auth",
    "declare_run_log",
    "declare_upstream_command",
    "event_log",
    "front_auth",
    "listen_tcp",
    "open_log",
    "positive_bytes",
    "redact_logs",
    "say",
]


def say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def declare_run_log(parser: argparse.ArgumentParser) -> None:
    """The options of a run that writes an event log (``serve``, ``gateway``)."""
    parser.add_argument(
        "--deterministic", action="store_true", help="fixed clock, derived ids, zero durations (MCP_DETERMINISTIC=1)"
    )
    parser.add_argument(
        "--log-format", choices=["text", "json"], help="events on stderr (MCP_LOG_FORMAT; default text)"
    )
    parser.add_argument("--log-stream", metavar="NAME", help="runs/mcp_server/NAME/ (default: the mode)")
    parser.add_argument("--assert-formats", action="store_true", help=ASSERT_FORMATS_HELP)


def declare_front_auth(parser: argparse.ArgumentParser, *, passthrough: bool) -> None:
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


def front_auth(
    args: argparse.Namespace, environ: Mapping[str, str], host: str | None, flag: str
) -> tuple[str | None, str | None]:
    """``--auth`` and ``--auth-resource`` (or their variables) of an HTTP front on ``host`` (``None``:
    no HTTP front), which may not serve other hosts unauthenticated (issue 31)."""
    if host is None:
        if args.auth:
            raise SetupError("--auth is for an HTTP front")
        return None, None
    from ..execution.access import refuse_open_door

    auth = args.auth or environ.get("MCP_AUTH") or None
    allow = args.allow_unauthenticated or environ.get("MCP_ALLOW_UNAUTHENTICATED") == "1"
    refuse_open_door(host, authenticated=auth is not None, allowed=allow, flag=flag)
    resource = args.auth_resource or environ.get("MCP_AUTH_RESOURCE")
    if resource is not None and not resource.startswith(("http://", "https://")):
        raise SetupError(f"--auth-resource must be the http(s) URL clients reach the MCP endpoint at, got {resource!r}")
    return auth, resource


def positive_bytes(value: str) -> int:
    """A frame limit on the command line: a positive number of bytes."""
    if not value.isdigit() or int(value) <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of bytes, got {value!r}")
    return int(value)


def declare_upstream_command(parser: argparse.ArgumentParser) -> None:
    """The upstream's command, after the options: with ``--`` before it or without (as ``npx`` and the
    Inspector pass it)."""
    parser.add_argument("upstream_command", nargs=argparse.REMAINDER, metavar="COMMAND", help=argparse.SUPPRESS)


HEADER_HELP = "sent to the --upstream with every request (repeatable); VALUE may hold ${VAR} or ${file:PATH}"


def redact_logs(redactor: Redactor) -> None:
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


def event_log(settings: Settings, args: argparse.Namespace, stream: str) -> EventLog:
    """The run's event log (not open yet): the file under the runs directory and the stderr lines."""
    from ..observe.events import EventLog, EventLogSettings

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


def open_log(log: EventLog, redactor: Redactor) -> EventLog:
    """Open the log once the policy is known: what an event carries of the traffic is redacted."""
    log.set_redactor(redactor)
    try:
        return log.open()
    except OSError as exc:
        raise SetupError(f"cannot write the event log under {log.directory}: {exc.strerror}") from None


def listen_tcp(host: str, port: int, path: str) -> tuple[socket.socket, str]:
    """A listening socket bound before the server starts, and its URL (port 0: the one picked)."""
    from ..transport.http import bind_tcp

    try:
        listener = bind_tcp(host, port)
    except OSError as exc:
        raise SetupError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    bound_host, bound_port = listener.getsockname()[:2]
    return listener, f"http://{'[' + bound_host + ']' if ':' in bound_host else bound_host}:{bound_port}{path}"
