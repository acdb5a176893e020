"""Checking a recorded MCP session offline, by the gateway's own session ledger (``mcp-server check``,
whose arguments are ``commands/check.py``'s).

The capture is read line by line and never whole: memory stays flat in its size (counters, and a
bounded number of examples per rule). The only I/O is reading the capture and writing the report.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from ..chain.json_syntax import parse
from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.oversize import recover
from ..core.session import Session
from ..core.settings import DEFAULT_MAX_FRAME_BYTES
from ..core.types import (
    CLIENT_TO_SERVER,
    ERROR_RESPONSE,
    REQUEST,
    SERVER_TO_CLIENT,
    Direction,
    Frame,
    Message,
    RequestId,
    is_request_id,
)
from ..execution.redaction import Redactor
from ..ledger.ledger import GOES_ON, Ledger
from ..ledger.modes import OBSERVE_ALL, Mode
from ..ledger.waits import awaited
from ..observe.digest import digest_log
from ..observe.html import render_html
from ..observe.report import ConformanceReport
from ..registry.lockfile import LOCK_RULES, LockCheck
from ..registry.schemas import SchemaRegistry
from ..registry.versions import sender_of
from .library import default_registry, error_code_problem

__all__ = [
    "RENDERERS",
    "RULES",
    "CaptureError",
    "CheckReport",
    "SessionCheck",
    "check_capture",
    "render_json",
    "render_junit",
    "render_page",
    "render_text",
]

RULES = (
    CanonicalError.PAYLOAD_TOO_LARGE.slug,
    CanonicalError.PARSE_ERROR.slug,
    CanonicalError.DUPLICATE_MEMBER_NAME.slug,
    CanonicalError.NESTED_TOO_DEEP.slug,
    CanonicalError.INVALID_ENVELOPE.slug,
    CanonicalError.DUPLICATE_REQUEST_ID.slug,
    CanonicalError.NOT_INITIALIZED.slug,
    CanonicalError.UNSUPPORTED_PROTOCOL_VERSION.slug,
    CanonicalError.METHOD_NOT_FOUND.slug,
    CanonicalError.INVALID_PARAMS.slug,
    CanonicalError.INVALID_FORMAT.slug,
    CanonicalError.UNKNOWN_RESPONSE_ID.slug,
    CanonicalError.INVALID_TOOL_INPUT.slug,
    CanonicalError.INVALID_TOOL_OUTPUT.slug,
    "invalid_tool_schema",
    "tool_definition_changed",
    "invalid_error_code",
)
"""Every rule the check applies: the chain's catalogue slugs, and the gateway's tool rules."""

LOCKED_RULES = (*LOCK_RULES, CanonicalError.TOOL_NOT_LOCKED.slug)
"""What ``--lock`` adds: the listing held against the lockfile, and calls of tools it does not allow."""

_DIRECTIONS = {d.value: d for d in Direction}
HELD_FRAMES = 4096
"""Client frames a check holds back at most (the live gateway bounds its wait by time; a capture has
none): past it the oldest is taken as it is."""

_new = tuple.__new__
_loads, _SyntaxError = jsonio.loads, jsonio.JSONSyntaxError
_Senders = dict[str, Direction | None]
_JSON_RPC_MEMBERS = ("jsonrpc", "method", "id", "result", "error")
_UTF8_BOM = b"\xef\xbb\xbf"


class CaptureError(Exception):
    """The capture cannot be read as one (exit 2): ``reason`` is a slug, ``detail`` names the place."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class CheckReport(ConformanceReport):
    """The run's report model (``observe/report.py``, the gateway's), headed by the capture: its
    path, its lines read and skipped, the lockfile it was held to."""

    def __init__(self, capture: str) -> None:
        super().__init__(upstream=capture, mode=Mode.OBSERVE.value)
        self.capture = capture
        self.lines = 0
        self.skipped = 0
        self.lockfile: str | None = None  # the lockfile the listing was held against (``--lock``)

    def to_document(self) -> dict[str, Any]:
        return {
            "capture": self.capture,
            "ok": not self.violations,
            "protocol_version": self.protocol_version,
            "lines": self.lines,
            "skipped_lines": self.skipped,
            **self.counts(),
        } | ({} if self.lockfile is None else {"lockfile": self.lockfile})


