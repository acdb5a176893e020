"""The structured event log: one JSON event per frame and direction, and per start, stop, violation
and policy decision, written as JSONL under ``runs/mcp_server/<stream>/`` and to stderr.

The log observes: once a frame is answered, the boundary hands it one tuple of the values the
caller holds (``PASSED_ROW``), and nothing else happens on the request path. Each batch of rows
crosses a pipe as one JSON line to a writer process that derives and writes the events
(``writer.py``); a loop timer sends what a trickle leaves. A full pipe makes the producer wait
(backpressure): no event is ever dropped. With the log off nothing is built at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from time import perf_counter
from typing import Any

from ..core import jsonio
from ..core.errors import Rejection
from ..core.files import PRIVATE
from ..core.session import Session
from ..core.types import CLIENT_TO_SERVER, Frame, Message, Reply
from ..execution.redaction import Redactor
from .stderr import Sink, feed, stderr_sink
from .tracing import Span
from .writer import FRAME_ROW, PASSED_ROW, EventFormatter, FileWriter, Rotation, keep_newest, link_latest, pack_rows

__all__ = [
    "FRAME_ROW",
    "PASSED_ROW",
    "VOLATILE_FIELDS",
    "EventLog",
    "EventLogSettings",
    "read_events",
]

VOLATILE_FIELDS = ("ts", "duration_ms", "trace_id", "run_id")
"""What differs between two runs over the same input when the run is not deterministic."""

_UNREAD = (None,) * len(Message._fields)  # a frame passed on unread: nothing is known of it but its bytes

_BATCH = 256  # rows sent to the writer together
_WRITER_PERIOD = 0.05  # seconds: how stale the file may be under a trickle of events
_PIPE_BYTES = 1 << 20  # the pipe to the writer process holds this much (where the system allows)
_WRITER_EXIT_SECONDS = 60.0  # the writer process finishes what the pipe still holds


@dataclass(frozen=True, slots=True, kw_only=True)
class EventLogSettings:
    runs_dir: Path = Path("runs")
    stream: str = "serve"
    keep: int = 20  # runs of the stream kept
    deterministic: bool = False
    seed: str = "mcp-server"
    max_bytes: int = 64 << 20  # a run's file rotates once it passes this size
    keep_files: int = 10  # rotated files of a run kept (the oldest go first)


class EventLog:
    """One run's events, in the order they happened, never dropped.

    Producers run on one thread (the event loop's, or the only one): ``frame`` and ``emit`` append
    a row; a full batch, or the loop timer a batch's first row sets, sends the rows to the writer.
    Should the writer process die, this process formats and writes the rest itself.
    """

    def __init__(self, settings: EventLogSettings, *, sinks: Sequence[Sink] = ()) -> None:
        self.settings = settings
        self.deterministic = settings.deterministic
        self.run_id = self._derive("run") if self.deterministic else secrets.token_hex(8)
        self._sessions = 0
        self._rows: list[tuple[Any, ...]] = []
        self._count: Callable[[tuple[Any, ...]], None] | None = None
        self._sinks: list[Sink] = list(sinks)  # this process's own sinks, fed as rows are sent
        self._stderr: Sink | None = None
        self._stderr_options: dict[str, Any] | None = None
        self._redactor: Redactor | None = None
        stamp = "19700101T000000Z" if self.deterministic else datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        self.directory = settings.runs_dir / "mcp_server" / settings.stream
        self.path = self.directory / f"{stamp}-{self.run_id}.jsonl"
        self._partial = self.path.with_name(self.path.name + ".partial")
        self._writer: subprocess.Popen[bytes] | None = None
        self._fallback: FileWriter | None = None
        self._formatter = EventFormatter(self.run_id, self.deterministic)  # for this process's sinks
        self._timer: asyncio.TimerHandle | None = None

    # -- set-up ---------------------------------------------------------------------------

    def count_with(self, count: Callable[[tuple[Any, ...]], None]) -> None:
        """Hand every row (``PASSED_ROW``, ``FRAME_ROW`` or an emitted one) to ``count`` as its batch
        is sent (metrics: plain arithmetic on this thread, never in the per-frame call)."""
        self._count = count

    def set_stderr(self, *, format: str, every_event: bool) -> None:
        """Events on stderr, written by the writer process (before ``open``)."""
        self._stderr = stderr_sink(format=format, every_event=every_event)
        self._stderr_options = {"format": format, "every_event": every_event}

    def set_redactor(self, redactor: Redactor) -> None:
        """The policy's redaction, applied to what an event carries of the traffic (error details)."""
        self._redactor = redactor
        self._formatter.redact = redactor.redact_record

    def open(self) -> EventLog:
        """Create the run's file (as ``.partial`` until it is complete) and start the writer."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self._partial.touch(mode=PRIVATE)  # the log quotes the traffic: its owner's only
        config = {
            "partial": str(self._partial),
            "max_bytes": self.settings.max_bytes,
            "keep_files": self.settings.keep_files,
            "run_id": self.run_id,
            "deterministic": self.deterministic,
            "stderr": self._stderr_options,
            "redaction": None if self._redactor is None else self._redactor.spec(),
        }
        self._writer = subprocess.Popen(
            [sys.executable, "-m", "mcp_server.observe.writer_process", jsonio.dumps(config).decode()],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            close_fds=True,
        )
        assert self._writer.stdin is not None
        with contextlib.suppress(OSError, AttributeError):  # Linux only; the default size works too
            fcntl.fcntl(self._writer.stdin.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        return self

    def close(self) -> Path:
        """Write what is queued, complete the file, point ``.latest`` at it, and keep the newest runs."""
        self._send()
        if self._writer is not None:
            with contextlib.suppress(BrokenPipeError, OSError):
                assert self._writer.stdin is not None
                self._writer.stdin.close()
            try:
                self._writer.wait(_WRITER_EXIT_SECONDS)
            except subprocess.TimeoutExpired:
                self._writer.kill()
                self._writer.wait()
            self._writer = None
        if self._fallback is not None:
            self._fallback.close()
            self._fallback = None
        if self._partial.exists():
            os.replace(self._partial, self.path)
            link_latest(self.directory, self.path)
            keep_newest(self.directory, self.settings.keep, self.path)
        return self.path

    def session_id(self, session: Session) -> str:
        """A session's id in the log: its own, or in a deterministic run one derived from its order."""
        if session.log_id is None:
            self._sessions += 1
            session.log_id = self._derive(f"session:{self._sessions}") if self.deterministic else session.id
        return session.log_id

    def _derive(self, what: str) -> str:
        return hashlib.sha256(f"{self.settings.seed}:{what}".encode()).hexdigest()[:16]

    # -- producers --------------------------------------------------------------------------

    def frame(
        self,
        frame: Frame,
        message: Message | None,
        reply: Reply | None,
        began: float,
        route: str | None = None,
        span: Span | None = None,
    ) -> None:
        """A frame the chain passed: its row (``PASSED_ROW``), once it has its reply (``None``: the
        frame went on unanswered). ``route`` is the method that served it, or ``"relay"``; ``span``
        the gateway's span of the call it forwarded. It runs once per frame on the request path: a
        clock reading and one tuple of what the caller holds; the writer process derives the rest."""
        end = perf_counter()
        raw, transport, session, size, direction, _ = frame
        kind, request_id, method, params, version, tool, _ = message or _UNREAD
        rows = self._rows
        rows.append(
            (
                end,
                began,
                session.log_id or self.session_id(session),
                request_id,
                transport,
                direction,
                kind,
                route,
                method,
                tool,
                len(raw) if size is None else size,
                version or session.version,
                None if params is None else params.get("_meta"),
                None if reply is None else _answered(reply),
                None if span is None else (span.trace_id, span.span_id, span.parent_span_id),
            )
        )
        if len(rows) >= _BATCH:
            self._send()
        elif self._timer is None:
            self._send_soon()

    def refused(
        self,
        frame: Frame,
        rejection: Rejection,
        reply: Reply | None,
        began: float,
        action: str | None = None,
        span: Span | None = None,
    ) -> None:
        """A frame the chain refused (``action``: what a gateway did about it; ``span``: its span,
        when it went on all the same), with its policy
        decision first as an event of its own when the policy refused it and nobody told it yet."""
        end = perf_counter()
        session = frame.session
        message = rejection.message
        kind = request_id = method = tool = version = meta = None
        if message is not None:
            kind, request_id, method, params, version, tool, _ = message
            meta = params.get("_meta") if type(params) is dict else None
            meta = meta if type(meta) is dict else None
        denied = bool(rejection.extra.get("policy_violation"))
        if denied and not rejection.decision_logged:
            self.emit(
                "policy",
                session=session,
                request_id=request_id,
                method=method,
                tool_id=tool,
                status="denied",
                policy_violation=True,
                error=rejection.summary(),
            )
        observed = action == "observed"  # passed on as it came
        status = "observed" if observed else "dropped" if reply is None else "error"
        size = len(frame.raw) if frame.size is None else frame.size
        self._put(
            (
                end,
                self.session_id(session),
                request_id if request_id is not None or reply is None else _reply_id(reply),
                frame.transport,
                frame.direction,
                kind,
                "relay" if observed else None,
                method,
                tool,
                status,
                end - began,
                size,
                size if observed else 0 if reply is None else len(reply.to_bytes()),
                version or session.version,
                (rejection.error.name, rejection.errors, denied),
                meta,
                action,
                None if reply is None else "error_response" if reply.error is not None else "response",
                None if span is None else (span.trace_id, span.span_id, span.parent_span_id),
            )
        )

    def http_refusal(self, rejection: Rejection, body: bytes) -> None:
        """A request the HTTP transport refused itself, before any chain saw it: a frame of its own."""
        self.emit(
            "frame",
            transport="http",
            direction=CLIENT_TO_SERVER.value,
            status="error",
            bytes_out=len(body),
            error=rejection.summary(),
        )

    def emit(self, event: str, *, session: Session | None = None, **fields: Any) -> None:
        """A non-frame event: ``start``, ``stop``, ``violation``, ``policy``, ``execution``, ``upstream``."""
        session_id = None if session is None else self.session_id(session)
        self._put((perf_counter(), event, session_id, fields))

    def _put(self, row: tuple[Any, ...]) -> None:
        rows = self._rows
        rows.append(row)
        if len(rows) >= _BATCH:
            self._send()
        elif len(rows) == 1:
            self._send_soon()

    def _send_soon(self) -> None:
        """A trickle: the rows go within ``_WRITER_PERIOD``. Without a running loop here (start-up,
        shut-down: no frame waits) a row goes at once."""
        if self._timer is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._send()
            return
        self._timer = loop.call_later(_WRITER_PERIOD, self._send)

    def _send(self) -> None:
        """Everything queued, in order, with the offset from ``perf_counter`` (the rows' clock) to the
        wall clock, taken now: the rows are this fresh."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        rows, self._rows = self._rows, []
        if not rows:
            return
        if self._count is not None:
            count = self._count
            for row in rows:
                count(row)
        anchor = time.time() - perf_counter()
        if self._sinks:
            for event in self._formatter.batch(anchor, rows):
                for sink in self._sinks:
                    feed(sink, event)
        if self._fallback is None:
            try:
                assert self._writer is not None and self._writer.stdin is not None
                self._writer.stdin.write(pack_rows(anchor, rows))
                self._writer.stdin.flush()
                return
            except (AssertionError, BrokenPipeError, OSError, ValueError):
                sys.stderr.write("mcp:error reason=log_writer_died detail=this process writes the event log now\n")
                rotation = Rotation(self._partial, self.settings.max_bytes, self.settings.keep_files)
                self._fallback = FileWriter(rotation, EventFormatter(self.run_id, self.deterministic), self._stderr)
                if self._redactor is not None:
                    self._fallback.formatter.redact = self._redactor.redact_record
        self._fallback.write(anchor, rows)


def _answered(reply: Reply) -> tuple[int, str]:
    """What a passed frame's row keeps of the reply it earned: its size, and the frame's status by
    it (``tool_error`` when the result says ``isError``); the reply itself is not kept."""
    document = reply.document
    result = document.get("result") if document is not None else None
    return len(reply.to_bytes()), "tool_error" if type(result) is dict and result.get("isError") is True else "ok"


def _reply_id(reply: Reply) -> Any:
    document = reply.document
    return document.get("id") if document is not None else None


def read_events(path: Path) -> Iterator[dict[str, Any]]:
    """The events of a JSONL log file, in order."""
    with path.open("rb") as lines:
        for line in lines:
            if line.strip():
                yield jsonio.loads(line)
