"""The event log's writer: rows in, events out, as JSON Lines in the run's file (and on stderr).

It runs in a process of its own (``python -m mcp_server.observe.event_writer``) fed batches of rows
through a pipe, or, should that process die, in the producer's. No part of it runs per frame on the
request path.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from ..core import jsonio
from ..core.errors import CanonicalError
from ..execution.redaction import Redactor
from .stderr import Sink, feed, stderr_sink

__all__ = [
    "EMITTED_ROW",
    "FIXED_TS",
    "LOG_SCHEMA_VERSION",
    "EventFormatter",
    "FileWriter",
    "Rotation",
    "keep_newest",
    "link_latest",
    "pack_rows",
    "run_writer",
    "unpack_rows",
]

LOG_SCHEMA_VERSION = "1.0"
"""The version of the event format itself (``metadata.schemaVersion``; ``schemas/log-event.schema.json``)."""

FIXED_TS = "1970-01-01T00:00:00.000Z"
_MAX_DETAILS = 20
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")
_OPEN_TRACES = 10_000  # requests whose trace id waits for the response, at most
_WRITER_NICENESS = 5  # the writer process yields the cores to the process it logs for
EMITTED_ROW = 4  # (when, event, session_id, fields): the shape of a row ``emit`` queues
ROW_REPLY_KIND = 17  # where a frame row names the reply it earned where it arrived (events.FRAME_ROW)


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


class EventFormatter:
    """Rows (plain values from the producer) → events. Pure but for its trace and clock caches."""

    def __init__(self, run_id: str, deterministic: bool) -> None:
        self.run_id = run_id
        self.deterministic = deterministic
        self.redact: Callable[[Any], tuple[Any, bool]] | None = None
        self._metadata = {"schemaVersion": LOG_SCHEMA_VERSION, "deterministic": deterministic}
        self.seq = 0  # the number of the last event made
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

    def batch(self, anchor: float, rows: Sequence[Sequence[Any]]) -> Iterator[dict[str, Any]]:
        """The events of a batch of rows, numbered on from the last; a row's clock + ``anchor`` = wall clock.

        A frame answered where it arrived (a server's reply, a gateway's own answer) is a row that
        names the reply's kind: the reply is a frame of its own, the next event, in the other direction."""
        build = self.build
        for row in rows:
            self.seq += 1
            event = build(self.seq, anchor, row)
            if len(row) == EMITTED_ROW or row[ROW_REPLY_KIND] is None:
                yield event
                continue
            self.seq += 1
            reply = self._reply(self.seq, event, row[ROW_REPLY_KIND])
            yield event
            yield reply

    def _reply(self, seq: int, request: dict[str, Any], kind: str) -> dict[str, Any]:
        """The event of the reply a frame earned, from the frame's own (same trace, request id and
        route); the frame's own event keeps only the bytes it came with."""
        reply = dict(request)
        reply["seq"] = seq
        reply["direction"] = "server_to_client" if request["direction"] == "client_to_server" else "client_to_server"
        reply["kind"] = kind
        reply["bytes_in"], reply["bytes_out"] = 0, request["bytes_out"]
        reply["duration_ms"] = 0.0
        reply.pop("action", None)
        request["bytes_out"] = 0
        return reply

    def build(self, seq: int, anchor: float, row: Sequence[Any]) -> dict[str, Any]:
        if len(row) == EMITTED_ROW:  # an event given by its fields (a frame refused before the chain, too)
            return self._emitted(seq, anchor, row)
        return self._frame(seq, anchor, row)

    def _emitted(self, seq: int, anchor: float, row: Sequence[Any]) -> dict[str, Any]:
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

    def _frame(self, seq: int, anchor: float, row: Sequence[Any]) -> dict[str, Any]:
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
            _,
            trace,
        ) = row
        traceparent, step, attempt = _said(meta)
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
        if trace is not None:  # the gateway's span of a call it forwarded: the caller's span its parent
            document["trace_id"], document["span_id"], document["parent_span_id"] = trace
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


class FileWriter:
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
        if formatter.seq == 0:  # a writer taking over from one that died: number on from its last event
            formatter.seq = _last_seq(rotation.partial)

    def write(self, anchor: float, rows: Sequence[Sequence[Any]]) -> None:
        # Each line is copied out as soon as it is made: holding a batch of lines (each over
        # pymalloc's small-object size) costs the allocator more than making them.
        lines = bytearray()
        stderr = self.stderr
        for event in self.formatter.batch(anchor, rows):
            lines += jsonio.dumps_line(event)
            if stderr is not None:
                feed(stderr, event)
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
    writer = FileWriter(Rotation(Path(config["partial"]), config["max_bytes"], config["keep_files"]), formatter, stderr)
    source = sys.stdin.buffer
    while batch := unpack_rows(source):  # each batch is written as soon as it arrives
        writer.write(*batch)
    writer.close()
    return 0


def pack_rows(anchor: float, rows: list[tuple[Any, ...]]) -> bytes:
    """A batch of rows for the writer process: one JSON line of its clock's anchor and the rows. One
    C call for the whole batch (a line per event costs the producer's process ten times more); a
    float's shortest form reads back exactly, and the rows hold only what JSON holds."""
    return jsonio.dumps_line((anchor, rows))


def unpack_rows(source: BinaryIO) -> tuple[float, list[Sequence[Any]]] | None:
    """The next batch ``pack_rows`` wrote to ``source``; ``None`` at its end (a cut-off batch included)."""
    line = source.readline()
    if not line.endswith(b"\n"):
        return None
    anchor, rows = jsonio.loads(line)
    return anchor, rows


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


def link_latest(directory: Path, path: Path) -> None:
    """``.latest`` → ``path``, replaced atomically (a reader never sees a missing link)."""
    temporary = directory / f".latest.{os.getpid()}.tmp"
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    temporary.symlink_to(path.name)
    os.replace(temporary, directory / ".latest")


def keep_newest(directory: Path, keep: int, current: Path) -> None:
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


def _said(meta: Mapping[str, Any] | None) -> tuple[str | None, int | None, int | None]:
    """What the sender says of its trace and its agent's step in ``_meta`` (only values of the right type)."""
    if meta is None:
        return None, None, None
    traceparent, step, attempt = meta.get("traceparent"), meta.get("agent_step"), meta.get("attempt")
    return (
        traceparent if type(traceparent) is str else None,
        step if type(step) is int else None,
        attempt if type(attempt) is int else None,
    )


def _last_seq(path: Path) -> int:
    """The ``seq`` of the last complete event in ``path`` (0 when there is none)."""
    try:
        with path.open("rb") as file:
            file.seek(max(file.seek(0, os.SEEK_END) - 65_536, 0))
            lines = file.read().splitlines()
    except OSError:
        return 0
    for line in reversed(lines):
        try:
            return int(jsonio.loads(line)["seq"])
        except (jsonio.JSONSyntaxError, KeyError, TypeError, ValueError):
            continue
    return 0
