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
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import urlsplit

from ..core.settings import Settings, SetupError
from ..core.types import CLIENT_TO_SERVER, SERVER_TO_CLIENT
from ..execution.grants import GrantSigner, signer_from
from ..execution.policy import Policy
from ..execution.redaction import Redactor
from ..execution.setup import ExecutionSetup, load_execution_setup
from ..execution.single_use import REDIS_URL_VARIABLE, single_use_from
from ..observe.events import EventLog
from ..observe.tracing import Tracer
from ..registry.credentials import UpstreamHeaders, expand, upstream_headers
from ..registry.lockfile import Lockfile
from ..registry.schemas import SchemaRegistry
from ..transport.connection import Connection
from ..transport.event_loop import run as run_on_loop
from .config import GatewayConfig

if TYPE_CHECKING:
    from ..execution.access import AccessCheck
    from ..execution.upstream_login import UpstreamLogin
    from ..execution.upstream_token import DeferredLogin, LoginSettings
    from ..transport.child_process import Started
    from .aggregate import Fleet
from .reports import new_report
from .session import GatewayRun

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
    run: GatewayRun
    new_upstream: Callable[[], Connection]
    upstream_name: str  # redacted: for the ready line
    redactor: Redactor
    processes: bool = True  # each session's upstream is a process of its own (a command, not a URL)
    # Issue 31: the gateway's login to an HTTP upstream (``None``: none configured or possible), and
    # the HTTP front's own check of tokens (made once its resource URL is known) or passthrough.
    login: DeferredLogin | None = None
    upstream_url: str | None = None
    front_check: Callable[[str], AccessCheck] | None = None
    passthrough: bool = False


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
    headers: Sequence[str] = (),
    auth: str | None = None,
    interactive: bool = False,
    limits: tuple[int | None, int | None] = (None, None),
    servers_path: Path | None = None,
    started: list[Started] | None = None,
) -> Gateway:
    """A gateway run from the command line's values (``limits``: ``--max-frame-bytes`` and
    ``--max-server-frame-bytes``, ``None`` when not given), the environment and the files.
    ``interactive``: a login to the upstream may send the user to the browser (not ``doctor``).
    ``servers_path`` (or the configuration's ``servers``): many upstreams, an aggregate (ADR 29).
    ``started``: ``command`` already running (``start_child``), the first session's (ADR 35)."""
    if upstream_url and command:
        raise SetupError("give either --upstream URL or `-- COMMAND ...`, not both")
    registry = _registry(settings, assert_formats)
    flags = dict(lock=lock_path, lock_server=lock_server, max_frame_bytes=limits[0], max_server_frame_bytes=limits[1])
    config = GatewayConfig.load(config_path, registry, mode=mode, flags=flags, environ=environ)
    fleet = _fleet(config, servers_path, bool(upstream_url or command), bridge, environ)
    execution = _execution_setup(config, registry, environ, policy_path, upstream_url)
    front_check, passthrough = _front(auth, upstream_url)
    credentials = _credentials(upstream_url, headers, config, environ)
    login = _login(upstream_url, config, credentials, environ, registry, interactive=interactive, off=passthrough)
    # The upstream as it may be shown (ready line, report, page): the secrets its command line gives
    # (`--token X`) and the configured credentials are hidden there, and wherever else they appear.
    name, hidden = execution.policy.redactor.redact_command(command or [upstream_url or ""])
    redactor = execution.policy.redactor.with_literals((*hidden, *_secrets(credentials, login, fleet)))
    new_upstream = _upstreams(upstream_url, command, config, redactor, credentials, login, passthrough, started)
    if fleet is None and started is None:
        new_upstream()  # a bad URL or a missing command is refused here, before any front starts
    name = redactor.redact_text(name if fleet is None else fleet.name)[0]
    run = _gateway_run(registry, config, name, execution.stage_policy, redactor, events, environ, tracer)
    new_upstream, run = _wrapped(new_upstream, run, bridge, fleet, redactor)
    return Gateway(
        settings=settings,
        run=run,
        new_upstream=new_upstream,
        upstream_name=name,
        redactor=redactor,
        processes=not upstream_url,
        login=login,
        upstream_url=upstream_url,
        front_check=front_check,
        passthrough=passthrough,
    )


