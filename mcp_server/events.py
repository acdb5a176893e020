"""The structured event log: one JSON event per frame and direction, and per start, stop, violation
and policy decision, written as JSONL under ``runs/mcp_server/<stream>/`` and to stderr.

The chain pays for an event with a tuple appended to a deque; a background thread turns tuples
into events, writes them, and feeds the other sinks (stderr, metrics). The queue is bounded:
past its limit the chain waits for the writer (backpressure), and no event is ever dropped.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import sys
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from . import jsonio
from .errors import Rejection
from .stage import CheckStage
from .types import Frame, Handler, Middleware, Reply, Session

__all__ = [
    "LOG_SCHEMA_VERSION",
    "VOLATILE_FIELDS",
    "EventLog",
    "EventLogSettings",
    "Sink",
    "capture_stage",
    "log_events",
    "note_rejection",
]

LOG_SCHEMA_VERSION = "1.0"
"""The version of the event format itself (``metadata.schemaVersion``; ``schemas/log-event.schema.json``)."""

VOLATILE_FIELDS = ("ts", "duration_ms", "trace_id", "run_id")
"""What differs between two runs over the same input when the run is not deterministic."""

FIXED_TS = "1970-01-01T00:00:00.000Z"
_MAX_DETAILS = 20
_BATCH = 256  # events that wake the writer before its timer does
_QUEUE_LIMIT = 65_536  # events held at most before the chain waits for the writer
_WRITER_PERIOD = 0.05  # seconds: how stale the file may be under a trickle of events
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")
_OPEN_TRACES = 10_000  # requests whose trace id waits for the response, at most

Sink = Callable[[Mapping[str, Any]], None]
"""Receives every finished event (on the writer thread): stderr, metrics."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EventLogSettings:
    runs_dir: Path = Path("runs")
    stream: str = "serve"
    keep: int = 20
    deterministic: bool = False
    seed: str = "mcp-server"
    stderr_format: str = "text"  # or "json"
    stderr_all: bool = False  # every event on stderr, not only failures, start and stop
    environ: Mapping[str, str] = field(default_factory=dict)


class _Draft:
    """What the chain learns about one frame while it passes: filled by the stages, read once."""

    __slots__ = ("action", "frame", "rejection")

    def __init__(self) -> None:
        self.frame: Frame | None = None
        self.rejection: Rejection | None = None
        self.action: str | None = None


_draft: ContextVar[_Draft | None] = ContextVar("mcp_server_event_draft", default=None)


def note_rejection(rejection: Rejection, action: str | None = None) -> None:
    """Tell the frame's event why the frame was refused (and, in a gateway, what was done about it)."""
    draft = _draft.get()
    if draft is not None:
        draft.rejection = rejection
        if rejection.frame is not None:
            draft.frame = rejection.frame
        if action is not None:  # the boundary rendering a gateway's enforced rejection keeps its action
            draft.action = action


def _capture(frame: Frame) -> Frame:
    draft = _draft.get()
    if draft is not None:
        draft.frame = frame
    return frame


def capture_stage() -> CheckStage:
    """After the schema check: the classified frame, for its event (a no-op without a log)."""
    return CheckStage(_capture)


def log_events(log: EventLog) -> Middleware:
    """The outermost middleware: one event per frame, after the chain has dealt with it."""

    def middleware(next_handler: Handler) -> Handler:
        async def handle(frame: Frame) -> Reply | None:
            draft = _Draft()
            token = _draft.set(draft)
            began = time.perf_counter()
            try:
                reply = await next_handler(frame)
            finally:
                _draft.reset(token)
            log.frame(frame, draft, reply, time.perf_counter() - began)
            return reply

        return handle

    return middleware


