"""The structured event log: one JSON event per frame and direction, and per start, stop, violation
and policy decision, written as JSONL under ``runs/mcp_server/<stream>/`` and to stderr.

The chain pays for an event with a row of plain values appended to a queue (for a frame, both are
made in C: ``_rows.c``); a writer process numbers the rows, turns them into events and writes them
(see ``EventLog``). The queue is bounded: past its limit the chain waits for the writer
(backpressure), and no event is ever dropped.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from time import perf_counter
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from .._rows import ACTION, FRAME_ROW, REJECTION, SEEN, RowQueue
from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..execution.redaction import Redactor

if TYPE_CHECKING:
    from .metrics import Metrics
from ..chain.stage import CheckStage
from ..core.types import Frame, Reply, Session

__all__ = [
    "FRAME_ROW",
    "LOG_SCHEMA_VERSION",
    "VOLATILE_FIELDS",
    "Draft",
    "EventLog",
    "EventLogSettings",
    "Rotation",
    "Sink",
    "capture_stage",
    "note_rejection",
    "run_writer",
]

LOG_SCHEMA_VERSION = "1.0"
"""The version of the event format itself (``metadata.schemaVersion``; ``schemas/log-event.schema.json``)."""

VOLATILE_FIELDS = ("ts", "duration_ms", "trace_id", "run_id")
"""What differs between two runs over the same input when the run is not deterministic."""

FIXED_TS = "1970-01-01T00:00:00.000Z"
_MAX_DETAILS = 20
_BATCH = 256  # events sent to the writer together, by the producer, before the timer would
_QUEUE_LIMIT = 65_536  # events held at most before the chain waits for the writer
_WRITER_PERIOD = 0.05  # seconds: how stale the file may be under a trickle of events
_WRITER_NICENESS = 5  # the writer process yields the cores to the process it logs for
_PIPE_BYTES = 1 << 20  # the pipe to the writer process holds this much (where the system allows)
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")
_OPEN_TRACES = 10_000  # requests whose trace id waits for the response, at most
EMITTED_ROW = 4  # (when, event, session_id, fields): the shape of a row ``emit`` queues
# FRAME_ROW, from ``_rows``: the names of a frame's row's values (``EventLog.frame``), in order.
_WRITER_EXIT_SECONDS = 60.0  # the writer process finishes what the pipe still holds

Sink = Callable[[Mapping[str, Any]], None]
"""Receives every finished event: stderr (in the writer process), or a sink of this process."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EventLogSettings:
    runs_dir: Path = Path("runs")
    stream: str = "serve"
    keep: int = 20  # runs of the stream kept
    deterministic: bool = False
    seed: str = "mcp-server"
    max_bytes: int = 64 << 20  # a run's file rotates once it passes this size
    keep_files: int = 10  # rotated files of a run kept (the oldest go first)


@dataclass(frozen=True, slots=True)
class Rotation:
    """Where a run's log goes: the file being written (``….jsonl.partial``) until it passes
    ``max_bytes``; then it becomes ``<stem>.<n>.jsonl`` (n = 1, 2, …) and a new one starts. Only
    the newest ``keep`` rotated files stay. The run's last file becomes ``<stem>.jsonl`` at its end."""

    partial: Path
    max_bytes: int
    keep: int

    def rotated(self, number: int) -> Path:
        stem = self.partial.name.removesuffix(".jsonl.partial")
        return self.partial.with_name(f"{stem}.{number}.jsonl")


Draft = list[Any]
"""What the chain learns about one frame while it passes: filled by the stages, read once by
``EventLog.frame``. A list indexed by ``SEEN`` (the classified frame), ``REJECTION`` (why it was
refused), ``ACTION`` (what a gateway did about it) and ``BEGAN`` (when it came in). The error
boundary gives each frame its own (``EventLog.begin``); the frame carries it (``Frame.draft``), and
so does every frame a stage makes of it, so a stage finds it on the frame at hand."""


