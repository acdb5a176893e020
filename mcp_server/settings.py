"""Start-up configuration read from the environment, once. Bad values are refused with a clear error."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .size_guard import DEFAULT_MAX_FRAME_BYTES

__all__ = ["Settings", "SetupError"]


class SetupError(Exception):
    """A configuration that cannot work; the CLI prints ``mcp:error reason=setup_failed`` and exits 2."""


def _positive_int(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw, 10)
    except ValueError:
        raise SetupError(f"{name} must be a positive integer, got {raw!r}") from None
    if value <= 0:
        raise SetupError(f"{name} must be a positive integer, got {raw!r}")
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    ready_file: Path = Path("/tmp/mcp.ready")
    max_batch: int = 100
    environ: Mapping[str, str] | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        ready = environ.get("MCP_READY_FILE") or "/tmp/mcp.ready"
        return cls(
            max_frame_bytes=_positive_int(environ, "MCP_MAX_FRAME_BYTES", DEFAULT_MAX_FRAME_BYTES),
            ready_file=Path(ready),
            max_batch=_positive_int(environ, "MCP_MAX_BATCH", 100),
            environ=dict(environ),
        )