class EventLog:
    """One run's events: numbered in order, written by a background thread, never dropped."""

    def __init__(self, settings: EventLogSettings, *, sinks: Sequence[Sink] = ()) -> None:
        self.settings = settings
        self.deterministic = settings.deterministic
        self.run_id = self._derive("run") if self.deterministic else secrets.token_hex(8)
        self._seq = 0
        self._sessions = 0
        self._queue: deque[tuple[Any, ...]] = deque()
        self._wake = threading.Event()
        self._room = threading.Condition()
        self._closing = False
        self._sinks: list[Sink] = list(sinks)
        self._open_traces: OrderedDict[tuple[str, Any], str] = OrderedDict()
        self._redact: Callable[[Any], tuple[Any, bool]] | None = None
        stamp = "19700101T000000Z" if self.deterministic else datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        self.directory = settings.runs_dir / "mcp_server" / settings.stream
        self.path = self.directory / f"{stamp}-{self.run_id}.jsonl"
        self._partial = self.path.with_name(self.path.name + ".partial")
        self._file: Any = None
        self._thread = threading.Thread(target=self._write_loop, name="mcp-events", daemon=True)

    # -- set-up ---------------------------------------------------------------------------

    def add_sink(self, sink: Sink) -> None:
        self._sinks.append(sink)

    def set_redactor(self, redact: Callable[[Any], tuple[Any, bool]]) -> None:
        """``redact(value) → (copy with secrets replaced, whether anything was)``, for error details."""
        self._redact = redact

    def open(self) -> EventLog:
        """Create the run's file (as ``.partial`` until it is complete) and start the writer."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self._file = self._partial.open("wb")
        self._thread.start()
        return self

    def close(self) -> Path:
        """Write what is queued, complete the file, point ``.latest`` at it, and keep the newest runs."""
        self._closing = True
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join()
        if self._file is not None:
            self._file.close()
            self._file = None
            os.replace(self._partial, self.path)
            _link_latest(self.directory, self.path)
            _keep_newest(self.directory, self.settings.keep, self.path)
        return self.path

    def session_id(self, session: Session) -> str:
        """A session's id in the log: its own, or in a deterministic run one derived from its order."""
        if session.log_id is None:
            self._sessions += 1
            session.log_id = self._derive(f"session:{self._sessions}") if self.deterministic else session.id
        return session.log_id

    def _derive(self, what: str) -> str:
        return hashlib.sha256(f"{self.settings.seed}:{what}".encode()).hexdigest()[:16]

    # -- producers (the event loop's thread) ------------------------------------------------

    def frame(self, frame: Frame, draft: _Draft, reply: Reply | None, seconds: float) -> None:
        seen = draft.frame or frame
        session = frame.session
        version = seen.version or session.protocol_version
        self._put(("frame", time.time(), seconds, frame, seen, draft, reply, self.session_id(session), version))

    def emit(self, event: str, *, session: Session | None = None, **fields: Any) -> None:
        """A non-frame event: ``start``, ``stop``, ``violation``, ``policy``, ``execution``, ``upstream``."""
        session_id = None if session is None else self.session_id(session)
        self._put(("other", time.time(), event, session_id, fields))

    def _put(self, item: tuple[Any, ...]) -> None:
        self._seq += 1
        queue = self._queue
        queue.append((self._seq, *item))
        size = len(queue)
        if size % _BATCH == 0:
            self._wake.set()
            if size >= _QUEUE_LIMIT:
                with self._room:  # backpressure: wait for the writer rather than drop
                    while len(queue) >= _QUEUE_LIMIT // 2 and self._thread.is_alive():
                        self._room.wait(0.1)

    # -- the writer thread ------------------------------------------------------------------

    def _write_loop(self) -> None:
        queue = self._queue
        while True:
            self._wake.wait(_WRITER_PERIOD)
            self._wake.clear()
            closing = self._closing
            lines: list[bytes] = []
            while queue:
                event = self._build(queue.popleft())
                lines.append(jsonio.dumps(event))
                for sink in self._sinks:
                    try:
                        sink(event)
                    except Exception as exc:  # a sink must never stop the log
                        sys.stderr.write(f"mcp:error reason=log_sink_failed detail={type(exc).__name__}: {exc}\n")
                if len(lines) >= _BATCH:
                    self._flush(lines)
                    lines = []
            self._flush(lines)
            with self._room:
                self._room.notify_all()
            if closing:
                return

    def _flush(self, lines: list[bytes]) -> None:
        if lines and self._file is not None:
            self._file.write(b"\n".join(lines) + b"\n")
            self._file.flush()

    def _base(self, seq: int, when: float, event: str, session_id: str | None) -> dict[str, Any]:
        if self.deterministic:
            ts = FIXED_TS
        else:
            ts = datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(when * 1000) % 1000:03d}Z"
        return {"ts": ts, "run_id": self.run_id, "seq": seq, "event": event, "session_id": session_id}

    def _build(self, item: tuple[Any, ...]) -> dict[str, Any]:
        seq, kind = item[0], item[1]
        if kind == "other":
            _, _, when, event, session_id, fields = item
            document = self._base(seq, when, event, session_id)
            document.update(_FRAME_DEFAULTS)
            document.update(fields)
            if "error" in fields and fields["error"] is not None:
                document["error"], applied = self._redacted_error(fields["error"])
                document["redaction_applied"] = document.get("redaction_applied", False) or applied
            document["metadata"] = self._metadata()
            return document
        _, _, when, seconds, frame, seen, draft, reply, session_id, version = item
        return self._frame_event(seq, when, seconds, frame, seen, draft, reply, session_id, version)

    def _metadata(self) -> dict[str, Any]:
        return {"schemaVersion": LOG_SCHEMA_VERSION, "deterministic": self.deterministic}

    def _frame_event(
        self,
        seq: int,
        when: float,
        seconds: float,
        frame: Frame,
        seen: Frame,
        draft: _Draft,
        reply: Reply | None,
        session_id: str,
        version: str | None,
    ) -> dict[str, Any]:
        message = seen.message
        params = message.params if message is not None and isinstance(message.params, Mapping) else None
        meta = params.get("_meta") if params is not None else None
        meta = meta if isinstance(meta, Mapping) else {}
        reply_document = reply.document if reply is not None else None
        request_id = message.id if message is not None else None
        if request_id is None and isinstance(reply_document, Mapping):
            request_id = reply_document.get("id")
        method = message.method if message is not None else None
        tool = None
        if message is not None and method == "tools/call" and params is not None:
            name = params.get("name")
            tool = name if isinstance(name, str) else None
        if tool is None:
            noted = seen.annotations.get("tool")
            tool = noted if isinstance(noted, str) else None
        rejection = draft.rejection
        error: dict[str, Any] | None = None
        applied = False
        if rejection is not None:
            error, applied = self._redacted_error(
                {"code": rejection.error.slug, "message": rejection.error.message, "details": list(rejection.errors)}
            )
            if draft.action == "observed":
                status = "observed"
            elif reply is None:
                status = "dropped"
            else:
                status = "error"
        elif isinstance(reply_document, Mapping) and _is_tool_error(reply_document):
            status = "tool_error"
        else:
            status = "ok"
        trace_id = self._trace(session_id, message, meta, seq)
        document = self._base(seq, when, "frame", session_id)
        document.update(
            {
                "trace_id": trace_id,
                "request_id": request_id,
                "transport": frame.transport,
                "direction": frame.direction.value,
                "kind": message.kind.value if message is not None else None,
                "route": _route(reply, rejection, method),
                "method": method,
                "tool_id": tool,
                "status": status,
                "duration_ms": 0.0 if self.deterministic else round(seconds * 1000, 3),
                "bytes_in": frame.size if frame.size is not None else len(frame.raw),
                "bytes_out": len(reply.to_bytes()) if reply is not None else 0,
                "protocol_version": version,
                "error": error,
                "redaction_applied": applied,
                "policy_violation": bool(rejection is not None and rejection.extra.get("policy_violation")),
                "agent_step": _int_or_none(meta.get("agent_step")),
                "attempt": _int_or_none(meta.get("attempt")),
                "metadata": self._metadata(),
            }
        )
        if draft.action is not None:
            document["action"] = draft.action
        return document

    def _redacted_error(self, error: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
        details = sorted(
            (dict(d) for d in error.get("details", ()) if isinstance(d, Mapping)),
            key=lambda d: (str(d.get("path", "")), str(d.get("msg", ""))),
        )[:_MAX_DETAILS]
        shaped = {"code": error.get("code"), "message": error.get("message"), "details": details}
        if self._redact is None:
            return shaped, False
        redacted, applied = self._redact(shaped)
        return dict(redacted), applied

    def _trace(self, session_id: str, message: Any, meta: Mapping[str, Any], seq: int) -> str:
        """From ``_meta.traceparent`` (W3C) when the sender gave one; a response shares its request's."""
        key = (session_id, message.id) if message is not None and message.id is not None else None
        if message is not None and key is not None and message.kind.value in ("response", "error_response"):
            known = self._open_traces.pop(key, None)
            if known is not None:
                return known
        parent = meta.get("traceparent")
        found = _TRACEPARENT.match(parent) if isinstance(parent, str) else None
        trace = found.group(1) if found else f"{self.run_id}{seq:016x}"
        if message is not None and key is not None and message.kind.value == "request":
            self._open_traces[key] = trace
            if len(self._open_traces) > _OPEN_TRACES:
                self._open_traces.popitem(last=False)
        return trace


_FRAME_DEFAULTS: Mapping[str, Any] = {
    "trace_id": None,
    "request_id": None,
    "transport": None,
    "direction": None,
    "route": None,
    "method": None,
    "tool_id": None,
    "status": "ok",
    "duration_ms": 0.0,
    "bytes_in": 0,
    "bytes_out": 0,
    "protocol_version": None,
    "error": None,
    "redaction_applied": False,
    "policy_violation": False,
    "agent_step": None,
    "attempt": None,
}


def _is_tool_error(document: Mapping[str, Any]) -> bool:
    result = document.get("result")
    return isinstance(result, Mapping) and result.get("isError") is True


def _route(reply: Reply | None, rejection: Rejection | None, method: str | None) -> str | None:
    """Who dealt with the frame: ``relay`` (sent on to the peer), the method's route, or nobody."""
    if reply is not None and reply.to_peer and (rejection is None or reply.document is None):
        return "relay"
    if rejection is not None:
        return None
    return method


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _link_latest(directory: Path, path: Path) -> None:
    """``.latest`` → ``path``, replaced atomically (a reader never sees a missing link)."""
    temporary = directory / f".latest.{os.getpid()}.tmp"
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    temporary.symlink_to(path.name)
    os.replace(temporary, directory / ".latest")


def _keep_newest(directory: Path, keep: int, current: Path) -> None:
    """Remove all but the newest ``keep`` runs (complete or abandoned) of this stream."""
    runs = [p for p in directory.iterdir() if p.name.endswith((".jsonl", ".jsonl.partial")) and p != current]

    def age(path: Path) -> tuple[float, str]:
        with contextlib.suppress(FileNotFoundError):
            return (path.stat().st_mtime, path.name)
        return (0.0, path.name)

    for stale in sorted(runs, key=age, reverse=True)[max(keep - 1, 0) :]:
        with contextlib.suppress(FileNotFoundError):
            stale.unlink()


# -- stderr ---------------------------------------------------------------------------------

_QUIET_STATUSES = frozenset({"ok", "tool_error"})


def stderr_sink(*, format: str, every_event: bool, stream: TextIO | None = None) -> Sink:
    """Events on stderr: one human-readable line each (or the JSON); by default only failures,
    violations, policy denials, start and stop, so a healthy run stays quiet."""

    def write(event: Mapping[str, Any]) -> None:
        if not every_event and event["event"] == "frame" and event["status"] in _QUIET_STATUSES:
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


def read_events(path: Path) -> Iterator[dict[str, Any]]:
    """The events of a JSONL log file, in order."""
    with path.open("rb") as lines:
        for line in lines:
            if line.strip():
                yield jsonio.loads(line)