def _registry(settings: Settings, assert_formats: bool) -> SchemaRegistry:
    """The schemas, each compiled on first use (or every version now: ``MCP_COMPILE_ALL_SCHEMAS``)."""
    formats = settings.assert_formats or assert_formats
    return SchemaRegistry(assert_formats=formats, compile_all=settings.compile_all_schemas)


def _gateway_run(
    registry: SchemaRegistry,
    config: GatewayConfig,
    name: str,
    policy: Policy | None,
    redactor: Redactor,
    events: EventLog | None,
    environ: Mapping[str, str],
    tracer: Tracer | None,
) -> GatewayRun:
    """What every session of the run shares: the report, the lockfile, the approvals' signer and store."""
    report = new_report(name, config, redactor, events)
    lock = _lockfile(config, registry)
    grants = _grants(policy, environ)
    single_use = single_use_from(environ) if environ.get(REDIS_URL_VARIABLE) else None
    limit, lock_server, tracer = config.max_frame_bytes, config.lock_server, tracer or Tracer()
    return GatewayRun(
        registry,
        config,
        report,
        limit,
        policy,
        events,
        lock,
        lock_server,
        tracer,
        grants,
        single_use,
        config.max_server_frame_bytes,
    )


def _execution_setup(
    config: GatewayConfig,
    registry: SchemaRegistry,
    environ: Mapping[str, str],
    policy_path: Path | None,
    upstream_url: str | None,
) -> ExecutionSetup:
    """The run's policy (no tool catalogue: the tools are the upstream's), its sizes held to the
    limits of their directions; an ``--upstream`` the policy refuses is a ``SetupError``."""
    execution = load_execution_setup(
        environ,
        registry,
        max_frame_bytes=config.max_frame_bytes,
        max_server_frame_bytes=config.max_server_frame_bytes,
        policy_path=policy_path,
        catalogue=False,
    )
    if upstream_url:
        reason = execution.policy.outbound_denial(upstream_url, "POST")
        if reason is not None:
            raise SetupError(f"--upstream {upstream_url}: refused by the policy ({reason})")
    return execution


def _lockfile(config: GatewayConfig, registry: SchemaRegistry) -> Lockfile | None:
    """The tool lockfile the run holds its upstream to (``--lock``, or the configuration's), checked
    against its server key."""
    lock_path, lock_server = config.lock, config.lock_server
    lock = None if lock_path is None else Lockfile.load(lock_path, registry)
    if lock is None and lock_server is not None:
        raise SetupError("--lock-server names an entry of a lockfile: give --lock FILE too")
    if lock is not None and lock_server is not None and lock_server not in lock.servers:
        held = ", ".join(lock.servers) or "none"
        raise SetupError(f"lockfile {lock_path}: no server {lock_server!r} (it holds {held})")
    return lock


def _front(auth: str | None, upstream_url: str | None) -> tuple[Callable[[str], AccessCheck] | None, bool]:
    """``--auth``: the HTTP front's own check of tokens, or passthrough to an HTTP upstream."""
    if auth is None:
        return None, False
    if auth != "passthrough":
        from ..execution.access import load_access  # who may use an HTTP front: imported when asked

        return load_access(auth), False
    if not upstream_url:
        raise SetupError("--auth passthrough passes the client's credentials to an HTTP upstream: give --upstream URL")
    return None, True


