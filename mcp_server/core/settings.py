"""Start-up configuration read from the environment, once. Bad values are refused with a clear error.

``SETTINGS`` is the one table of every setting (its variable, flag, configuration key, default and
meaning); ``docs/configuration.md`` is generated from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

__all__ = [
    "ASSERT_FORMATS_HELP",
    "DEFAULT_MAX_FRAME_BYTES",
    "DEFAULT_MAX_SERVER_FRAME_BYTES",
    "ENDPOINTS",
    "EVENT_LOOPS",
    "LOG_FORMATS",
    "LOG_LEVELS",
    "MAX_FRAME_BYTES_LIMIT",
    "SETTING",
    "SETTINGS",
    "Setting",
    "Settings",
    "SetupError",
    "configuration_markdown",
    "log_level",
    "parse_host_port",
    "positive_int",
    "seconds",
]

DEFAULT_MAX_FRAME_BYTES = 1_048_576
"""What a client may send: 1 MiB of UTF-8, the NDJSON newline not counted."""
DEFAULT_MAX_SERVER_FRAME_BYTES = 16 * 1_048_576
"""What a server may send a gateway's client: 16 MiB, for real results (files, images: a 12 MB
file is 16 MB of base64). The gateway's memory at that size is in docs/limits.md."""
ENDPOINTS = ("stdio", "socket", "http")
LOG_FORMATS = ("text", "json")
EVENT_LOOPS = ("auto", "asyncio")
LOG_LEVELS = ("warning", "info", "debug")
"""``MCP_LOG_LEVEL``: warnings only (the default), or every event and unanswered frame on stderr."""
ASSERT_FORMATS_HELP = "assert every string `format` (uri, …) as invalid_format; off by default (MCP_ASSERT_FORMATS)"


class SetupError(Exception):
    """A configuration that cannot work; the CLI prints ``mcp:error reason=setup_failed`` and exits 2."""


MAX_FRAME_BYTES_LIMIT = 1 << 30
"""The largest frame limit that can be set: a frame is held whole in memory (a frame of more is absurd)."""


def positive_int(environ: Mapping[str, str], name: str, default: int, most: int = 1 << 31) -> int:
    """The positive integer ``environ[name]`` (``default`` when unset or empty) no larger than ``most``
    (a larger one is absurd, and a typo more often), or ``SetupError``."""
    raw = environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw, 10)
    except ValueError:
        raise SetupError(f"{name} must be a positive integer, got {raw!r}") from None
    if not 0 < value <= most:
        raise SetupError(f"{name} must be a positive integer no larger than {most}, got {raw!r}")
    return value


def seconds(text: str, *, name: str, most: float = 86400.0) -> float:
    """A number of seconds: finite, above 0 and at most ``most`` (a day by default); ``nan`` and ``inf``
    would turn off what they bound. ``SetupError`` naming ``name`` otherwise."""
    try:
        value = float(text)
    except ValueError:
        raise SetupError(f"{name} must be a number of seconds, got {text!r}") from None
    if not 0 < value <= most:  # false for nan as for inf
        raise SetupError(f"{name} must be a number of seconds above 0 and at most {most:g}, got {text!r}")
    return value


def _positive_seconds(environ: Mapping[str, str], name: str, default: float) -> float:
    raw = (environ.get(name) or "").strip()
    return seconds(raw, name=name) if raw else default