def note_rejection(frame: Frame, rejection: Rejection, action: str | None = None) -> None:
    """Tell ``frame``'s event why the frame was refused (and, in a gateway, what was done about it)."""
    draft = frame.draft
    if draft is not None:
        draft[REJECTION] = rejection
        if rejection.frame is not None:
            draft[SEEN] = rejection.frame
        if action is not None:  # the boundary rendering a gateway's enforced rejection keeps its action
            draft[ACTION] = action


def _capture(frame: Frame) -> Frame:
    draft = frame.draft
    if draft is not None:
        draft[SEEN] = frame
    return frame


def capture_stage() -> CheckStage:
    """After the schema check: the classified frame, for its event (a no-op without a log)."""
    return CheckStage(_capture)


class EventLog:
    """One run's events, numbered in the chain's order and never dropped.

    The chain appends a row of plain values to a queue; each full batch of rows goes, as one JSON
    line, through a pipe to a writer process (``python -m mcp_server.event_writer``) that makes the
    events, writes the file and the stderr lines: the formatting runs on another core. A timer
    thread sends what a trickle leaves queued. A full pipe makes the sender wait, and past
    ``_QUEUE_LIMIT`` queued rows the chain waits for the writer (backpressure). Should the writer
    process die, this process formats and writes the rest itself.
    """

    def __init__(self, settings: EventLogSettings, *, sinks: Sequence[Sink] = ()) -> None:
        self.settings = settings
        self.deterministic = settings.deterministic
        self.run_id = self._derive("run") if self.deterministic else secrets.token_hex(8)
        self._sent = 0  # rows sent: each is numbered by its place in the queue, so the order is the chain's
        self._sessions = 0
        self._rows = RowQueue(batch=_BATCH, full=self._full, session_id=self.session_id, refused=self._refused)
        self.begin: Callable[[Frame], Frame] = self._rows.begin
        """The frame as the chain takes it: the same, with a new draft whose start is now."""
        self.frame: Callable[[Frame, Reply | None], None] = self._rows.frame
        """Queue one frame's event: ``frame(frame, reply)``, with the frame ``begin`` gave, once it
        has its reply.

        The row (``FRAME_ROW``) is plain values read off the frame as it came in, the frame the
        stages classified (``draft[SEEN]``) and the reply; of the frame itself only its ``_meta``
        object, when it has one, waits in the queue (the writer reads the trace and agent step
        from it). The frame took from ``draft[BEGAN]`` until now. Made in C (``_rows.c``): it runs
        once per frame on the chain's path. A refused frame's outcome comes from ``_refused``."""
        self._closing = threading.Event()
        self._sending = threading.Lock()  # one sender at a time: batches reach the writer in order
        self._sinks: list[Sink] = list(sinks)  # this process's own sinks, fed as rows are sent
        self._stderr: Sink | None = None
        self._stderr_options: dict[str, Any] | None = None
        self._redactor: Redactor | None = None
        stamp = "19700101T000000Z" if self.deterministic else datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        self.directory = settings.runs_dir / "mcp_server" / settings.stream
        self.path = self.directory / f"{stamp}-{self.run_id}.jsonl"
        self._partial = self.path.with_name(self.path.name + ".partial")
        self._writer: subprocess.Popen[bytes] | None = None
        self._fallback: _FileWriter | None = None
        self._formatter = EventFormatter(self.run_id, self.deterministic)
        self._thread = threading.Thread(target=self._tick, name="mcp-events", daemon=True)

    # -- set-up ---------------------------------------------------------------------------

    def count_with(self, metrics: Metrics) -> None:
        """Count every row in ``metrics`` as it is queued (plain arithmetic on this thread)."""
        self._rows.count = metrics.count

    def set_stderr(self, *, format: str, every_event: bool) -> None:
        """Events on stderr, written by the writer process (before ``open``)."""
        self._stderr = stderr_sink(format=format, every_event=every_event)
        self._stderr_options = {"format": format, "every_event": every_event}

    def set_redactor(self, redactor: Redactor) -> None:
        """The policy's redaction, applied to what an event carries of the traffic (error details)."""
        self._redactor = redactor
        self._formatter.redact = redactor.redact

    def open(self) -> EventLog:
        """Create the run's file (as ``.partial`` until it is complete) and start the writer."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self._partial.touch()
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
            [sys.executable, "-m", "mcp_server.observe.event_writer", jsonio.dumps(config).decode()],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            close_fds=True,
        )
        assert self._writer.stdin is not None
        with contextlib.suppress(OSError, AttributeError):  # Linux only; the default size works too
            fcntl.fcntl(self._writer.stdin.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        self._thread.start()
        return self

    def close(self) -> Path:
        """Write what is queued, complete the file, point ``.latest`` at it, and keep the newest runs."""
        self._closing.set()
        if self._thread.is_alive():
            self._thread.join()
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
            _link_latest(self.directory, self.path)
            _keep_newest(self.directory, self.settings.keep, self.path)
        return self.path

    def _rotation(self) -> Rotation:
        return Rotation(self._partial, self.settings.max_bytes, self.settings.keep_files)

    def session_id(self, session: Session) -> str:
        """A session's id in the log: its own, or in a deterministic run one derived from its order."""
        if session.log_id is None:
            self._sessions += 1
            session.log_id = self._derive(f"session:{self._sessions}") if self.deterministic else session.id
        return session.log_id

    def _derive(self, what: str) -> str:
        return hashlib.sha256(f"{self.settings.seed}:{what}".encode()).hexdigest()[:16]

    # -- producers (the event loop's thread) ------------------------------------------------

    def _refused(
        self,
        session: Session,
        draft: Draft,
        rejection: Rejection,
        reply: Reply | None,
        request_id: Any,
        method: str | None,
        tool: Any,
    ) -> tuple[str, str | None, tuple[str, Any, bool]]:
        """A refused frame's status, route and error (and its policy event, first, when the policy refused it)."""
        denied = bool(rejection.extra.get("policy_violation"))
        if denied and not rejection.decision_logged:  # a policy decision is an event of its own, before the frame's
            self.emit(
                "policy",
                session=session,
                request_id=request_id,
                method=method,
                tool_id=tool if type(tool) is str else None,
                status="denied",
                policy_violation=True,
                error=rejection.summary(),
            )
        action = draft[ACTION]
        status = "observed" if action == "observed" else "dropped" if reply is None else "error"
        route = "relay" if reply is not None and reply.to_peer and reply.document is None else None
        return status, route, (rejection.error.name, rejection.errors, denied)

    def emit(self, event: str, *, session: Session | None = None, **fields: Any) -> None:
        """A non-frame event: ``start``, ``stop``, ``violation``, ``policy``, ``execution``, ``upstream``."""
        session_id = None if session is None else self.session_id(session)
        self._rows.put((perf_counter(), event, session_id, fields))

    def _full(self) -> None:
        """A batch is queued (the queue calls this as it takes a row): send it, unless the timer is.

        The producer sends: a thread woken per batch would fight the chain for the interpreter
        lock, which costs the chain more than the send itself (one C call and one write per batch).
        """
        if len(self._rows) >= _QUEUE_LIMIT:
            with self._sending:  # backpressure: wait for the writer rather than drop
                self._send_queued()
        elif self._sending.acquire(blocking=False):
            try:
                self._send_queued()
            finally:
                self._sending.release()

    # -- the timer thread ------------------------------------------------------------------

    def _tick(self) -> None:
        """Sends what a trickle of events left queued, every ``_WRITER_PERIOD``; the rest at close."""
        while not self._closing.wait(_WRITER_PERIOD):
            if len(self._rows):
                with self._sending:
                    self._send_queued()
        with self._sending:
            self._send_queued()

    def _send_queued(self) -> None:
        """Everything queued, in order, a batch at a time (the caller holds ``_sending``).

        Each batch carries the number of its first row and the offset from ``perf_counter`` (the
        rows' clock, one call per row) to the wall clock, taken now: the rows are this fresh."""
        take = self._rows.take
        while rows := take(_BATCH):
            first, self._sent = self._sent + 1, self._sent + len(rows)
            anchor = time.time() - perf_counter()
            if self._sinks:
                for event in self._formatter.batch(first, anchor, rows):
                    for sink in self._sinks:
                        _feed(sink, event)
            self._send(first, anchor, rows)

    def _send(self, first: int, anchor: float, rows: list[tuple[Any, ...]]) -> None:
        if self._fallback is None:
            assert self._writer is not None and self._writer.stdin is not None
            try:
                self._writer.stdin.write(pack_rows(first, anchor, rows))
                self._writer.stdin.flush()
                return
            except (BrokenPipeError, OSError, ValueError):
                sys.stderr.write("mcp:error reason=log_writer_died detail=this process writes the event log now\n")
                self._fallback = _FileWriter(self._rotation(), self._formatter, self._stderr)
        self._fallback.write(first, anchor, rows)