def _wrapped(
    new_upstream: Callable[[], Connection], run: GatewayRun, bridge: str | None, fleet: Fleet | None, redactor: Redactor
) -> tuple[Callable[[], Connection], GatewayRun]:
    """How each session's upstream is made, behind the era bridge (``--bridge``), or an aggregate of
    ``fleet`` (each server held to its own lockfile entry: the client's side to none)."""
    if fleet is not None:
        return fleet.upstreams(run, lambda text: redactor.redact_text(text)[0]), run._replace(
            lock=None, lock_server=None
        )
    if bridge is not None:
        from .bridge import bridged

        return bridged(new_upstream, run, bridge), run
    return new_upstream, run


def _fleet(
    config: GatewayConfig, servers_path: Path | None, one_given: bool, bridge: str | None, environ: Mapping[str, str]
) -> Fleet | None:
    """The servers of an aggregate (``--servers``, the configuration's ``servers``), or ``None``: one
    upstream (and the aggregate's modules are not imported)."""
    if servers_path is None and not config.servers and not config.aggregate:
        return None
    from .aggregate import Fleet

    fleet = Fleet.read(config, servers_path, environ)
    if fleet is not None and one_given:
        raise SetupError("give servers (--servers FILE or the config's servers table) or one upstream, not both")
    if fleet is not None and bridge is not None:
        raise SetupError("--bridge is for one upstream: give a server that needs the bridge `bridge = VERSION`")
    return fleet


def _secrets(credentials: UpstreamHeaders, login: DeferredLogin | None, fleet: Fleet | None) -> tuple[str, ...]:
    """What no output may show: the configured headers' values (an aggregate's servers' too), the
    login's client secret."""
    secret = None if login is None else login.settings.client_secret
    return (*credentials.secrets, *([secret] if secret else []), *(() if fleet is None else fleet.secrets))


def _credentials(
    url: str | None, given: Sequence[str], config: GatewayConfig, environ: Mapping[str, str]
) -> UpstreamHeaders:
    """The upstream's headers (``--header``, the configuration's), values read now (issue 31)."""
    if not url:
        if given or config.headers:
            raise SetupError("--header and the configuration's headers are for an HTTP upstream (--upstream URL)")
        return UpstreamHeaders({})
    return upstream_headers(given, config.headers, environ, base=config.folder)


def _login(
    url: str | None,
    config: GatewayConfig,
    credentials: UpstreamHeaders,
    environ: Mapping[str, str],
    registry: SchemaRegistry,
    *,
    interactive: bool,
    off: bool,
) -> DeferredLogin | None:
    """The gateway's login to an HTTP upstream that asks for OAuth: unless an ``Authorization`` is
    configured, the client's is passed through, the configuration turns it off, or the SDK (the
    ``oauth`` extra) is not installed (then a 401 is only reported). The SDK is imported on the
    upstream's first refusal, not here: a run with a good token (or none needed) starts without it."""
    oauth = config.oauth
    if not url or off or credentials.authorization or oauth.get("enabled") is False:
        return None
    from ..execution.upstream_token import DeferredLogin, LoginSettings, oauth_installed, token_path

    if not oauth_installed():
        return None
    secret = oauth.get("client_secret")
    settings = LoginSettings(
        url=url,
        token_file=token_path(url, environ),
        client_id=oauth.get("client_id"),
        client_secret=None if secret is None else expand("oauth.client_secret", secret, environ, config.folder),
        scope=oauth.get("scope"),
        redirect_port=int(oauth.get("redirect_port", 0)),
        interactive=interactive,
        wait_seconds=float(oauth.get("wait_seconds", 300.0)),
        version=registry.latest_handshake,
    )
    return DeferredLogin(settings, _sdk_login)


