"""The event log's writer: rows in, events out, as JSON Lines in the run's file (and on stderr).

It runs in a process of its own (``python -m mcp_server.observe.writer_process``) fed batches of rows
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
from ..core.files import open_private
from ..execution.redaction import Redactor
from .stderr import Sink, feed, stderr_sink

__all__ = [
    "EMITTED_ROW",
    "FIXED_TS",
    "FRAME_ROW",
    "LOG_SCHEMA_VERSION",
    "PASSED_LENGTH",
    "PASSED_ROW",
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

FRAME_ROW = (
    "when",
    "session_id",
    "request_id",
    "transport",
    "direction",
    "kind",
    "route",
    "method",
    "tool_id",
    "status",
    "seconds",
    "bytes_in",
    "bytes_out",
    "protocol_version",
    "error",
    "meta",
    "action",
    "reply_kind",
    "trace",
)
"""The names of a refused frame's row, in order (``events.EventLog.refused`` makes it, the writer reads it).
``reply_kind`` names the reply the frame earned where it arrived (a frame of its own, in the other
direction: the writer makes its event), ``None`` when it earned none there. ``trace``: the gateway's
span of a call it forwarded, ``(trace_id, span_id, parent_span_id)``, else ``None``."""

PASSED_ROW = (
    "when",
    "began",
    "session_id",
    "request_id",
    "transport",
    "direction",
    "kind",
    "route",
    "method",
    "tool_id",
    "bytes_in",
    "protocol_version",
    "meta",
    "reply",
    "trace",
)
"""The names of a passed frame's row, in order (``events.EventLog.frame`` makes it): only what the caller
holds; the writer derives the rest of the event (its duration, status, route and bytes out).
``meta`` is the frame's ``params._meta`` as it came (the row holds nothing else of the message,
and only until its batch is sent); ``reply`` the size of the reply the frame earned where it
arrived and the frame's status by it, ``None`` when it earned none there (status ``ok``); ``trace``
as in ``FRAME_ROW``."""

PASSED_LENGTH = len(PASSED_ROW)  # a row's length tells its shape (``EMITTED_ROW`` is the third)
_FRAME_LENGTH = len(FRAME_ROW)
_PASSED_META, _FRAME_META = PASSED_ROW.index("meta"), FRAME_ROW.index("meta")  # where each holds the _meta


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
        self._frame_event = {**_FRAME_EVENT, "run_id": run_id, "metadata": self._metadata}  # copied per frame

    def _ts(self, millis: int) -> str:
        """ISO-8601 UTC with milliseconds; the part up to the second is formatted once a second."""
        if millis != self._ts_millis:
            self._ts_millis = millis
            second = millis // 1000
            if second != self._ts_second:
                self._ts_second = second
                self._ts_prefix = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S.")
            self._ts_last = f"{self._ts_prefix}{millis - second * 1000:03d}Z"
        return self._ts_last

    def batch(self, anchor: float, rows: Sequence[Sequence[Any]]) -> Iterator[dict[str, Any]]:
        """The events of a batch of rows, numbered on from the last (a row's clock + ``anchor`` = wall
        clock): one loop, each event a template's copy with what differs set (a call per row costs much)."""
        run_id, deterministic, traces, match = self.run_id, self.deterministic, self._open_traces, _TRACEPARENT.match
        new_event, millis_now, ts, seq = self._frame_event.copy, self._ts_millis, self._ts_last, self.seq
        for row in rows:
            seq += 1  # this event's number (``self.seq`` is set before each event goes out)
            if (length := len(row)) == EMITTED_ROW:
                self.seq = seq
                yield self._emitted(seq, anchor, row)
                continue
            event = new_event()
            if length == PASSED_LENGTH:  # events.PASSED_ROW: derive what the producer left out
                when, began, sid, rid, transport, direction, kind, route = row[:8]
                method, tool, size, version, meta, reply, span = row[8:]
                seconds, status, bytes_out, reply_kind = when - began, "ok", 0, None
                if reply is not None:
                    (bytes_out, status), reply_kind = reply, "response"
                elif route == "relay":  # passed on as it came
                    bytes_out = size
                route = route or method
            else:  # events.FRAME_ROW: a refused frame, every value given
                when, sid, rid, transport, direction, kind, route, method, tool = row[:9]
                status, seconds, size, bytes_out, version, error, meta, action, reply_kind, span = row[9:]
                self._refused(event, error, action)
            parent = trace = None
            if type(meta) is dict:  # what the sender says of its trace and step
                parent = _said(meta.get("traceparent"), str)
                event["agent_step"] = _said(meta.get("agent_step"), int)
                event["attempt"] = _said(meta.get("attempt"), int)
            if rid is not None and (kind == "response" or kind == "error_response"):
                trace = traces.pop((sid, rid), None)  # a response shares its request's trace
            if trace is None:
                found = match(parent) if parent is not None else None
                trace = found.group(1) if found else f"{run_id}{seq:016x}"
                if rid is not None and kind == "request":
                    traces[sid, rid] = trace
                    if len(traces) > _OPEN_TRACES:
                        traces.popitem(last=False)  # the oldest (a dict would scan what it deleted)
            if not deterministic:
                millis = int((when + anchor) * 1000)
                if millis != millis_now:
                    millis_now, ts = millis, self._ts(millis)
                event["duration_ms"] = round(seconds * 1e6) / 1000  # to the microsecond
            event["ts"], event["seq"] = ts, seq  # two at a time: no tuple is made for two
            event["session_id"], event["trace_id"] = sid, trace
            event["request_id"], event["transport"] = rid, transport
            event["direction"], event["kind"] = direction, kind
            event["route"], event["method"] = route, method
            event["tool_id"], event["status"] = tool, status
            event["bytes_in"], event["protocol_version"] = size, version
            if span is not None:  # the gateway's span of a call it forwarded: the caller's span its parent
                _spanned(event, span)
            if reply_kind is None:  # else the frame's own event keeps the template's 0: its reply has them
                event["bytes_out"] = bytes_out
            self.seq = seq = seq if reply_kind is None else seq + 1  # the last number given out
            yield event
            if reply_kind is not None:
                yield _answer(event, seq, reply_kind, bytes_out)

    def _refused(self, event: dict[str, Any], error: Sequence[Any] | None, action: str | None) -> None:
        """What a refused frame's event carries beyond a passed one's: its error, and what a gateway
        did about it (``action``, the one field only some frames have: before the metadata)."""
        if error is not None:
            event["error"], event["redaction_applied"], event["policy_violation"] = self._refusal(error)
        if action is not None:
            event["action"] = action
            event["metadata"] = event.pop("metadata")

    def _emitted(self, seq: int, anchor: float, row: Sequence[Any]) -> dict[str, Any]:
        """An event given by its fields (a frame refused before the chain, too)."""
        when, event, session_id, fields = row
        ts = FIXED_TS if self.deterministic else self._ts(int((when + anchor) * 1000))
        document = {"ts": ts, "run_id": self.run_id, "seq": seq, "event": event}
        document["session_id"] = session_id
        document.update(_FRAME_DEFAULTS)
        document.update(fields)
        if fields.get("error") is not None:
            document["error"], applied = self._error(fields["error"])
            document["redaction_applied"] = bool(document.get("redaction_applied")) or applied
        document["metadata"] = self._metadata
        return document

    def _refusal(self, error: Sequence[Any]) -> tuple[dict[str, Any], bool, bool]:
        """A refused frame's ``(member name, details, policy violation)``: its event's error,
        whether redaction changed it, and whether the policy refused it."""
        name, details, violation = error
        member = CanonicalError[name]
        shaped, applied = self._error({"code": member.slug, "message": member.message, "details": details})
        return shaped, applied, violation

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
        self.file = open_private(rotation.partial)  # after what the writer process wrote, if it came first
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
        lines, stderr, dump = bytearray(), self.stderr, jsonio.dumps_line
        for event in self.formatter.batch(anchor, rows):
            lines += dump(event)
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
        self.file = open_private(self.rotation.partial)
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
        formatter.redact = Redactor.build(**config["redaction"]).redact_record
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
    try:
        return jsonio.dumps_line((anchor, rows))
    except TypeError:  # a _meta nested deeper than JSON output goes (jsonio.MAX_DEPTH): send what events read
        return jsonio.dumps_line((anchor, [_shallow(row) for row in rows]))