def _flag(environ: Mapping[str, str], name: str) -> bool:
    raw = (environ.get(name) or "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise SetupError(f"{name} must be 1 or 0 (true/false), got {raw!r}")


def _choice(environ: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    raw = (environ.get(name) or choices[0]).strip().lower()
    if raw not in choices:
        raise SetupError(f"{name} must be one of {', '.join(choices)}, got {raw!r}")
    return raw


def log_level(environ: Mapping[str, str]) -> str:
    """``MCP_LOG_LEVEL``, one of ``LOG_LEVELS``; anything else is a ``SetupError``."""
    return _choice(environ, _env("log_level"), LOG_LEVELS)


def _socket_mode(environ: Mapping[str, str]) -> int:
    name = _env("socket_mode")
    raw = (environ.get(name) or "").strip()
    if not raw:
        return int(_DEFAULTS["socket_mode"])
    try:
        mode = int(raw, 8)
    except ValueError:
        raise SetupError(f"{name} must be an octal mode such as 0600, got {raw!r}") from None
    if not 0 <= mode <= 0o777:
        raise SetupError(f"{name} must be an octal mode such as 0600, got {raw!r}")
    return mode


def parse_host_port(value: str, *, name: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6; port 0 picks a free one), or ``SetupError``."""
    host, sep, port = value.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise SetupError(f"{name} must be HOST:PORT (port 0-65535), got {value!r}")
    return host, int(port)


@dataclass(frozen=True, slots=True, kw_only=True)
class Setting:
    """One setting and every way to give it: the configuration reference (``docs/configuration.md``)
    is generated from ``SETTINGS``, and the code that reads a setting takes its variable and default
    from there."""

    name: str  # the ``Settings`` field, or the gateway configuration's key, it fills
    part: str  # the reference's section
    what: str
    variable: str | None = None  # the environment variable
    flags: tuple[str, ...] = ()  # as written on the command line ...
    commands: tuple[str, ...] = ()  # ... of these commands
    key: str | None = None  # the gateway configuration file's key
    default: Any = None  # the value when nothing gives one (``None``: unset)
    shown: str | None = None  # the default as the reference writes it, where not the value itself


_LIMITS, _LOGS, _GATEWAY = "Transports and limits", "Logs", "The gateway"
_EXECUTION, _AUTH, _CORPUS = "Policy, approvals and HTTP tools", "Who may call an HTTP front", "`serve`'s schema corpus"
_FRONTS = ("serve", "gateway")
_LIMITS_DOC = "[limits](limits.md)"

SETTINGS: tuple[Setting, ...] = (
    Setting(
        name="max_frame_bytes",
        part=_LIMITS,
        variable="MCP_MAX_FRAME_BYTES",
        flags=("--max-frame-bytes N",),
        commands=("gateway",),
        key="max_frame_bytes",
        default=DEFAULT_MAX_FRAME_BYTES,
        what="frame limit in bytes of UTF-8 (the newline not counted), checked before the frame is parsed; "
        "in the gateway, of what a client sends",
    ),
    Setting(
        name="max_server_frame_bytes",
        part=_LIMITS,
        variable="MCP_MAX_SERVER_FRAME_BYTES",
        flags=("--max-server-frame-bytes N",),
        commands=("gateway",),
        key="max_server_frame_bytes",
        default=DEFAULT_MAX_SERVER_FRAME_BYTES,
        what="gateway: frame limit of what the upstream sends (real results: files, images; "
        f"{_LIMITS_DOC} measures the memory it takes)",
    ),
    Setting(
        name="ready_file",
        part=_LIMITS,
        variable="MCP_READY_FILE",
        default=Path("/tmp/mcp.ready"),
        what="the readiness file: holds `<pid> <UTC time>` (and the address listened on) while `serve` "
        "or the gateway runs; removed at exit",
    ),
    Setting(
        name="endpoint",
        part=_LIMITS,
        variable="MCP_ENDPOINT",
        flags=("--socket PATH", "--http HOST:PORT"),
        commands=("serve",),
        default=ENDPOINTS[0],
        what=f"`serve`'s transport: {', '.join(f'`{e}`' for e in ENDPOINTS)} (a flag picks the socket or HTTP)",
    ),
    Setting(
        name="socket_path",
        part=_LIMITS,
        variable="MCP_SOCKET_PATH",
        flags=("--socket PATH",),
        commands=("serve",),
        default=Path("/tmp/mcp.sock"),
        what="the Unix socket's path (a stale socket file is replaced; a live one or a regular file is refused)",
    ),
    Setting(
        name="socket_mode",
        part=_LIMITS,
        variable="MCP_SOCKET_MODE",
        default=0o600,
        shown="`0600`",
        what="the Unix socket's mode (octal), never wider, even while it is created (the gateway's "
        "`--listen unix:PATH` too)",
    ),
    Setting(
        name="http_host",
        part=_LIMITS,
        variable="MCP_HTTP_HOST",
        flags=("--http HOST:PORT",),
        commands=("serve",),
        default="127.0.0.1",
        what="the HTTP address (a non-loopback one needs `--auth`, see below)",
    ),
    Setting(
        name="http_port",
        part=_LIMITS,
        variable="MCP_HTTP_PORT",
        flags=("--http HOST:PORT",),
        commands=("serve",),
        default=8000,
        what="the HTTP port (0: a free one, named in the ready line)",
    ),
    Setting(
        name="allowed_hosts",
        part=_LIMITS,
        variable="MCP_ALLOWED_HOSTS",
        default=(),
        shown="loopback only",
        what="extra `Host`/`Origin` names accepted over HTTP, comma-separated (DNS-rebinding protection: "
        "403 otherwise)",
    ),
    Setting(
        name="max_sessions",
        part=_LIMITS,
        variable="MCP_MAX_SESSIONS",
        default=1000,
        what="`serve --http`: HTTP sessions open at once",
    ),
    Setting(
        name="http_read_seconds",
        part=_LIMITS,
        variable="MCP_HTTP_READ_TIMEOUT",
        default=30.0,
        shown="`30`",
        what=f"seconds within which an HTTP request's head and body must arrive ({_LIMITS_DOC})",
    ),
    Setting(name="max_batch", part=_LIMITS, variable="MCP_MAX_BATCH", default=100, what="items in one `validate_many`"),
    Setting(
        name="compile_all_schemas",
        part=_LIMITS,
        variable="MCP_COMPILE_ALL_SCHEMAS",
        default=False,
        shown="`0`",
        what="`1`: compile every bundled MCP version's validators at start-up (for a server that answers every "
        "version at once); by default a validator is compiled when a session first needs it",
    ),
    Setting(
        name="event_loop",
        part=_LIMITS,
        variable="MCP_EVENT_LOOP",
        default="auto",
        what="`auto`: uvloop where it is installed (the `uvloop` extra: `pip install 'mcp-server[uvloop]'`), else "
        "asyncio's own loop; `asyncio`: asyncio's own loop always",
    ),
    Setting(
        name="assert_formats",
        part=_LIMITS,
        variable="MCP_ASSERT_FORMATS",
        flags=("--assert-formats",),
        commands=("serve", "gateway", "check"),
        default=False,
        shown="`0`",
        what="`1`: assert string `format`s (`uri`, …) as `invalid_format`; by default a `format` is an "
        "annotation, as the JSON Schema drafts say",
    ),
    Setting(
        name="runs_dir",
        part=_LOGS,
        variable="MCP_RUNS_DIR",
        default=Path("runs"),
        what="the root of the event logs and gateway reports: `<root>/mcp_server/<stream>/<UTC-stamp>-<run_id>.jsonl`",
    ),
    Setting(
        name="log_stream",
        part=_LOGS,
        flags=("--log-stream NAME",),
        commands=_FRONTS,
        shown="the mode",
        what="the stream's folder under the root (letters, digits, `.`, `_`, `-`)",
    ),
    Setting(name="runs_keep", part=_LOGS, variable="MCP_RUNS_KEEP", default=20, what="complete runs kept per stream"),
    Setting(
        name="log_max_bytes",
        part=_LOGS,
        variable="MCP_LOG_MAX_BYTES",
        default=64 << 20,
        shown="`67108864` (64 MiB)",
        what="a run's file rotates once it passes this size: `<stamp>-<run_id>.<n>.jsonl`",
    ),
    Setting(
        name="log_keep_files",
        part=_LOGS,
        variable="MCP_LOG_KEEP_FILES",
        default=10,
        what="rotated files kept per run (the newest)",
    ),
    Setting(
        name="deterministic",
        part=_LOGS,
        variable="MCP_DETERMINISTIC",
        flags=("--deterministic",),
        commands=_FRONTS,
        default=False,
        shown="`0`",
        what="`1`: a fixed clock, ids derived from the seed and the order, zero durations: two runs over the "
        "same input write byte-identical logs (golden files)",
    ),
    Setting(name="seed", part=_LOGS, variable="MCP_SEED", default="mcp-server", what="the seed of deterministic ids"),
    Setting(
        name="log_format",
        part=_LOGS,
        variable="MCP_LOG_FORMAT",
        flags=("--log-format text|json",),
        commands=_FRONTS,
        default=LOG_FORMATS[0],
        what=f"the form of the lines on stderr: {' or '.join(f'`{f}`' for f in LOG_FORMATS)}",
    ),
    Setting(
        name="log_level",
        part=_LOGS,
        variable="MCP_LOG_LEVEL",
        default=LOG_LEVELS[0],
        what=f"{', '.join(f'`{v}`' for v in LOG_LEVELS)}: `info` and `debug` put every event and every "
        "unanswered invalid frame on stderr (a healthy run is otherwise quiet)",
    ),
    Setting(
        name="listen",
        part=_GATEWAY,
        flags=("--listen WHERE",),
        commands=("gateway",),
        default="stdio",
        what="where clients connect: `stdio`, `unix:PATH` or `http://HOST:PORT/mcp`",
    ),
    Setting(
        name="upstream",
        part=_GATEWAY,
        flags=("--upstream URL",),
        commands=("gateway", "doctor", "lock", "login"),
        shown="the command after `--`",
        what="a remote Streamable HTTP MCP server to put the gateway in front of",
    ),
    Setting(
        name="config",
        part=_GATEWAY,
        flags=("--config FILE",),
        commands=("gateway", "doctor", "login"),
        what="the gateway configuration file, JSON or TOML (`schemas/gateway-config.schema.json`): "
        "the keys in this table",
    ),
    Setting(
        name="mode",
        part=_GATEWAY,
        flags=("--mode enforce|observe",),
        commands=("gateway",),
        key="mode",
        default="enforce",
        what="`enforce`: invalid frames are answered by the gateway and never delivered; `observe`: "
        "every frame passes unchanged, violations are logged and counted",
    ),
    Setting(
        name="directions",
        part=_GATEWAY,
        key="directions",
        shown="the `mode`",
        what="the mode per direction: `client_to_server`, `server_to_client`",
    ),
    Setting(
        name="tools",
        part=_GATEWAY,
        key="tools",
        what="per tool: `tools.NAME.mode` (its own mode; the most specific wins), `tools.NAME.scopes` (what "
        "a front's token must hold to call it, [authentication](authentication.md))",
    ),
    Setting(
        name="rules",
        part=_GATEWAY,
        key="rules",
        shown="every rule on",
        what="rule slug → `false`: the rule is off (its violations are neither enforced nor counted); "
        "a slug that names no rule is refused; `duplicate_request_id` stays on (ADR 43)",
    ),
    Setting(
        name="grace_seconds",
        part=_GATEWAY,
        key="grace_seconds",
        default=2.0,
        shown="`2`",
        what="at the client's end of input, how long the upstream has to answer what is pending",
    ),
    Setting(
        name="check_wait_seconds",
        part=_GATEWAY,
        key="check_wait_seconds",
        default=30.0,
        shown="`30`",
        what="how long a frame that cannot be checked yet waits, at most, for what checks it (the reply to a "
        "pending `initialize`, the `tools/list` naming its tool)",
    ),
    Setting(
        name="request_timeout_seconds",
        part=_GATEWAY,
        key="request_timeout_seconds",
        default=120.0,
        shown="`120`",
        what="how long a relayed request waits for the upstream's reply; then the client gets `upstream_timeout` "
        "(retryable) and the upstream `notifications/cancelled` (a policy's per-tool timeout governs a "
        "`tools/call` instead)",
    ),
    Setting(
        name="lock",
        part=_GATEWAY,
        flags=("--lock FILE",),
        commands=("gateway",),
        key="lock",
        what="a tool lockfile (`mcp-server lock`) every listed tool is held to; in the file, relative to it",
    ),
    Setting(
        name="lock_server",
        part=_GATEWAY,
        flags=("--lock-server NAME",),
        commands=("gateway",),
        key="lock_server",
        shown="the only one, else the upstream's `serverInfo.name`",
        what="the lockfile's server entry",
    ),
    Setting(
        name="servers",
        part=_GATEWAY,
        flags=("--servers FILE",),
        commands=("gateway",),
        key="servers",
        shown="none: one upstream",
        what="many upstreams behind one gateway: a table per server (`command`, `args`, `env`, or `url`, "
        "`headers`; `prefix`, `bridge`); `--servers` reads an MCP client's own file ([aggregate](aggregate.md))",
    ),
    Setting(
        name="aggregate",
        part=_GATEWAY,
        key="aggregate",
        shown='`separator = "__"`, `start_seconds = 10`, `health_seconds = 15`, `page_size = 500`',
        what="how many upstreams are named, waited for, watched, restarted and paged ([aggregate](aggregate.md))",
    ),
    Setting(
        name="headers",
        part=_GATEWAY,
        flags=("--header 'NAME: VALUE'",),
        commands=("gateway", "doctor", "lock"),
        key="headers",
        what="sent to an HTTP upstream with every request (a flag beats the file's header of the same name); "
        "a value may hold `${VAR}` or `${file:PATH}` and is never printed ([authentication](authentication.md))",
    ),
    Setting(
        name="oauth",
        part=_GATEWAY,
        key="oauth",
        what="the gateway's OAuth login to an HTTP upstream that asks for it (the `oauth` extra; "
        "[authentication](authentication.md))",
    ),
    Setting(
        name="oauth_dir",
        part=_GATEWAY,
        variable="MCP_OAUTH_DIR",
        shown="`$XDG_STATE_HOME/mcp-server/oauth`",
        what="where the gateway keeps its OAuth tokens, one file per upstream URL, readable by its owner only",
    ),
    Setting(
        name="header_variables",
        part=_GATEWAY,
        variable="MCP_HEADER_<NAME>",
        what="written by `wrap`: a remote entry's literal header value, moved into the entry's `env` and "
        "named by its `--header` as `${MCP_HEADER_<NAME>}`",
    ),
    Setting(
        name="bridge",
        part=_GATEWAY,
        flags=("--bridge VERSION",),
        commands=("gateway",),
        what="the one version the upstream speaks: clients of the other era are translated "
        "([ADR 24](adr/0024-bridging-the-eras.md))",
    ),
    Setting(
        name="gateway_max_sessions",
        part=_GATEWAY,
        flags=("--max-sessions N",),
        commands=("gateway",),
        shown="sized to the memory, at most 100",
        what="HTTP front: client sessions open at once (each its own upstream); past it a new one is refused with 503",
    ),
    Setting(
        name="idle_timeout",
        part=_GATEWAY,
        flags=("--idle-timeout SECONDS",),
        commands=("gateway",),
        default=600.0,
        shown="`600`",
        what="HTTP front: an idle session ends (and its upstream) after this many seconds",
    ),
    Setting(
        name="otel",
        part=_GATEWAY,
        variable="MCP_OTEL",
        flags=("--otel",),
        commands=("gateway",),
        default=False,
        shown="`0`",
        what="`1`: export an OpenTelemetry span per forwarded request (the `otel` extra)",
    ),
    Setting(
        name="otel_exporter",
        part=_GATEWAY,
        variable="OTEL_TRACES_EXPORTER",
        default="otlp",
        what="with `--otel`: `otlp` (needs `opentelemetry-exporter-otlp-proto-http`), `console` (on stderr) or "
        "`none`; `OTEL_EXPORTER_OTLP_*` and `OTEL_SERVICE_NAME` as OpenTelemetry defines them",
    ),
    Setting(
        name="policy",
        part=_EXECUTION,
        variable="MCP_POLICY_FILE",
        flags=("--policy FILE",),
        commands=("serve", "gateway", "doctor"),
        what="the execution policy, TOML or JSON (`schemas/policy.schema.json`; [security](security.md))",
    ),
    Setting(
        name="tools_file",
        part=_EXECUTION,
        variable="MCP_HTTP_TOOLS_FILE",
        flags=("--tools FILE",),
        commands=("serve",),
        what="the catalogue of HTTP-backed tools (`schemas/http-tools.schema.json`)",
    ),
    Setting(
        name="execution_base_url",
        part=_EXECUTION,
        variable="MCP_EXECUTION_BASE_URL",
        what="the base URL of the HTTP-backed tools (required with a catalogue)",
    ),
    Setting(
        name="approver_token",
        part=_EXECUTION,
        variable="MCP_APPROVER_TOKEN",
        what="the bearer token (16+ characters) `/approvals` requires; `serve --http` does not start without it "
        "when the policy holds calls",
    ),
    Setting(
        name="approvals_url",
        part=_EXECUTION,
        variable="MCP_APPROVALS_URL",
        flags=("--url URL",),
        commands=("approvals",),
        default="http://127.0.0.1:8000",
        what="where `mcp-server approvals` talks",
    ),
    Setting(
        name="approval_key",
        part=_EXECUTION,
        variable="MCP_APPROVAL_KEY",
        shown="a random key per process",
        what="the key (32+ bytes) signing approval grants, the same on every replica; a shorter or unreadable "
        "key, or both variables given, stops the gateway",
    ),
    Setting(
        name="approval_key_file",
        part=_EXECUTION,
        variable="MCP_APPROVAL_KEY_FILE",
        what="the same key, read from a file",
    ),
    Setting(
        name="redis_url",
        part=_EXECUTION,
        variable="MCP_REDIS_URL",
        shown="each replica its own",
        what="a Redis the replicas share: an approval runs once whichever replicas its retries reach "
        "(the `redis` extra)",
    ),
    Setting(
        name="auth",
        part=_AUTH,
        variable="MCP_AUTH",
        flags=("--auth SPEC",),
        commands=_FRONTS,
        what="check each request's bearer token: `tokens:FILE`, `jwt:ISSUER_URL` (the `jwt` extra), or, "
        "in the gateway, `passthrough` to the upstream ([authentication](authentication.md))",
    ),
    Setting(
        name="auth_resource",
        part=_AUTH,
        variable="MCP_AUTH_RESOURCE",
        flags=("--auth-resource URL",),
        commands=_FRONTS,
        shown="the URL listened on",
        what="the public URL of the MCP endpoint that tokens are for",
    ),
    Setting(
        name="allow_unauthenticated",
        part=_AUTH,
        variable="MCP_ALLOW_UNAUTHENTICATED",
        flags=("--allow-unauthenticated",),
        commands=_FRONTS,
        default=False,
        shown="`0`",
        what="`1`: serve anyone who reaches a non-loopback address; without it, or `--auth`, such a front "
        "refuses to start",
    ),
    Setting(
        name="schemas_dir",
        part=_CORPUS,
        variable="SYN_SCHEMAS_DIR",
        shown="`libs/synesthetic-schemas/jsonschema`, else the bundled MCP schemas",
        what="the schemas the corpus tools serve (`list_schemas`, `get_schema`, `validate_asset`, …)",
    ),
    Setting(
        name="examples_dir",
        part=_CORPUS,
        variable="SYN_EXAMPLES_DIR",
        shown="`libs/synesthetic-schemas/examples`, else the bundled examples",
        what="the examples `list_examples` and `get_example` serve",
    ),
    Setting(
        name="schema_aliases",
        part=_CORPUS,
        variable="MCP_SCHEMA_ALIASES",
        what="more names for corpus schemas: `alias=schema,alias2=schema2`",
    ),
    Setting(
        name="backend_url",
        part=_CORPUS,
        variable="SYN_BACKEND_URL",
        what="the backend `populate_backend` POSTs to (the tool is enabled only when this is set)",
    ),
    Setting(
        name="backend_assets_path",
        part=_CORPUS,
        variable="SYN_BACKEND_ASSETS_PATH",
        default="/synesthetic-assets/",
        what="the path under it",
    ),
    Setting(
        name="backend_timeout",
        part=_CORPUS,
        variable="SYN_BACKEND_TIMEOUT",
        default=5.0,
        shown="`5`",
        what="seconds a `populate_backend` call waits",
    ),
)
"""Every setting, in the reference's order."""

SETTING: Mapping[str, Setting] = MappingProxyType({setting.name: setting for setting in SETTINGS})
"""The settings by name."""
_DEFAULTS: Mapping[str, Any] = MappingProxyType({setting.name: setting.default for setting in SETTINGS})


def _env(name: str) -> str:
    """The variable of the setting ``name``."""
    variable = SETTING[name].variable
    if variable is None:
        raise KeyError(name)
    return variable


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """What the environment says (``from_env``); each field's variable and default are its row's in
    ``SETTINGS``."""

    max_frame_bytes: int = _DEFAULTS["max_frame_bytes"]
    max_server_frame_bytes: int = _DEFAULTS["max_server_frame_bytes"]
    ready_file: Path = _DEFAULTS["ready_file"]
    max_batch: int = _DEFAULTS["max_batch"]
    endpoint: str = _DEFAULTS["endpoint"]
    socket_path: Path = _DEFAULTS["socket_path"]
    socket_mode: int = _DEFAULTS["socket_mode"]
    http_host: str = _DEFAULTS["http_host"]
    http_port: int = _DEFAULTS["http_port"]
    allowed_hosts: tuple[str, ...] = _DEFAULTS["allowed_hosts"]
    max_sessions: int = _DEFAULTS["max_sessions"]
    http_read_seconds: float = _DEFAULTS["http_read_seconds"]  # an HTTP request's head and body (issue 30)
    runs_dir: Path = _DEFAULTS["runs_dir"]
    runs_keep: int = _DEFAULTS["runs_keep"]
    log_max_bytes: int = _DEFAULTS["log_max_bytes"]
    log_keep_files: int = _DEFAULTS["log_keep_files"]
    deterministic: bool = _DEFAULTS["deterministic"]
    seed: str = _DEFAULTS["seed"]
    log_format: str = _DEFAULTS["log_format"]
    log_every_event: bool = False
    assert_formats: bool = _DEFAULTS["assert_formats"]
    compile_all_schemas: bool = _DEFAULTS["compile_all_schemas"]
    event_loop: str = _DEFAULTS["event_loop"]
    environ: Mapping[str, str] | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        def text(name: str) -> str:  # the variable's value, else the default's text
            return environ.get(_env(name)) or str(_DEFAULTS[name])

        def count(name: str, most: int = 1 << 31) -> int:
            return positive_int(environ, _env(name), _DEFAULTS[name], most)

        endpoint = text("endpoint").strip().lower()
        if endpoint not in ENDPOINTS:
            raise SetupError(f"Unsupported MCP transport {endpoint!r} (expected one of: {', '.join(ENDPOINTS)})")
        host, port_text = text("http_host").strip(), text("http_port").strip()
        _, port = parse_host_port(f"{host}:{port_text}", name=f"{_env('http_host')}:{_env('http_port')}")
        hosts = (environ.get(_env("allowed_hosts")) or "").split(",")
        return cls(
            max_frame_bytes=count("max_frame_bytes", MAX_FRAME_BYTES_LIMIT),
            max_server_frame_bytes=count("max_server_frame_bytes", MAX_FRAME_BYTES_LIMIT),
            ready_file=Path(text("ready_file")),
            max_batch=count("max_batch"),
            endpoint=endpoint,
            socket_path=Path(text("socket_path")),
            socket_mode=_socket_mode(environ),
            http_host=host,
            http_port=port,
            allowed_hosts=tuple(h.strip() for h in hosts if h.strip()),
            max_sessions=count("max_sessions"),
            http_read_seconds=_positive_seconds(environ, _env("http_read_seconds"), _DEFAULTS["http_read_seconds"]),
            runs_dir=Path(text("runs_dir")),
            runs_keep=count("runs_keep"),
            log_max_bytes=count("log_max_bytes", 1 << 40),
            log_keep_files=count("log_keep_files"),
            deterministic=_flag(environ, _env("deterministic")),
            seed=text("seed"),
            log_format=_choice(environ, _env("log_format"), LOG_FORMATS),
            log_every_event=log_level(environ) != "warning",
            assert_formats=_flag(environ, _env("assert_formats")),
            compile_all_schemas=_flag(environ, _env("compile_all_schemas")),
            event_loop=_choice(environ, _env("event_loop"), EVENT_LOOPS),
            environ=dict(environ),
        )


def _cell(text: str | None) -> str:
    return f"`{text}`" if text else ""


def _markdown_row(setting: Setting) -> str:
    flags = ", ".join(f"`{flag}`" for flag in setting.flags)
    if setting.commands:
        flags += f" ({', '.join(setting.commands)})"
    default = setting.shown
    if default is None and setting.default is not None:
        default = f"`{setting.default}`"
    cells = [_cell(setting.name), _cell(setting.variable), flags, _cell(setting.key), default or "", setting.what]
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"  # a pipe would end the cell


def configuration_markdown() -> str:
    """``docs/configuration.md``, generated from ``SETTINGS`` (a test keeps the file equal to this)."""
    lines = [
        "# Configuration reference",
        "",
        "Generated from `SETTINGS` in `mcp_server/core/settings.py` by "
        "`python -m mcp_server.core.settings > docs/configuration.md`; do not edit.",
        "",
        "A setting is given by a flag, an environment variable or a key of the gateway's configuration file",
        "(`--config`, JSON or TOML, [the gateway guide](gateway.md)), with one precedence: the flag, then the",
        "variable, then the file, then the default. A value that cannot work (not a number, out of range, a",
        "file that breaks its schema, a missing file) stops the command before it starts, with",
        "`mcp:error reason=setup_failed detail=...` on stderr naming the setting, and exit 2.",
    ]
    for part in dict.fromkeys(setting.part for setting in SETTINGS):
        lines += ["", f"## {part}", "", "| setting | variable | flag | configuration key | default | what it does |"]
        lines.append("| --- | --- | --- | --- | --- | --- |")
        lines += [_markdown_row(setting) for setting in SETTINGS if setting.part == part]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(configuration_markdown())
