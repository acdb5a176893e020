"""``mcp-server gateway``: what a gateway run is made of (the schemas, its configuration and policy,
how each session's upstream is made, the report) and how each front runs it. The command line gives
the settings and the event log; nothing here parses it.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

from ..core.settings import Settings, SetupError
from ..execution.boundary import load_boundary
from ..execution.grants import GrantSigner, signer_from
from ..execution.policy import Policy
from ..execution.redaction import Redactor
from ..execution.single_use import REDIS_URL_VARIABLE, single_use_from
from ..observe.events import EventLog
from ..observe.tracing import Tracer
from ..registry.lockfile import Lockfile
from ..registry.schemas import SchemaRegistry
from ..transport.connection import Connection
from .aggregate import AggregateOptions, ServerSpec, aggregate_name, aggregated, read_servers, start
from .config import GatewayConfig
from .reports import new_report
from .session import Checks

__all__ = ["Gateway", "Listen", "parse_listen", "prepare", "run_http", "run_socket", "run_stdio"]

log = logging.getLogger("mcp_server.gateway")

_LISTEN_FORMS = "stdio, unix:PATH or http://HOST:PORT/PATH"


class Listen(NamedTuple):
    """Where clients connect: ``front`` is ``stdio``, ``socket`` (``path``) or ``http`` (``host``,
    ``port``, ``path``)."""

    front: str
    path: str = ""
    host: str = ""
    port: int = 0


def parse_listen(value: str) -> Listen:
    """``stdio``, ``unix:PATH`` or ``http://HOST:PORT[/PATH]`` (the path defaults to ``/mcp``)."""
    if value == "stdio":
        return Listen("stdio")
    if value.startswith("unix:") and len(value) > len("unix:"):
        return Listen("socket", value.removeprefix("unix:"))
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        port, parts = None, None
    if parts is None or parts.scheme != "http" or not parts.hostname or port is None or parts.query:
        raise SetupError(f"--listen must be {_LISTEN_FORMS}, got {value!r}")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return Listen("http", parts.path.rstrip("/") or "/mcp", host, port)


@dataclass(frozen=True, slots=True, kw_only=True)
class Gateway:
    """Everything a gateway run needs, read and checked before any front starts (``SetupError``)."""

    settings: Settings
    checks: Checks
    new_upstream: Callable[[], Connection]
    upstream_name: str  # redacted: for the ready line
    redactor: Redactor
    processes: bool = True  # each session's upstream is a process of its own (a command, not a URL)


def prepare(
    settings: Settings,
    environ: Mapping[str, str],
    events: EventLog | None,
    *,
    upstream_url: str | None,
    command: Sequence[str],
    config_path: Path | None = None,
    mode: str | None = None,
    policy_path: Path | None = None,
    assert_formats: bool = False,
    lock_path: Path | None = None,
    lock_server: str | None = None,
    tracer: Tracer | None = None,
    bridge: str | None = None,
    servers_path: Path | None = None,
) -> Gateway:
    if upstream_url and command:
        raise SetupError("give either --upstream URL or `-- COMMAND ...`, not both")
    registry = SchemaRegistry(assert_formats=settings.assert_formats or assert_formats)
    config = GatewayConfig.load(config_path, registry, mode=mode)
    limit = settings.max_frame_bytes
    boundary = load_boundary(environ, registry, max_frame_bytes=limit, policy_path=policy_path, catalogue=False)
    redactor = boundary.policy.redactor
    if upstream_url:
        reason = boundary.policy.outbound_denial(upstream_url, "POST")
        if reason is not None:
            raise SetupError(f"--upstream {upstream_url}: refused by the policy ({reason})")
    fleet = _fleet(config, servers_path, bool(upstream_url or command), bridge)
    new_upstream = _upstreams(upstream_url, command, limit, config.grace_seconds, redactor)
    # A bad URL or a missing command is refused here, before any front starts.
    name = new_upstream().name if fleet is None else aggregate_name(fleet[0])
    policy = boundary.stage_policy
    report = new_report(name, config, policy, events)
    lock, lock_server = _lockfile(lock_path or config.lock, lock_server or config.lock_server, registry)
    grants = _grants(policy, environ)
    single_use = single_use_from(environ) if environ.get(REDIS_URL_VARIABLE) else None
    checks = Checks(
        registry, config, report, limit, policy, events, lock, lock_server, tracer or Tracer(), grants, single_use
    )
    if fleet is not None:  # each server held to its own lockfile entry, not the client's side
        checks = checks._replace(lock=None, lock_server=None)
        new_upstream = _aggregated(fleet, checks, lock, redactor)
    if bridge is not None:
        from .bridge import bridged

        new_upstream = bridged(new_upstream, checks, bridge)
    return Gateway(
        settings=settings,
        checks=checks,
        new_upstream=new_upstream,
        upstream_name=redactor.redact_text(name)[0],
        redactor=redactor,
        processes=not upstream_url,
    )


def _lockfile(
    lock_path: Path | None, lock_server: str | None, registry: SchemaRegistry
) -> tuple[Lockfile | None, str | None]:
    """The tool lockfile the run holds its upstream to, checked against its server key."""
    lock = None if lock_path is None else Lockfile.load(lock_path, registry)
    if lock is None and lock_server is not None:
        raise SetupError("--lock-server names an entry of a lockfile: give --lock FILE too")
    if lock is not None and lock_server is not None and lock_server not in lock.servers:
        held = ", ".join(lock.servers) or "none"
        raise SetupError(f"lockfile {lock_path}: no server {lock_server!r} (it holds {held})")
    return lock, lock_server


