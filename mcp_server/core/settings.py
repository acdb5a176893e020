"""Start-up configuration read from the environment, once. Bad values are refused with a clear error."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ASSERT_FORMATS_HELP",
    "DEFAULT_MAX_FRAME_BYTES",
    "DEFAULT_MAX_SERVER_FRAME_BYTES",
    "ENDPOINTS",
    "LOG_FORMATS",
    "LOG_LEVELS",
    "MAX_FRAME_BYTES_LIMIT",
    "Settings",
    "SetupError",
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
    return _choice(environ, "MCP_LOG_LEVEL", LOG_LEVELS)


def _socket_mode(environ: Mapping[str, str]) -> int:
    raw = (environ.get("MCP_SOCKET_MODE") or "").strip()
    if not raw:
        return 0o600
    try:
        mode = int(raw, 8)
    except ValueError:
        raise SetupError(f"MCP_SOCKET_MODE must be an octal mode such as 0600, got {raw!r}") from None
    if not 0 <= mode <= 0o777:
        raise SetupError(f"MCP_SOCKET_MODE must be an octal mode such as 0600, got {raw!r}")
    return mode


def parse_host_port(value: str, *, name: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6; port 0 picks a free one), or ``SetupError``."""
    host, sep, port = value.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise SetupError(f"{name} must be HOST:PORT (port 0-65535), got {value!r}")
    return host, int(port)


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    max_server_frame_bytes: int = DEFAULT_MAX_SERVER_FRAME_BYTES
    ready_file: Path = Path("/tmp/mcp.ready")
    max_batch: int = 100
    endpoint: str = "stdio"
    socket_path: Path = Path("/tmp/mcp.sock")
    socket_mode: int = 0o600
    http_host: str = "127.0.0.1"
    http_port: int = 8000
    allowed_hosts: tuple[str, ...] = ()
    max_sessions: int = 1000
    http_read_seconds: float = 30.0  # an HTTP request's head and body must arrive within this (issue 30)
    runs_dir: Path = Path("runs")
    runs_keep: int = 20
    log_max_bytes: int = 64 << 20
    log_keep_files: int = 10
    deterministic: bool = False
    seed: str = "mcp-server"
    log_format: str = "text"
    log_every_event: bool = False
    assert_formats: bool = False
    environ: Mapping[str, str] | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        ready = environ.get("MCP_READY_FILE") or "/tmp/mcp.ready"
        endpoint = (environ.get("MCP_ENDPOINT") or "stdio").strip().lower()
        if endpoint not in ENDPOINTS:
            raise SetupError(f"Unsupported MCP transport {endpoint!r} (expected one of: {', '.join(ENDPOINTS)})")
        host = (environ.get("MCP_HTTP_HOST") or "127.0.0.1").strip()
        port_text = (environ.get("MCP_HTTP_PORT") or "8000").strip()
        _, port = parse_host_port(f"{host}:{port_text}", name="MCP_HTTP_HOST:MCP_HTTP_PORT")
        return cls(
            max_frame_bytes=positive_int(
                environ, "MCP_MAX_FRAME_BYTES", DEFAULT_MAX_FRAME_BYTES, MAX_FRAME_BYTES_LIMIT
            ),
            max_server_frame_bytes=positive_int(
                environ, "MCP_MAX_SERVER_FRAME_BYTES", DEFAULT_MAX_SERVER_FRAME_BYTES, MAX_FRAME_BYTES_LIMIT
            ),
            ready_file=Path(ready),
            max_batch=positive_int(environ, "MCP_MAX_BATCH", 100),
            endpoint=endpoint,
            socket_path=Path(environ.get("MCP_SOCKET_PATH") or "/tmp/mcp.sock"),
            socket_mode=_socket_mode(environ),
            http_host=host,
            http_port=port,
            allowed_hosts=tuple(h.strip() for h in (environ.get("MCP_ALLOWED_HOSTS") or "").split(",") if h.strip()),
            max_sessions=positive_int(environ, "MCP_MAX_SESSIONS", 1000),
            http_read_seconds=_positive_seconds(environ, "MCP_HTTP_READ_TIMEOUT", 30.0),
            runs_dir=Path(environ.get("MCP_RUNS_DIR") or "runs"),
            runs_keep=positive_int(environ, "MCP_RUNS_KEEP", 20),
            log_max_bytes=positive_int(environ, "MCP_LOG_MAX_BYTES", 64 << 20, 1 << 40),
            log_keep_files=positive_int(environ, "MCP_LOG_KEEP_FILES", 10),
            deterministic=_flag(environ, "MCP_DETERMINISTIC"),
            seed=environ.get("MCP_SEED") or "mcp-server",
            log_format=_choice(environ, "MCP_LOG_FORMAT", LOG_FORMATS),
            log_every_event=log_level(environ) != "warning",
            assert_formats=_flag(environ, "MCP_ASSERT_FORMATS"),
            environ=dict(environ),
        )