class _VersionForced:
    """``check --version``: every frame is judged at the version forced, so the version a handshake
    names judges nothing and is not held to the bundled ones (as before the ledger read it, ADR 42)."""

    def mode_for(self, direction: Direction, tool: str | None = None) -> Mode:
        return Mode.OBSERVE

    def rule_on(self, rule: str) -> bool:
        return rule != CanonicalError.UNSUPPORTED_PROTOCOL_VERSION.slug


_VERSION_FORCED = _VersionForced()


class SessionCheck:
    """One recorded session, fed frame by frame to the gateway's ledger (``ledger/ledger.py``) in
    observe mode: the same chains, the same verdicts, the same learning, the same report.

    What a file adds: a version forced (``--version``), the error-code rule of the library, a
    server's frame that is no JSON-RPC reported under its rule (a capture is no process's stdout),
    the direction of a frame recorded without one, told by the side that sends its method (per the
    schemas' method tables), a response the opposite of the request it answers, and the client's
    frames held back as the gateway holds them (a capture has no clock: at most ``HELD_FRAMES``).
    """

    def __init__(
        self,
        registry: SchemaRegistry,
        report: CheckReport,
        *,
        version: str | None = None,
        allow_codes: Sequence[tuple[int, int]] = (),
        lock: LockCheck | None = None,
    ) -> None:
        self.registry = registry
        self.report = report
        # No size limit: a recording has none (a line over ``--max-frame-bytes`` never gets here).
        self.ledger = Ledger(
            registry,
            OBSERVE_ALL if version is None else _VERSION_FORCED,
            report,
            session=Session(session_id="capture"),
            limits=(sys.maxsize,) * 2,
            lock=lock,
            logged=False,  # the report is the output: no warning line per violation on stderr
            quarantine=False,  # a capture holds frames, not a process's stdout: each refused under its rule
        )
        self.session = self.ledger.session
        self.forced = version
        self.allow_codes = tuple(allow_codes)
        if version is not None:
            self.session.negotiate(version)
            report.protocol_version = version
        # Who sends each method, per version and over every version (before one is known).
        protocols = list(registry.protocols.values())
        self._sides: dict[str | None, tuple[_Senders, _Senders]] = {
            None: _senders([p.requests for p in protocols], [p.notifications for p in protocols])
        }
        for p in protocols:
            self._sides[p.version] = _senders([p.requests], [p.notifications])
        self._wrapped = False
        self._run_mode: str | None = None  # ``serve`` or ``gateway``, when the capture is this project's run log
        # The client's frames held until they can be checked (line, frame, bytes), and the client's
        # ``initialize`` and last ``tools/list`` that went on, which they may wait for (``ledger/waits.py``).
        self._held: deque[tuple[int | None, dict[str, Any], bytes]] = deque()
        self._handshake: RequestId | None = None
        self._listing: RequestId | None = None

    def line(self, number: int, raw: bytes) -> None:
        """One line of the capture: a raw frame, or ``{"direction", "frame"}`` (a wrapper or a run-log event)."""
        self.report.line = number
        try:  # the common line parses to an object; anything else is the parse stage's to name (``parse``)
            document = _loads(raw)
        except (jsonio.DuplicateKeyError, jsonio.TooDeepError):
            self._unread(raw)  # a frame the reader refuses as it stands: the chain names it, as live
            return
        except _SyntaxError:
            document = None
        if type(document) is not dict:
            self._unparsed(number, raw)
            return
        if "jsonrpc" in document and "frame" not in document and "event" not in document:
            self.frame(document, None, raw)  # a raw frame, the common line: nothing else to ask of it
            return
        if "frame" in document:
            self._wrapped = True
            self._unwrapped(document)
        elif _is_own_event(document):
            self._recorded(document)
        elif (self._wrapped or "event" in document) and not any(member in document for member in _JSON_RPC_MEMBERS):
            self.report.skipped += 1  # a run-log event that carries no frame
        else:
            self.frame(document, None, raw)

    def _unread(self, raw: bytes) -> None:
        """A frame that names a member twice or nests past the reader: sent by the side its ends (or,
        named twice, the document most parsers read) tell, and refused by the whole chain there."""
        try:
            told: Any = jsonio.read_last_wins(raw)
        except ValueError:
            found = recover(raw, len(raw))
            told = {key: value for key, value in (("method", found.method), ("id", found.id)) if value is not None}
        told = told if type(told) is dict else {}
        direction = self._infer(told)
        if direction is CLIENT_TO_SERVER and (self._held or self._waits(told)):
            self._hold(_Unread(told), raw)  # held as the gateway holds it; judged from its bytes when it goes on
        else:
            self._take(None, direction, raw)

    def _unparsed(self, number: int, raw: bytes) -> None:
        """A line that is no JSON object: refused under the parse stage's rule."""
        try:
            parse(raw)
        except Rejection as rejection:
            if rejection.error is CanonicalError.PARSE_ERROR:
                self._refuse_non_utf8(number, raw)
            self.report.violation(rejection.error.slug, direction=None, errors=rejection.errors)
            self.report.frame(None, None, None)
        else:  # pragma: no cover - ``parse`` refuses what ``loads`` does not read as an object
            raise AssertionError("parse passed a line that is no JSON object")

    def _unwrapped(self, wrapper: Mapping[str, Any]) -> None:
        """A ``{"direction", "frame"}`` line: the frame (an object, or its JSON text) in its direction."""
        stated = wrapper.get("direction")
        direction = _DIRECTIONS.get(stated) if isinstance(stated, str) else None
        frame = wrapper["frame"]
        if not isinstance(frame, dict):
            try:
                frame = parse(frame.encode() if isinstance(frame, str) else jsonio.dumps(frame))
            except Rejection as rejection:
                self.report.violation(rejection.error.slug, direction=direction, errors=rejection.errors)
                self.report.frame(direction, None, None)
                return
        self.frame(frame, direction)

    def _recorded(self, event: Mapping[str, Any]) -> None:
        """An event of this project's own run log: it holds no frame, but the run's verdict on one.

        A gateway's violations are its ``violation`` events (one per rule broken, tool rules
        included); a server's are its refused frames. Either way, what the run found is reported."""
        kind, direction = event.get("event"), _DIRECTIONS.get(str(event.get("direction")))
        if kind == "start":
            detail = event.get("detail")
            self._run_mode = detail.get("mode") if isinstance(detail, Mapping) else None
        if kind != "frame" and not (kind == "violation" and self._run_mode == "gateway"):
            self.report.skipped += 1
            return
        method = event.get("method") if isinstance(event.get("method"), str) else None
        if kind == "frame":
            self.report.frames["(unknown)" if direction is None else direction.value, method or "(response)"] += 1
            if isinstance(event.get("protocol_version"), str):
                self.report.protocol_version = event["protocol_version"]
        error = event.get("error")
        if not isinstance(error, Mapping) or (kind == "frame" and self._run_mode == "gateway"):
            return
        if kind == "frame" and direction is SERVER_TO_CLIENT:
            return  # a server's reply to a refused frame: the refusal is the frame's own event
        tool = event.get("tool_id")
        self.report.violation(
            str(event.get("rule") or error.get("code")),
            direction=direction,
            method=method,
            tool=tool if isinstance(tool, str) else None,
            request_id=event.get("request_id"),
            errors=[entry for entry in error.get("details") or () if isinstance(entry, Mapping)],
        )

    @staticmethod
    def _refuse_non_utf8(number: int, raw: bytes) -> None:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CaptureError("not_utf8", f"line {number}, byte {exc.start}: not UTF-8") from None

    def frame(self, document: dict[str, Any], direction: Direction | None, raw: bytes = b"") -> None:
        """One parsed frame, as the live gateway takes it: a client frame the gateway would hold until
        it can be checked (``ledger/waits.py``: behind a pending ``initialize``, a call of a tool not
        listed yet) is held, and the client's frames after it, in their order (a client that pipelines
        writes them before the replies come, ADR 42); the rest is taken at once, and what a server's
        frame settled lets the held frames go on."""
        direction = direction or self._infer(document)
        if direction is CLIENT_TO_SERVER:
            if self._held or self._waits(document):
                self._hold(document, raw)
            else:
                self._take(document, direction, raw)
            return
        if self._held:
            self._answering(document)
        self._take(document, direction, raw)
        if self._held:
            self._release()

    def _answering(self, document: Mapping[str, Any]) -> None:
        """A server's reply to a held request: the request went on before it (its peer answered it;
        the gateway's wait for it ended), and so did the client's frames before it."""
        request_id = document.get("id")
        if "method" in document or not is_request_id(request_id):
            return
        for index, (_, held, _) in enumerate(self._held):
            if "method" in held and held.get("id") == request_id:
                for _ in range(index + 1):
                    self._take_held()
                return

    def _waits(self, document: Mapping[str, Any]) -> bool:
        """Whether the live gateway would hold this client frame before checking it."""
        method = document.get("method")
        if self._handshake is None and (self._listing is None or method != "tools/call"):
            return False  # (the common frame: nothing to ask of the rule)
        params = document.get("params")
        tool = params.get("name") if method == "tools/call" and isinstance(params, Mapping) else None
        waited = awaited(
            self.session,
            self.ledger.tools,
            REQUEST if "id" in document else None,
            method if type(method) is str else None,
            tool if type(tool) is str else None,
            handshake=self._handshake,
            listing=self._listing,
        )
        if waited is None or waited != self._handshake:
            self._handshake = None  # its reply came (or it never went on): nothing waits on it now
        return waited is not None

    def _hold(self, document: dict[str, Any], raw: bytes) -> None:
        self._held.append((self.report.line, document, raw))
        if len(self._held) > HELD_FRAMES:  # memory stays flat: the oldest goes on, as after the gateway's wait
            self._take_held()

    def _release(self) -> None:
        """The held frames that need wait no more, oldest first, until one still waits."""
        line = self.report.line
        while self._held and not self._waits(self._held[0][1]):
            self._take_held()
        self.report.line = line

    def _take_held(self) -> None:
        self.report.line, document, raw = self._held.popleft()
        self._take(None if isinstance(document, _Unread) else document, CLIENT_TO_SERVER, raw)

    def end(self) -> None:
        """The capture ends: what is still held is taken in its order, as the gateway checks a frame
        whose wait is over (its bound, or the end of the session)."""
        while self._held:
            self._take_held()

    def _take(self, document: dict[str, Any] | None, direction: Direction, raw: bytes) -> None:
        """One frame through the ledger, as the gateway in observe mode takes it: checked (a reply
        settles its request), judged when refused, learnt from when valid; a request delivered waits
        for its answer (the client's ``initialize``: the frames after it wait for its reply)."""
        frame = _new(Frame, (raw, "capture", self.session, None, direction, None))  # (``Frame()``: a call more)
        ledger = self.ledger
        verdict = ledger.check(frame, document)
        forced = self.forced
        if forced is not None and self.session.version != forced:  # (the ledger followed a handshake)
            self.session.negotiate(forced)  # the user's version stands
            self.report.protocol_version = forced
        if isinstance(verdict, Rejection):
            if ledger.judge(frame, verdict) in GOES_ON:
                self._went_on(direction, verdict.message)
            return
        ledger.passed(frame, verdict)
        self._went_on(direction, verdict)
        if verdict.kind is REQUEST or verdict.kind is ERROR_RESPONSE:
            self._file_rules(direction, verdict)  # (a notification or a result: nothing to add)

    def _went_on(self, direction: Direction, message: Message | None) -> None:
        self.ledger.went_on(direction, message)
        if direction is CLIENT_TO_SERVER and message is not None and message.kind is REQUEST:
            if message.method == "initialize":  # what the client sends next waits for its reply
                self._handshake = message.id
            elif message.method == "tools/list":  # a call of a tool not listed yet waits for it
                self._listing = message.id

    def _file_rules(self, direction: Direction, message: Message) -> None:
        """What a file adds to the ledger's verdict on a valid frame: the version a stateless request
        stated, an error code's range."""
        if message.kind is REQUEST:
            if self.session.version is None and message.version in self.registry.stateless_versions:
                self.report.protocol_version = message.version  # what the request stated (2026-07-28)
        elif message.version is not None:
            self._error_code(direction, message)

    def _violation(self, rule: str, direction: Direction, message: Message, errors: Any) -> None:
        """A rule the frame being read broke, as far as ``message`` says what it was."""
        self.ledger.verdicts.violation(
            rule, Frame(b"", "capture", self.session, None, direction), message, errors, "observed"
        )

    def _error_code(self, direction: Direction, message: Message) -> None:
        assert message.document is not None and message.version is not None
        code = message.document["error"]["code"]
        why = error_code_problem(self.registry, message.version, code, self.allow_codes)
        if why is not None:
            self._violation(
                "invalid_error_code", direction, message, [{"path": "/error/code", "msg": f"{code}: {why}"}]
            )

    def _infer(self, document: Mapping[str, Any]) -> Direction:
        """The sender of a frame recorded without its direction (best effort: a wrapped capture is exact)."""
        session = self.session
        method, request_id = document.get("method"), document.get("id")
        if method is None:  # a response: the opposite of the request it answers
            if is_request_id(request_id):
                if session.peek(CLIENT_TO_SERVER, request_id) is not None:
                    return SERVER_TO_CLIENT
                if session.peek(SERVER_TO_CLIENT, request_id) is not None:
                    return CLIENT_TO_SERVER
            return SERVER_TO_CLIENT
        requests, notifications = self._sides.get(session.version) or self._sides[None]
        side = (requests if request_id is not None or "id" in document else notifications).get(
            method if type(method) is str else ""
        )
        if side is not None:
            return side
        params = document.get("params")
        params = params if isinstance(params, Mapping) else {}
        if method == "notifications/progress":  # from the side that answers the request it reports on
            return self._side_of(params.get("progressToken"), answering=True)
        if method == "notifications/cancelled":  # from the side that sent the request
            return self._side_of(params.get("requestId"), answering=False)
        return CLIENT_TO_SERVER

    def _side_of(self, request_id: Any, *, answering: bool) -> Direction:
        """The side that sent (``answering``: that answers) the only pending request of ``request_id``."""
        if not is_request_id(request_id):
            return SERVER_TO_CLIENT if answering else CLIENT_TO_SERVER
        by_server = self.session.peek(SERVER_TO_CLIENT, request_id) is not None
        by_client = self.session.peek(CLIENT_TO_SERVER, request_id) is not None
        if answering:
            return CLIENT_TO_SERVER if by_server and not by_client else SERVER_TO_CLIENT
        return SERVER_TO_CLIENT if by_server and not by_client else CLIENT_TO_SERVER