def _shallow(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A frame's row with its ``_meta`` cut to what its event reads of it (``EventFormatter.batch``)."""
    at = {PASSED_LENGTH: _PASSED_META, _FRAME_LENGTH: _FRAME_META}.get(len(row))
    if at is None or type(row[at]) is not dict:
        return row
    meta = row[at]
    said = {"traceparent": _said(meta.get("traceparent"), str)}
    said["agent_step"], said["attempt"] = _said(meta.get("agent_step"), int), _said(meta.get("attempt"), int)
    return (*row[:at], said, *row[at + 1 :])


def unpack_rows(source: BinaryIO) -> tuple[float, list[Sequence[Any]]] | None:
    """The next batch ``pack_rows`` wrote to ``source``; ``None`` at its end (a cut-off batch included)."""
    line = source.readline()
    if not line.endswith(b"\n"):
        return None
    anchor, rows = jsonio.loads(line)
    return anchor, rows


def _spanned(event: dict[str, Any], span: Sequence[str]) -> None:
    """A forwarded call's event: the trace and span ids of the gateway's span, the caller's span its
    parent (the two fields only such events have: before the metadata, as ``action``)."""
    event["trace_id"], event["span_id"], event["parent_span_id"] = span
    event["metadata"] = event.pop("metadata")


def _answer(event: dict[str, Any], seq: int, kind: str, size: int) -> dict[str, Any]:
    """The event of the reply a frame earned where it arrived: the frame's own, the next number, the
    other direction; the frame's own event keeps only the bytes it came with."""
    answer = event.copy()
    answer["seq"] = seq
    answer["direction"] = "server_to_client" if event["direction"] == "client_to_server" else "client_to_server"
    answer["kind"], answer["duration_ms"] = kind, 0.0
    answer["bytes_in"], answer["bytes_out"] = 0, size
    answer.pop("action", None)
    return answer


_FRAME_EVENT: Mapping[str, Any] = {
    "ts": FIXED_TS,
    "run_id": None,
    "seq": 0,
    "event": "frame",
    "session_id": None,
    "trace_id": None,
    "request_id": None,
    "transport": None,
    "direction": None,
    "kind": None,
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
    "metadata": None,
}
"""A frame's event: its fields in their order, and their values unless the row says otherwise."""

_FRAME_DEFAULTS: Mapping[str, Any] = {
    name: value
    for name, value in _FRAME_EVENT.items()
    if name not in ("ts", "run_id", "seq", "event", "session_id", "kind", "metadata")
}
"""What an emitted event holds of a frame's fields before its own (they follow its header, in order)."""


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


def _said(value: Any, kind: type) -> Any:
    """A value of ``_meta`` the event reads, when it has the right type (else ``None``)."""
    return value if type(value) is kind else None


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