class EventFormatter:
    """Rows (plain values from the producer) → events. Pure but for its trace and clock caches."""

    def __init__(self, run_id: str, deterministic: bool) -> None:
        self.run_id = run_id
        self.deterministic = deterministic
        self.redact: Callable[[Any], tuple[Any, bool]] | None = None
        self._metadata = {"schemaVersion": LOG_SCHEMA_VERSION, "deterministic": deterministic}
        self._open_traces: OrderedDict[tuple[str, Any], str] = OrderedDict()
        self._ts_millis = -1  # the millisecond of the last ``ts``, and that ``ts``: many events share one
        self._ts_last = FIXED_TS
        self._ts_second = -1
        self._ts_prefix = ""

    def _ts(self, when: float) -> str:
        """ISO-8601 UTC with milliseconds; the part up to the second is formatted once a second."""
        if self.deterministic:
            return FIXED_TS
        millis = int(when * 1000)
        if millis != self._ts_millis:
            self._ts_millis = millis
            second = millis // 1000
            if second != self._ts_second:
                self._ts_second = second
                self._ts_prefix = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S.")
            self._ts_last = f"{self._ts_prefix}{millis - second * 1000:03d}Z"
        return self._ts_last

    def _trace(self, session_id: str, kind: str | None, request_id: Any, parent: str | None, seq: int) -> str:
        """From ``_meta.traceparent`` (W3C) when the sender gave one; a response shares its request's."""
        key = (session_id, request_id)
        if request_id is not None and (kind == "response" or kind == "error_response"):
            known = self._open_traces.pop(key, None)
            if known is not None:
                return known
        found = _TRACEPARENT.match(parent) if parent is not None else None
        trace = found.group(1) if found else f"{self.run_id}{seq:016x}"
        if request_id is not None and kind == "request":
            self._open_traces[key] = trace
            if len(self._open_traces) > _OPEN_TRACES:
                self._open_traces.popitem(last=False)
        return trace

    def batch(self, first: int, anchor: float, rows: Sequence[Sequence[Any]]) -> Iterator[dict[str, Any]]:
        """The events of a batch of rows numbered from ``first``; a row's clock + ``anchor`` = wall clock."""
        build = self.build
        for seq, row in enumerate(rows, first):
            yield build(seq, anchor, row)

    def build(self, seq: int, anchor: float, row: Sequence[Any]) -> dict[str, Any]:
        if len(row) == EMITTED_ROW:  # an event given by its fields (a frame refused before the chain, too)
            when, event, session_id, fields = row
            document = {"ts": self._ts(when + anchor), "run_id": self.run_id, "seq": seq, "event": event}
            document["session_id"] = session_id
            document.update(_FRAME_DEFAULTS)
            document.update(fields)
            if fields.get("error") is not None:
                document["error"], applied = self._error(fields["error"])
                document["redaction_applied"] = bool(document.get("redaction_applied")) or applied
            document["metadata"] = self._metadata
            return document
        (
            when,
            session_id,
            request_id,
            transport,
            direction,
            kind,
            route,
            method,
            tool,
            status,
            seconds,
            bytes_in,
            bytes_out,
            version,
            error,
            meta,
            action,
        ) = row
        traceparent = step = attempt = None
        if meta is not None:  # what the sender says of its trace and its agent's step
            traceparent, step, attempt = meta.get("traceparent"), meta.get("agent_step"), meta.get("attempt")
            traceparent = traceparent if type(traceparent) is str else None
            step = step if type(step) is int else None
            attempt = attempt if type(attempt) is int else None
        applied = violation = False
        if error is not None:
            name, details, violation = error
            member = CanonicalError[name]
            error, applied = self._error({"code": member.slug, "message": member.message, "details": details})
        document = {
            "ts": self._ts(when + anchor),
            "run_id": self.run_id,
            "seq": seq,
            "event": "frame",
            "session_id": session_id,
            "trace_id": self._trace(session_id, kind, request_id, traceparent, seq),
            "request_id": request_id,
            "transport": transport,
            "direction": direction,
            "kind": kind,
            "route": route,
            "method": method,
            "tool_id": tool,
            "status": status,
            "duration_ms": 0.0 if self.deterministic else round(seconds * 1e6) / 1000,  # to the microsecond
            "bytes_in": bytes_in,
            "bytes_out": bytes_out,
            "protocol_version": version,
            "error": error,
            "redaction_applied": applied,
            "policy_violation": violation,
            "agent_step": step,
            "attempt": attempt,
        }
        if action is not None:
            document["action"] = action
        document["metadata"] = self._metadata
        return document

    def _error(self, error: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
        details = sorted(
            (dict(d) for d in error.get("details", ()) if isinstance(d, Mapping)),
            key=lambda d: (str(d.get("path", "")), str(d.get("msg", ""))),
        )[:_MAX_DETAILS]
        shaped = {"code": error.get("code"), "message": error.get("message"), "details": details}
        if self.redact is None:
            return shaped, False
        redacted, applied = self.redact(shaped)
        return dict(redacted), applied


class _FileWriter:
    """Rows → JSONL lines in the run's file (and the stderr sink), rotated by size: the writer's one loop."""

    def __init__(self, rotation: Rotation, formatter: EventFormatter, stderr: Sink | None) -> None:
        self.rotation = rotation
        self.file = rotation.partial.open("ab")  # after what the writer process wrote, if it came first
        self.written = self.file.tell()
        stem = rotation.partial.name.removesuffix(".jsonl.partial")
        numbers = [int(p.name.split(".")[-2]) for p in rotation.partial.parent.glob(f"{stem}.*.jsonl")]
        self.number = max(numbers, default=0)  # the last rotated file's number (a fallback writer goes on)
        self.formatter = formatter
        self.stderr = stderr

    def write(self, first: int, anchor: float, rows: Sequence[Sequence[Any]]) -> None:
        # Each line is copied out as soon as it is made: holding a batch of lines (each over
        # pymalloc's small-object size) costs the allocator more than making them.
        lines = bytearray()
        stderr = self.stderr
        for event in self.formatter.batch(first, anchor, rows):
            lines += jsonio.dumps_line(event)
            if stderr is not None:
                _feed(stderr, event)
        if lines:
            self.file.write(lines)
            self.file.flush()
            self.written += len(lines)
            if self.written >= self.rotation.max_bytes:  # between batches: a file holds whole events
                self._rotate()

    def _rotate(self) -> None:
        self.file.close()
        self.number += 1
        os.replace(self.rotation.partial, self.rotation.rotated(self.number))
        stale = self.number - self.rotation.keep
        if stale > 0:
            with contextlib.suppress(FileNotFoundError):
                self.rotation.rotated(stale).unlink()
        self.file = self.rotation.partial.open("ab")
        self.written = 0

    def close(self) -> None:
        self.file.close()


def _feed(sink: Sink, event: Mapping[str, Any]) -> None:
    try:
        sink(event)
    except Exception as exc:  # a sink must never stop the log
        sys.stderr.write(f"mcp:error reason=log_sink_failed detail={type(exc).__name__}: {exc}\n")


def run_writer(config: Mapping[str, Any]) -> int:
    """The writer process: batches of rows on stdin until end of input; then the file is complete."""
    for signum in (signal.SIGINT, signal.SIGTERM):  # the parent decides when the log ends: at EOF
        signal.signal(signum, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.nice(_WRITER_NICENESS)  # background work: the traffic's process comes first on a busy machine
    options = config.get("stderr")
    stderr = None if options is None else stderr_sink(format=options["format"], every_event=options["every_event"])
    formatter = EventFormatter(config["run_id"], config["deterministic"])
    if config.get("redaction") is not None:
        formatter.redact = Redactor.build(**config["redaction"]).redact
    writer = _FileWriter(
        Rotation(Path(config["partial"]), config["max_bytes"], config["keep_files"]), formatter, stderr
    )
    source = sys.stdin.buffer
    while batch := unpack_rows(source):  # each batch is written as soon as it arrives
        writer.write(*batch)
    writer.close()
    return 0


def pack_rows(first: int, anchor: float, rows: list[tuple[Any, ...]]) -> bytes:
    """A batch of rows for the writer process (see ``EventLog._send_queued``): one JSON line of the
    number of its first row, its clock's anchor and the rows. One C call for the whole batch (a line
    per event costs the producer's process ten times more); a float's shortest form reads back
    exactly, and the rows' values are what a JSON document or the log's own fields hold."""
    return jsonio.dumps_line((first, anchor, rows))


def unpack_rows(source: BinaryIO) -> tuple[int, float, list[Sequence[Any]]] | None:
    """The next batch ``pack_rows`` wrote to ``source``; ``None`` at its end (a cut-off batch included)."""
    line = source.readline()
    if not line.endswith(b"\n"):
        return None
    first, anchor, rows = jsonio.loads(line)
    return first, anchor, rows


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


def _link_latest(directory: Path, path: Path) -> None:
    """``.latest`` → ``path``, replaced atomically (a reader never sees a missing link)."""
    temporary = directory / f".latest.{os.getpid()}.tmp"
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    temporary.symlink_to(path.name)
    os.replace(temporary, directory / ".latest")


def _keep_newest(directory: Path, keep: int, current: Path) -> None:
    """Remove all but the newest ``keep`` runs (complete or abandoned) of this stream, each with its
    rotated files."""
    runs: dict[str, list[Path]] = {}
    for path in directory.iterdir():
        if path.name.endswith((".jsonl", ".jsonl.partial")) and not path.name.startswith("."):
            runs.setdefault(path.name.split(".", 1)[0], []).append(path)
    runs.pop(current.name.split(".", 1)[0], None)

    def age(files: list[Path]) -> tuple[float, str]:
        newest = (0.0, "")
        for path in files:
            with contextlib.suppress(FileNotFoundError):
                newest = max(newest, (path.stat().st_mtime, path.name))
        return newest

    for stem in sorted(runs, key=lambda stem: age(runs[stem]), reverse=True)[max(keep - 1, 0) :]:
        for stale in runs[stem]:
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()


# -- stderr ---------------------------------------------------------------------------------

_QUIET_STATUSES = frozenset({"ok", "tool_error"})


def stderr_sink(*, format: str, every_event: bool, stream: TextIO | None = None) -> Sink:
    """Events on stderr: one human-readable line each (or the JSON); by default only failures,
    violations, policy denials, start and stop, so a healthy run stays quiet."""

    def write(event: Mapping[str, Any]) -> None:
        if not every_event and event["event"] in ("frame", "execution") and event["status"] in _QUIET_STATUSES:
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