class _Unread(dict[str, Any]):
    """A held frame the reader refuses as it stands (a member named twice, nested past the reader): what
    its ends, or most parsers, read of it, for its wait; the chain judges it from its bytes."""


def _senders(
    requests: list[Mapping[tuple[Direction, str], Any]], notifications: list[Mapping[tuple[Direction, str], Any]]
) -> tuple[_Senders, _Senders]:
    """Who sends each request and notification of ``tables`` (``registry/versions.py`` ``sender_of``)."""
    return (
        {method: sender_of(method, requests) for table in requests for _, method in table},
        {method: sender_of(method, notifications) for table in notifications for _, method in table},
    )


def _is_own_event(document: Mapping[str, Any]) -> bool:
    """An event of this project's run log (``schemas/log-event.schema.json``) that carries no frame."""
    metadata = document.get("metadata")
    return (
        "event" in document
        and "frame" not in document
        and isinstance(metadata, Mapping)
        and "schemaVersion" in metadata
    )


def _open(path: Path) -> IO[bytes]:
    try:
        if path.is_dir():
            raise CaptureError("is_a_directory", f"{path}: is a directory, not a capture file")
        return path.open("rb", buffering=1 << 20)
    except FileNotFoundError:
        raise CaptureError("not_found", f"{path}: no such file") from None
    except PermissionError:
        raise CaptureError("not_readable", f"{path}: permission denied") from None
    except OSError as exc:
        raise CaptureError("io_error", f"{path}: {exc.strerror or exc}") from None