def _fleet(
    config: GatewayConfig, servers_path: Path | None, one_given: bool, bridge: str | None
) -> tuple[list[ServerSpec], AggregateOptions] | None:
    """The servers of an aggregate (``--servers``, the configuration's ``servers``), or ``None``: one upstream."""
    specs, options = read_servers(config, servers_path)
    if not specs:
        return None
    if one_given:
        raise SetupError("give servers (--servers FILE or the config's servers table) or one upstream, not both")
    if bridge is not None:
        raise SetupError("--bridge is for one upstream: give a server that needs the bridge `bridge = VERSION`")
    return specs, options


def _aggregated(
    fleet: tuple[list[ServerSpec], AggregateOptions], checks: Checks, lock: Lockfile | None, redactor: Redactor
) -> Callable[[], Connection]:
    """Each session's upstream an aggregate, once start-up found every name it exposes usable; clients
    of the stateless era are carried to it by the era bridge (an aggregate per client identity)."""
    specs, options = fleet

    def redact(text: str) -> str:
        return redactor.redact_text(text)[0]

    known = start(specs, options, checks, lock, redact)
    from .bridge import bridged

    return bridged(aggregated(specs, options, checks, lock, redact, known), checks, checks.registry.latest_handshake)


def _grants(policy: Policy | None, environ: Mapping[str, str]) -> GrantSigner | None:
    """The signer of stateless approvals (with a policy); a key of its own is told when calls are held."""
    if policy is None:
        return None
    grants = signer_from(environ)
    if not grants.shared and any(rule.approval for _, rule in policy.tool_rules):
        log.warning(
            "approvals: no MCP_APPROVAL_KEY or MCP_APPROVAL_KEY_FILE; a stateless call's approval is"
            " honoured by this process only (replicas must share a key)"
        )
    return grants


def _upstreams(
    url: str | None, command: Sequence[str], limit: int, grace_seconds: float, redactor: Redactor
) -> Callable[[], Connection]:
    """How each session's upstream is made: a Streamable HTTP client, or a child process of its own."""

    def new_upstream() -> Connection:
        if url:
            from ..transport.http_client import HttpClient  # the HTTP client stack, only when used

            return HttpClient(url, max_frame_bytes=limit)
        from ..transport.child_process import ChildProcess

        return ChildProcess(
            command, max_frame_bytes=limit, grace_seconds=grace_seconds, redact=lambda t: redactor.redact_text(t)[0]
        )

    return new_upstream


def run_stdio(gateway: Gateway) -> int:
    from .ndjson_front import run_stdio as serve

    return asyncio.run(serve(gateway.new_upstream(), gateway.checks, gateway.settings.runs_dir))


def run_socket(gateway: Gateway, listener: socket.socket, on_ready: Callable[[], None]) -> int:
    from .ndjson_front import run_socket as serve

    checks, runs_dir = gateway.checks, gateway.settings.runs_dir
    return asyncio.run(serve(gateway.new_upstream, listener, checks, runs_dir, on_ready=on_ready))


# What one session with a process of its own costs (issue 30): a minimal Python server written with the
# official SDK holds 68 MiB resident (48 MiB proportional), a Node one about as much. The default cap
# lets such sessions take half the memory available at start, and never more than 100.
SESSION_BYTES = 64 << 20
MAX_DEFAULT_SESSIONS = 100


def _available_memory() -> int | None:
    """Bytes this process may still use: the system's available memory, within its cgroup's limit."""
    found: list[int] = []
    try:
        lines = Path("/proc/meminfo").read_text().splitlines()
        found.append(int(next(line.split()[1] for line in lines if line.startswith("MemAvailable:"))) << 10)
    except (OSError, StopIteration, ValueError):
        pass
    try:
        limit, used = (Path("/sys/fs/cgroup", name).read_text().strip() for name in ("memory.max", "memory.current"))
        if limit != "max":
            found.append(max(0, int(limit) - int(used)))
    except (OSError, ValueError):
        pass
    return min(found) if found else None


def default_max_sessions(*, processes: bool, available: int | None) -> int:
    """The session cap when none is given: with a process per session, sized to the memory available
    (half of it, ``SESSION_BYTES`` a session, at least 1, at most ``MAX_DEFAULT_SESSIONS``)."""
    if not processes or available is None:
        return MAX_DEFAULT_SESSIONS
    return max(1, min(MAX_DEFAULT_SESSIONS, available // 2 // SESSION_BYTES))


def run_http(
    gateway: Gateway,
    listener: socket.socket,
    listen: Listen,
    on_ready: Callable[[], None],
    *,
    max_sessions: int | None,
    idle_seconds: float,
) -> int:
    """The Streamable HTTP front (the HTTP stack is imported only here)."""
    from ..transport.streamable import HttpOptions
    from .http_front import run_gateway_http

    settings = gateway.settings
    if max_sessions is None:
        max_sessions = default_max_sessions(processes=gateway.processes, available=_available_memory())
        log.info("gateway: at most %d sessions open at once (--max-sessions)", max_sessions)
    if max_sessions <= 0 or idle_seconds <= 0:
        raise SetupError("--max-sessions and --idle-timeout must be positive")
    options = HttpOptions(
        max_frame_bytes=settings.max_frame_bytes,
        path=listen.path,
        allowed_hosts=settings.allowed_hosts,
        max_sessions=max_sessions,
        idle_seconds=idle_seconds,
        read_seconds=settings.http_read_seconds,
        versions=frozenset(gateway.checks.registry.versions),
    )
    serving = run_gateway_http(gateway.new_upstream, gateway.checks, options, listener, settings.runs_dir, on_ready)
    return asyncio.run(serving)
