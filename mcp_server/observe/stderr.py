"""Events on stderr: one human-readable line each (or the JSON), quiet for a healthy run."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from ..core import jsonio

__all__ = ["Sink", "feed", "stderr_sink"]

Sink = Callable[[Mapping[str, Any]], None]
"""Receives every finished event: stderr (in the writer process), or a sink of this process."""


def feed(sink: Sink, event: Mapping[str, Any]) -> None:
    try:
        sink(event)
    except Exception as exc:  # a sink must never stop the log
        sys.stderr.write(f"mcp:error reason=log_sink_failed detail={type(exc).__name__}: {exc}\n")


_QUIET_STATUSES = frozenset({"ok", "tool_error"})


def stderr_sink(*, format: str, every_event: bool, stream: TextIO | None = None) -> Sink:
    """Events on stderr: one human-readable line each (or the JSON); by default only failures,
    violations, policy denials, start and stop, so a healthy run stays quiet."""

    def write(event: Mapping[str, Any]) -> None:
        # Quiet for what went well, and for the reply to a failed frame (its frame's line says it).
        quiet = event["status"] in _QUIET_STATUSES or (event.get("bytes_in") == 0 and event.get("bytes_out"))
        if not every_event and event["event"] in ("frame", "execution") and quiet:
            return
        out = stream or sys.stderr
        out.write((jsonio.dumps(event).decode() if format == "json" else _one_line(event)) + "\n")
        out.flush()

    return write


def _one_line(event: Mapping[str, Any]) -> str:
    parts = [f"mcp:event {event['event']} seq={event['seq']}"]
    for key in ("direction", "method", "tool_id", "request_id", "status", "rule", "action", "duration_ms"):
        value = event.get(key)
        if value is not None:
            parts.append(f"{key}={value}")
    error = event.get("error")
    if isinstance(error, Mapping):
        parts.append(f"error={error.get('code')}")
        details = error.get("details") or []
        if details:
            first = details[0]
            parts.append(f"at={first.get('path') or '/'}")
    return " ".join(parts)