def check_capture(
    path: Path,
    *,
    registry: SchemaRegistry | None = None,
    version: str | None = None,
    allow_codes: Sequence[tuple[int, int]] = (),
    lock: LockCheck | None = None,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
) -> CheckReport:
    """Check every frame of the capture at ``path`` (and its tools against ``lock``); ``CaptureError``
    when it cannot be read as one. A line over ``max_frame_bytes`` is a finding (``payload_too_large``,
    as the live chain refuses such a frame), counted and skipped, never held whole."""
    registry = registry or default_registry()
    if max_frame_bytes <= 0:
        raise CaptureError("bad_limit", f"the frame limit must be a positive number of bytes, got {max_frame_bytes}")
    if version is not None and version not in registry.protocols:
        raise CaptureError("unknown_version", f"{version}: not a bundled version ({', '.join(registry.versions)})")
    report = CheckReport(str(path))
    if lock is not None:
        report.lockfile = str(lock.lock.path)
    checker = SessionCheck(registry, report, version=version, allow_codes=allow_codes, lock=lock)
    check_line = checker.line
    lines = 0
    handle = _open(path)
    # Lines read by the file's own ``readline`` (in C), in this loop (a generator would add a resume a line).
    read, most = handle.readline, max_frame_bytes + 1  # +1: a trailing "\r"
    try:
        with handle:
            while line := read(most + 1):  # (+1: the newline)
                lines += 1
                if line[-1] == _NEWLINE:
                    raw = line[:-1]
                elif len(line) <= most:
                    raw = line  # the last line, without a newline
                else:  # a line over the limit: its bytes counted and dropped as they come
                    _too_large(report, lines, _drained(read, len(line)), max_frame_bytes)
                    continue
                if lines == 1 and raw.startswith(_UTF8_BOM):
                    raw = raw[len(_UTF8_BOM) :]
                if not raw or raw.isspace():
                    report.skipped += 1
                    continue
                check_line(lines, raw)
    except OSError as exc:
        raise CaptureError("io_error", f"{path}: {exc.strerror or exc}") from None
    checker.end()
    report.lines = lines
    if lines == report.skipped:
        raise CaptureError("empty_capture", f"{path}: no frames to check")
    return report


