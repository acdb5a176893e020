"""``mcp-server check CAPTURE``: lint a recorded MCP session offline, by the chain's own rules.

The capture is read line by line and never whole: memory stays flat in its size (counters, and a
bounded number of examples per rule). The only I/O is reading the capture and writing the report.
"""

from __future__ import annotations

import argparse
import os
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from ..chain.classify import shape_of
from ..chain.compose import build_chain
from ..chain.json_syntax import parse
from ..chain.tool_lock import lock_refusal, locked_out
from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.session import Session
from ..core.settings import ASSERT_FORMATS_HELP, DEFAULT_MAX_FRAME_BYTES, Settings, SetupError
from ..core.types import (
    CLIENT_TO_SERVER,
    NOTIFICATION,
    REQUEST,
    RESPONSE,
    SERVER_TO_CLIENT,
    Direction,
    Frame,
    Message,
    is_request_id,
)
from ..execution.redaction import Redactor
from ..observe.digest import digest_log
from ..observe.html import render_html
from ..observe.report import nested
from ..registry.lockfile import LOCK_RULES, RENAMED, LockCheck, Lockfile
from ..registry.schemas import SchemaRegistry
from ..registry.tools import UpstreamTools
from .validation import default_registry, error_code_problem

__all__ = [
    "EXAMPLES_PER_RULE",
    "RULES",
    "CaptureError",
    "CheckReport",
    "SessionCheck",
    "add_check_arguments",
    "check_capture",
    "render_json",
    "render_junit",
    "render_page",
    "render_text",
    "run_check",
]

EXAMPLES_PER_RULE = 5
"""Violations kept whole per rule (with line, direction, method, tool, id and paths); the rest are counted."""

ERRORS_PER_EXAMPLE = 10