def _sdk_login(settings: LoginSettings) -> UpstreamLogin:
    from ..execution.upstream_login import UpstreamLogin

    return UpstreamLogin(settings)


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
    url: str | None,
    command: Sequence[str],
    config: GatewayConfig,
    redactor: Redactor,
    credentials: UpstreamHeaders,
    login: DeferredLogin | None,
    forward: bool,
    started: list[Started] | None = None,
) -> Callable[[], Connection]:
    """How each session's upstream is made: a Streamable HTTP client (its credentials, the run's
    login, or the client's in passthrough), or a child process of its own (the first session's
    ``started`` already, when it was)."""
    limit, grace_seconds = config.held_bytes(SERVER_TO_CLIENT), config.grace_seconds

    def new_upstream() -> Connection:
        if url:
            from ..transport.http_client import HttpClient  # the HTTP client stack, only when used

            headers = credentials.headers
            return HttpClient(
                url, max_frame_bytes=limit, headers=headers, authorizer=login, forward_authorization=forward
            )
        from ..transport.child_process import ChildProcess

        redact = lambda t: redactor.redact_text(t)[0]  # noqa: E731
        taken = started.pop() if started else None
        return ChildProcess(command, max_frame_bytes=limit, grace_seconds=grace_seconds, redact=redact, started=taken)

    return new_upstream


def run_stdio(gateway: Gateway, on_ready: Callable[[], None], runner: asyncio.Runner | None = None) -> int:
    """One client on STDIO; ``runner``: the loop the upstream was started on (``prepare``'s ``started``)."""
    from .ndjson_front import run_stdio as serve

    serving = serve(gateway.new_upstream(), gateway.run, gateway.settings.runs_dir, on_ready=on_ready)
    if runner is not None:
        return runner.run(serving)
    return run_on_loop(serving, gateway.settings.event_loop, stdio=True)


def run_socket(gateway: Gateway, listener: socket.socket, on_ready: Callable[[], None]) -> int:
    from .ndjson_front import run_socket as serve

    run, runs_dir = gateway.run, gateway.settings.runs_dir
    return run_on_loop(
        serve(gateway.new_upstream, listener, run, runs_dir, on_ready=on_ready), gateway.settings.event_loop
    )


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
    resource: str | None = None,
) -> int:
    """The Streamable HTTP front (the HTTP stack is imported only here); ``resource``: its public MCP
    URL, what a token's audience names and the protected resource metadata describes."""
    from ..execution.access import FrontAuth, UpstreamResource
    from ..transport.streamable import HttpOptions
    from .http_front import FrontAccess, run_gateway_http

    settings = gateway.settings
    if max_sessions is None:
        max_sessions = default_max_sessions(processes=gateway.processes, available=_available_memory())
        log.info("gateway: at most %d sessions open at once (--max-sessions)", max_sessions)
    if max_sessions <= 0 or idle_seconds <= 0:
        raise SetupError("--max-sessions and --idle-timeout must be positive")
    options = HttpOptions(
        max_frame_bytes=gateway.run.config.held_bytes(CLIENT_TO_SERVER),
        path=listen.path,
        allowed_hosts=settings.allowed_hosts,
        max_sessions=max_sessions,
        idle_seconds=idle_seconds,
        read_seconds=settings.http_read_seconds,
        versions=frozenset(gateway.run.registry.versions),
    )
    access = FrontAccess()
    if resource is None:  # the URL listened on
        host, port = listener.getsockname()[:2]
        resource = f"http://{'[' + host + ']' if ':' in host else host}:{port}{listen.path}"
    if gateway.front_check is not None:
        check, scopes = gateway.front_check(resource), gateway.run.config.tool_scopes
        access = FrontAccess(auth=FrontAuth(check=check, resource=resource, tool_scopes=scopes))
    elif gateway.passthrough and gateway.upstream_url is not None:
        access = FrontAccess(passthrough=UpstreamResource(gateway.upstream_url, resource))
    run, runs_dir = gateway.run, settings.runs_dir
    serving = run_gateway_http(gateway.new_upstream, run, options, listener, runs_dir, on_ready, access)
    return run_on_loop(serving, "asyncio")  # on uvloop a session's end waited out a timeout: asyncio's loop here