_CHUNK = 1 << 20
_NEWLINE = ord("\n")


def _drained(read: Callable[[int], bytes], size: int) -> int:
    """The size of a line ``size`` bytes of which were read, its rest read up to its newline and
    dropped (memory stays within a chunk)."""
    while rest := read(_CHUNK):
        if rest[-1] == _NEWLINE:
            return size + len(rest) - 1
        size += len(rest)
    return size


def _too_large(report: CheckReport, line: int, size: int, limit: int) -> None:
    errors = [{"path": "", "msg": f"line of {size} bytes, over the frame limit of {limit}"}]
    report.line = line
    report.violation(CanonicalError.PAYLOAD_TOO_LARGE.slug, direction=None, errors=errors)
    report.frames["(unknown)", "(too large)"] += 1


def _example_line(example: Mapping[str, Any]) -> str:
    where = " ".join(
        str(part)
        for part in (
            example.get("direction") or "?",
            example.get("method") or "",
            f"tool={example['tool']}" if example.get("tool") else "",
            f"id={example['id']}" if example.get("id") is not None else "",
        )
        if part
    )
    errors = "; ".join(f"{e.get('path') or '/'}: {e.get('msg')}" for e in example.get("errors", ()))
    return " ".join(f"line {example['line']}: {where} {errors}".split())