RULES = (
    CanonicalError.PAYLOAD_TOO_LARGE.slug,
    CanonicalError.PARSE_ERROR.slug,
    CanonicalError.INVALID_ENVELOPE.slug,
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
_JSON_RPC_MEMBERS = ("jsonrpc", "method", "id", "result", "error")
_UTF8_BOM = b"\xef\xbb\xbf"


class CaptureError(Exception):
    """The capture cannot be read as one (exit 2): ``reason`` is a slug, ``detail`` names the place."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class CheckReport:
    """Counters and bounded examples: frames per direction and method, violations per rule, method, tool."""

    def __init__(self, capture: str) -> None:
        self.capture = capture
        self.protocol_version: str | None = None
        self.lines = 0
        self.skipped = 0
        self.frames: Counter[tuple[str, str]] = Counter()
        self.violations: Counter[str] = Counter()
        self.by_method: Counter[tuple[str, str]] = Counter()
        self.by_tool: Counter[tuple[str, str]] = Counter()
        self.by_direction: Counter[tuple[str, str]] = Counter()
        self.examples: dict[str, list[dict[str, Any]]] = {}
        self.lockfile: str | None = None  # the lockfile the listing was held against (``--lock``)

    def violation(
        self,
        rule: str,
        *,
        line: int,
        direction: Direction | None,
        method: str | None = None,
        tool: str | None = None,
        request_id: Any = None,
        errors: Iterable[Mapping[str, Any]] = (),
    ) -> None:
        self.violations[rule] += 1
        self.by_method[(rule, method or "(none)")] += 1
        self.by_direction[(rule, "(unknown)" if direction is None else direction.value)] += 1
        if tool is not None:
            self.by_tool[(rule, tool)] += 1
        examples = self.examples.setdefault(rule, [])
        if len(examples) < EXAMPLES_PER_RULE:
            listed = []
            for entry in errors:
                listed.append({key: entry[key] for key in ("path", "msg", "keyword") if key in entry})
                if len(listed) >= ERRORS_PER_EXAMPLE:
                    break
            examples.append(
                {
                    "line": line,
                    "rule": rule,
                    "direction": None if direction is None else direction.value,
                    "method": method,
                    "tool": tool,
                    "id": request_id,
                    "errors": listed,
                }
            )

    @property
    def total(self) -> int:
        return sum(self.violations.values())

    def to_document(self) -> dict[str, Any]:
        frames, per_method, per_tool = nested(self.frames), nested(self.by_method), nested(self.by_tool)
        return {
            "capture": self.capture,
            "ok": not self.violations,
            "protocol_version": self.protocol_version,
            "lines": self.lines,
            "skipped_lines": self.skipped,
            "frames": frames,
            "violations": dict(sorted(self.violations.items())),
            "violations_by_method": per_method,
            "violations_by_tool": per_tool,
            "violations_by_direction": nested(self.by_direction),
            "examples": {rule: self.examples[rule] for rule in sorted(self.examples)},
        } | ({} if self.lockfile is None else {"lockfile": self.lockfile})


class SessionCheck:
    """One recorded session, followed frame by frame as the chain would see it.

    The negotiated version comes from the ``initialize`` result (or a request's
    ``_meta["io.modelcontextprotocol/protocolVersion"]`` under a stateless version), unless forced;
    requests are matched to responses by id; tools learnt from ``tools/list`` results check later
    ``tools/call`` arguments and results. Frames without a recorded direction get the direction of
    the side that sends their method (per the schemas' method tables), a response the opposite of
    the request it answers.
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
        self.lock = lock
        self.session = Session(session_id="capture")
        self.tools = UpstreamTools(registry)
        self.forced = version
        self.allow_codes = tuple(allow_codes)
        if version is not None:
            self.session.negotiate(version)
            report.protocol_version = version
        # Both directions' chains, exactly as the gateway runs them (no size limit: a recording has none).
        self._chains = {
            direction: build_chain(registry, direction, tools=self.tools, max_frame_bytes=sys.maxsize)
            for direction in (CLIENT_TO_SERVER, SERVER_TO_CLIENT)
        }
        # Who sends each method, per version and over every version (before one is known):
        # None when both sides may (ping, notifications/progress, …).
        protocols = registry.protocols.values()
        self._sides: dict[str | None, tuple[dict[str, Direction | None], dict[str, Direction | None]]] = {
            None: (self._senders(p.requests for p in protocols), self._senders(p.notifications for p in protocols))
        }
        for p in protocols:
            self._sides[p.version] = (self._senders([p.requests]), self._senders([p.notifications]))
        self._wrapped = False
        self._run_mode: str | None = None  # ``serve`` or ``gateway``, when the capture is this project's run log

    @staticmethod
    def _senders(tables: Iterable[Mapping[tuple[Direction, str], str]]) -> dict[str, Direction | None]:
        seen: dict[str, set[Direction]] = {}
        for table in tables:
            for direction, method in table:
                seen.setdefault(method, set()).add(direction)
        return {method: next(iter(sides)) if len(sides) == 1 else None for method, sides in seen.items()}

    def line(self, number: int, raw: bytes) -> None:
        """One line of the capture: a raw frame, or ``{"direction", "frame"}`` (a wrapper or a run-log event)."""
        try:
            document = parse(raw)
        except Rejection as rejection:
            if rejection.error is CanonicalError.PARSE_ERROR:
                self._refuse_non_utf8(number, raw)
            self.report.violation(rejection.error.slug, line=number, direction=None, errors=rejection.errors)
            self.report.frames["(unknown)", "(not json-rpc)"] += 1
            return
        direction = None
        if "jsonrpc" in document and "frame" not in document and "event" not in document:
            self.frame(number, document, None)  # a raw frame, the common line: nothing else to ask of it
            return
        if "frame" in document:
            self._wrapped = True
            stated = document.get("direction")
            direction = _DIRECTIONS.get(stated) if isinstance(stated, str) else None
            frame = document["frame"]
            if not isinstance(frame, dict):
                try:
                    frame = parse(frame.encode() if isinstance(frame, str) else jsonio.dumps(frame))
                except Rejection as rejection:
                    self.report.violation(
                        rejection.error.slug, line=number, direction=direction, errors=rejection.errors
                    )
                    self.report.frames[direction or "(unknown)", "(not json-rpc)"] += 1
                    return
            document = frame
        elif _is_own_event(document):
            self._recorded(number, document)
            return
        elif (self._wrapped or "event" in document) and not any(member in document for member in _JSON_RPC_MEMBERS):
            self.report.skipped += 1  # a run-log event that carries no frame
            return
        self.frame(number, document, direction)

    def _recorded(self, number: int, event: Mapping[str, Any]) -> None:
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
            side = direction.value if direction is not None else "(unknown)"
            self.report.frames[side, method or "(unknown request)"] += 1
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
            line=number,
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

    def frame(self, number: int, document: dict[str, Any], direction: Direction | None) -> None:
        """One parsed frame through the chain of its direction, then the session's bookkeeping."""
        if direction is None:
            direction = self._infer(document)
        frame = Frame(b"", "capture", self.session, None, direction)
        try:
            message = self._chains[direction].check_parsed(frame, document)
        except Rejection as rejection:
            self.session.answered(direction, rejection.message)  # a reply refused is its request's answer
            message = rejection.message or shape_of(document)
            self._count(direction, message, refused=True)
            self._violation(rejection.error.slug, number, direction, message, rejection.errors)
            if message.kind is REQUEST and message.id is not None and message.method is not None:
                self.session.expect(direction, message.id, message.method, message.tool)  # its answer is still due
            return
        self.report.frames[direction, message.method or "(unknown request)"] += 1
        self.session.answered(direction, message)
        self._follow(number, direction, message)

    def _count(self, direction: Direction, message: Message, *, refused: bool) -> None:
        # Keyed by the Direction itself (a str): its ``.value`` is a descriptor call per frame.
        if message.kind is REQUEST or message.kind is NOTIFICATION or not refused:
            self.report.frames[direction, message.method or "(unknown request)"] += 1
        else:
            self.report.frames[direction, message.method or "(not json-rpc)"] += 1

    def _follow(self, number: int, direction: Direction, message: Message) -> None:
        """What a checked frame changes in the session: a request waits for its answer, the
        handshake settles the version, ``tools/list`` teaches the tools, an error's code is checked."""
        session, kind, document = self.session, message.kind, message.document
        assert document is not None
        if kind is REQUEST:
            session.follow(direction, message)  # as the live gateway follows it
            if self.lock is not None and locked_out(self.lock, message.kind, message.method, message.tool):
                refusal = lock_refusal(message)  # the gateway with ``--lock`` refuses it; here it is reported
                self._violation(refusal.error.slug, number, direction, message, refusal.errors)
            if session.version is None and message.version in self.registry.stateless_versions:
                self.report.protocol_version = message.version  # what the request stated (2026-07-28)
        elif kind is NOTIFICATION:
            if message.method == "notifications/initialized" and session.version is not None:
                session.initialized = True
        elif kind is RESPONSE:
            if message.method == "initialize":
                self._negotiated(number, direction, document, message)
            elif message.method == "tools/list":
                self._learn_tools(number, direction, document, message)
        elif message.version is not None:
            self._error_code(number, direction, message)

    def _violation(self, rule: str, number: int, direction: Direction, message: Message, errors: Any) -> None:
        """A rule the frame on line ``number`` broke, as far as ``message`` says what it was."""
        self.report.violation(
            rule,
            line=number,
            direction=direction,
            method=message.method,
            tool=message.tool,
            request_id=message.id,
            errors=errors,
        )

    def _error_code(self, number: int, direction: Direction, message: Message) -> None:
        assert message.document is not None and message.version is not None
        code = message.document["error"]["code"]
        why = error_code_problem(self.registry, message.version, code, self.allow_codes)
        if why is not None:
            self._violation(
                "invalid_error_code", number, direction, message, [{"path": "/error/code", "msg": f"{code}: {why}"}]
            )

    def _infer(self, document: Mapping[str, Any]) -> Direction:
        """The sender of a frame recorded without its direction (best effort: a wrapped capture is exact)."""
        session = self.session
        method, request_id = document.get("method"), document.get("id")
        if method is None:  # a response: the opposite of the request it answers
            if is_request_id(request_id) and session.peek(CLIENT_TO_SERVER, request_id) is not None:
                return SERVER_TO_CLIENT
            if is_request_id(request_id) and session.peek(SERVER_TO_CLIENT, request_id) is not None:
                return CLIENT_TO_SERVER
            return SERVER_TO_CLIENT
        requests, notifications = self._sides.get(session.version) or self._sides[None]
        side = (requests if "id" in document else notifications).get(method if isinstance(method, str) else "")
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

    def _negotiated(self, number: int, direction: Direction, document: Mapping[str, Any], message: Message) -> None:
        info = document["result"].get("serverInfo")
        if self.lock is not None and isinstance(info, Mapping):
            self.lock.resolve(info.get("name") if isinstance(info.get("name"), str) else None)
        if self.forced is not None:
            return
        offered = document["result"].get("protocolVersion")
        if offered in self.registry.protocols:
            self.session.follow(direction, message)  # as the live gateway settles it
            self.report.protocol_version = offered
            return
        errors = [{"path": "/result/protocolVersion", "msg": f"{offered!r} is not a bundled version"}]
        self._violation(CanonicalError.UNSUPPORTED_PROTOCOL_VERSION.slug, number, direction, message, errors)
        # Checked against the newest handshake version from here: better than not at all.
        self.session.negotiate(self.registry.latest_handshake)
        self.report.protocol_version = self.registry.latest_handshake

    def _learn_tools(self, number: int, direction: Direction, document: Mapping[str, Any], message: Message) -> None:
        listed = document["result"].get("tools")
        if not isinstance(listed, list):
            return
        outcome = self.tools.learn(listed)
        found = [("tool_definition_changed", name, _patch_errors(patch, None)) for name, patch in outcome.changed]
        found += [("invalid_tool_schema", name, [{"path": "", "msg": why}]) for name, why in outcome.invalid]
        if self.lock is not None:
            last = not isinstance(document["result"].get("nextCursor"), str)
            for finding in self.lock.listed(listed, last_page=last, fingerprints=outcome.fingerprints):
                was = finding.was if finding.rule == RENAMED else None
                found.append((finding.rule, finding.tool, _patch_errors(finding.patch, was)))
        for rule, name, errors in found:
            self.report.violation(
                rule,
                line=number,
                direction=direction,
                method="tools/list",
                tool=name,
                request_id=message.id,
                errors=errors,
            )


def _patch_errors(patch: Iterable[Mapping[str, Any]], was: str | None) -> list[dict[str, Any]]:
    """An RFC 6902 patch as a violation's errors: each operation at its path (a rename says the old name)."""
    errors = [{"path": op["path"], "msg": op["op"]} for op in patch]
    return [{"path": "/name", "msg": f"locked as {was!r}"}, *errors] if was is not None else errors


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
    try:
        with handle:
            for lines, (raw, size) in enumerate(_lines(handle, max_frame_bytes), 1):
                if size is not None:
                    _too_large(report, lines, size, max_frame_bytes)
                    continue
                if lines == 1 and raw.startswith(_UTF8_BOM):
                    raw = raw[len(_UTF8_BOM) :]
                if raw.isspace() or not raw:
                    report.skipped += 1
                    continue
                check_line(lines, raw)
    except OSError as exc:
        raise CaptureError("io_error", f"{path}: {exc.strerror or exc}") from None
    report.lines = lines
    if lines == report.skipped:
        raise CaptureError("empty_capture", f"{path}: no frames to check")
    return report


_CHUNK = 1 << 20


def _lines(handle: IO[bytes], limit: int) -> Iterator[tuple[bytes, int | None]]:
    """Every line of ``handle`` (its newline cut), as ``(raw, None)``; a line over ``limit`` bytes as
    ``(b"", size)``, its bytes counted and dropped as they come: memory stays within the limit."""
    held = bytearray()
    dropped: int | None = None  # bytes of the over-long line read so far
    while chunk := handle.read(_CHUNK):
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            if dropped is not None:
                yield b"", dropped + end - start
                dropped = None
            elif len(held) + end - start > limit + 1:  # +1: a trailing "\r"
                yield b"", len(held) + end - start
            else:
                yield (bytes(held) + chunk[start:end] if held else chunk[start:end]), None
            held.clear()
            start = end + 1
        if dropped is not None:
            dropped += len(chunk) - start
        elif len(held) + len(chunk) - start > limit + 1:
            dropped = len(held) + len(chunk) - start
            held.clear()
        else:
            held += chunk[start:]
    if dropped is not None:
        yield b"", dropped
    elif held:
        yield bytes(held), None


def _too_large(report: CheckReport, line: int, size: int, limit: int) -> None:
    errors = [{"path": "", "msg": f"line of {size} bytes, over the frame limit of {limit}"}]
    report.violation(CanonicalError.PAYLOAD_TOO_LARGE.slug, line=line, direction=None, errors=errors)
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


_RENDERERS = {"text": render_text, "json": render_json, "junit": render_junit}
_FORMATS = sorted([*_RENDERERS, "html"])


def _code_range(text: str) -> tuple[int, int]:
    low, sep, high = text.partition(":")
    try:
        return (int(low), int(high)) if sep else (int(low), int(low))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected CODE or LOW:HIGH (integers)") from None


def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("capture", help="NDJSON frames, {direction, frame} lines, or a run log")
    parser.add_argument("--format", choices=_FORMATS, default="text", help="report format (text)")
    parser.add_argument(
        "--version", dest="protocol_version", metavar="V", help="check against V instead of the negotiated version"
    )
    parser.add_argument("--assert-formats", action="store_true", help=ASSERT_FORMATS_HELP)
    parser.add_argument(
        "--allow-error-codes",
        dest="allow_codes",
        metavar="LOW:HIGH",
        type=_code_range,
        action="append",
        default=[],
        help="error codes accepted besides JSON-RPC's, the server range and the spec's (repeatable)",
    )
    parser.add_argument(
        "--max-frame-bytes",
        type=int,
        metavar="N",
        help=f"a longer line is a finding, never read whole (MCP_MAX_FRAME_BYTES; default {DEFAULT_MAX_FRAME_BYTES})",
    )
    parser.add_argument("--lock", type=Path, metavar="FILE", help="hold the listed tools to this tool lockfile")
    parser.add_argument("--lock-server", metavar="NAME", help="the lockfile's server key (default: the only one)")


def run_check(args: argparse.Namespace) -> int:
    """Exit 0 clean, 1 violations, 2 when the capture cannot be read (``mcp:error`` on stderr)."""
    try:
        registry = SchemaRegistry(assert_formats=True) if args.assert_formats else None
        registry = registry or default_registry()
        lock = None if args.lock is None else _lock_check(args.lock, args.lock_server, registry)
        capture, version, codes = Path(args.capture), args.protocol_version, args.allow_codes
        limit = _frame_limit(args.max_frame_bytes)
        report = check_capture(
            capture, registry=registry, version=version, allow_codes=codes, lock=lock, max_frame_bytes=limit
        )
    except CaptureError as exc:
        detail = " ".join(exc.detail.split())
        sys.stderr.write(f"mcp:error reason={exc.reason} detail={detail}\n")
        return 2
    # Examples quote what the capture holds: every format shows them as the gateway's report would, redacted.
    document = Redactor.build().redact_record(report.to_document())[0]
    render = _RENDERERS.get(args.format)
    sys.stdout.write(render_page(document, Path(args.capture)) if render is None else render(document))
    sys.stdout.flush()
    return 1 if report.violations else 0


def _frame_limit(given: int | None) -> int:
    """``--max-frame-bytes``, else ``MCP_MAX_FRAME_BYTES``, else the default: the live chain's limit."""
    if given is not None:
        return given
    try:
        return Settings.from_env({"MCP_MAX_FRAME_BYTES": os.environ.get("MCP_MAX_FRAME_BYTES", "")}).max_frame_bytes
    except SetupError as exc:
        raise CaptureError("bad_limit", str(exc)) from None


def _lock_check(path: Path, server: str | None, registry: SchemaRegistry) -> LockCheck:
    """The lockfile the capture's tools are held to; one that is not a sound lockfile is unusable input."""
    try:
        lock = Lockfile.load(path, registry)
    except SetupError as exc:
        raise CaptureError("bad_lockfile", str(exc)) from None
    if server is not None and server not in lock.servers:
        raise CaptureError("bad_lockfile", f"lockfile {path}: no server {server!r}")
    return LockCheck(lock, server)