def render_text(document: Mapping[str, Any]) -> str:
    total = sum(document["violations"].values())
    frames = sum(sum(methods.values()) for methods in document["frames"].values())
    lines = [
        f"mcp-server check {document['capture']}: protocol {document['protocol_version'] or 'unknown'}, "
        f"{frames} frames in {document['lines']} lines ({document['skipped_lines']} skipped)"
    ]
    for direction, methods in document["frames"].items():
        detail = ", ".join(f"{method}={count}" for method, count in methods.items())
        lines.append(f"  frames {direction}: {sum(methods.values())} ({detail})")
    for rule, count in document["violations"].items():
        methods = ", ".join(f"{m}={c}" for m, c in document["violations_by_method"].get(rule, {}).items())
        tools = ", ".join(f"{t}={c}" for t, c in document["violations_by_tool"].get(rule, {}).items())
        lines.append(f"  {rule}: {count} (methods: {methods}{'; tools: ' + tools if tools else ''})")
        lines.extend(f"    {_example_line(example)}" for example in document["examples"].get(rule, ()))
    lines.append(f"result: {total} violation{'s' if total != 1 else ''}" if total else "result: clean")
    return "\n".join(lines) + "\n"


def render_json(document: Mapping[str, Any]) -> str:
    return jsonio.dumps_pretty(document).decode()


def render_junit(document: Mapping[str, Any]) -> str:
    """JUnit XML: one testcase per rule, a failure listing its examples when the rule was broken."""
    known = RULES + LOCKED_RULES if document.get("lockfile") else RULES
    rules = list(known) + sorted(rule for rule in document["violations"] if rule not in known)
    failures = sum(1 for rule in rules if document["violations"].get(rule))
    suites = ET.Element("testsuites", tests=str(len(rules)), failures=str(failures), errors="0")
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=f"mcp-server check {document['capture']}",
        tests=str(len(rules)),
        failures=str(failures),
        errors="0",
        skipped="0",
    )
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="protocol_version", value=str(document["protocol_version"]))
    ET.SubElement(properties, "property", name="lines", value=str(document["lines"]))
    for rule in rules:
        case = ET.SubElement(suite, "testcase", classname="mcp-server.check", name=rule)
        count = document["violations"].get(rule, 0)
        if count:
            failure = ET.SubElement(
                case, "failure", type=rule, message=f"{count} violation{'s' if count != 1 else ''} of {rule}"
            )
            failure.text = "\n".join(_example_line(example) for example in document["examples"].get(rule, ()))
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def render_page(document: Mapping[str, Any], capture: Path) -> str:
    """The HTML page; a capture that is a run's event log adds its timings, timeline and policy
    (from the file checked alone, as its counts are)."""
    try:
        digest = digest_log(capture, rotated=False)
    except OSError:
        digest = None
    return render_html(document, digest.to_document() if digest and digest.events else None, redactor=Redactor.build())


RENDERERS = {"text": render_text, "json": render_json, "junit": render_junit}
"""The report's text formats by name (``html`` is ``render_page``, which reads the capture again)."""
