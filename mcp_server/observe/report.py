"""The conformance report: frames per direction and method, violations per rule, method, tool and
party at fault, the same per session, and the requests that ended without their peer's answer.

Plain counters while the gateway runs; written as JSON (and a short table on stderr) on exit
and on SIGUSR1. ``mcp-server report FILE`` prints the table again; ``--html OUT`` writes the page
(``html.py``), with the timings and timeline read from the run's event log the report names.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..core import jsonio
from ..core.files import PRIVATE, write_atomic
from ..core.session import Session
from ..core.types import ERROR_RESPONSE, RESPONSE, SERVER_TO_CLIENT, Direction, MessageKind, RequestId
from ..execution.redaction import Redactor
from ..registry.schemas import schema_provenance
from .digest import digest_log
from .events import EventLog

__all__ = [
    "EXAMPLES_PER_RULE",
    "EXCERPT_CHARS",
    "EXCERPT_DEPTH",
    "UNANSWERED_LISTED",
    "ConformanceReport",
    "ReportError",
    "head_of",
    "method_key",
    "nested",
    "party_of",
    "render_table",
    "run_digest",
    "write_page",
]


def nested(counts: Mapping[tuple[Any, str], int]) -> dict[str, dict[str, int]]:
    """``{(outer, inner): n}`` → ``{outer: {inner: n}}``, sorted: the report's tables of counts."""
    table: dict[str, dict[str, int]] = {}
    for (outer, inner), count in sorted(counts.items(), key=lambda item: (str(item[0][0]), item[0][1])):
        table.setdefault(str(outer), {})[inner] = count
    return table


EXAMPLES_PER_RULE = 5
"""Violations kept whole per rule (the live report's and ``check``'s alike); the rest are counted."""
EXCERPT_CHARS = 400
"""An example's excerpt of the frame that broke the rule, at most."""
UNANSWERED_LISTED = 100
"""Requests ended without an answer listed whole; the rest are counted by reason."""


def head_of(value: Any, chars: int) -> Any:
    """A copy of ``value`` holding about its first ``chars`` characters of JSON: strings shortened,
    arrays and objects ended early, and nothing deeper than ``EXCERPT_DEPTH`` levels (a frame nested
    a thousand deep is shown as its first levels: the JSON module writes no deeper than 255). An
    excerpt of that length is the same; what it cannot show is never copied, nor looked at again (a
    frame of a million small items costs no more than one)."""
    return _head(value, chars, EXCERPT_DEPTH)[0]


EXCERPT_DEPTH = 64
"""Levels of nesting an excerpt shows at most."""


def _head(value: Any, budget: int, depth: int) -> tuple[Any, int]:
    if isinstance(value, str):
        return value[: max(budget, 0)], budget - len(value) - 2
    if depth <= 0 and isinstance(value, (Mapping, list, tuple)):
        return "…", budget - 3
    if isinstance(value, Mapping):
        shown: dict[Any, Any] = {}
        for key, item in value.items():
            if budget <= 0:
                break
            shown[key], budget = _head(item, budget - len(str(key)) - 4, depth - 1)
        return shown, budget - 2
    if isinstance(value, (list, tuple)):
        items = []
        for item in value:
            if budget <= 0:
                break
            shown_item, budget = _head(item, budget - 1, depth - 1)
            items.append(shown_item)
        return items, budget - 2
    return value, budget - 8


_DIRECTION_NAMES: dict[Direction | None, str] = {None: "(unknown)", **{d: d.value for d in Direction}}
"""A direction's name in the counts, read once (an enum's ``value`` is a property call)."""


def _named(carried: Counter[tuple[Direction, str | None]]) -> Counter[tuple[str, str]]:
    """Carried counts under their directions' names, as the frames are counted (a carried frame is a
    request or its reply: one that names no method is a reply whose request was not known)."""
    return Counter(
        {(_DIRECTION_NAMES[direction], method or "(response)"): n for (direction, method), n in carried.items()}
    )


def party_of(direction: Direction | None) -> str:
    """Who sent a frame going in ``direction``: the party at fault when it breaks a rule (``None``: a
    captured line whose sender is not known)."""
    if direction is None:
        return "(unknown)"
    return "upstream" if direction is SERVER_TO_CLIENT else "client"


def method_key(method: str | None, kind: MessageKind | None) -> str:
    """How a violation is filed by method: a response under the method it answers, marked as a
    response (the fault is the replier's, not the requester's); a frame that names no method as
    not JSON-RPC."""
    if kind is RESPONSE or kind is ERROR_RESPONSE:
        return f"{method} (response)" if method else "(response)"
    return method or "(not json-rpc)"


class ReportError(Exception):
    """A report that cannot be read, or a page that cannot be written (exit 2)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = " ".join(detail.split())


class _SessionCounts:
    """One session's share of the report."""

    __slots__ = ("by_party", "carried", "frames", "protocol_version", "server", "session", "transport", "unanswered")

    def __init__(self, session: Session, transport: str, server: str | None = None) -> None:
        self.session = session  # named by its id when the report is written (HTTP issues it late)
        self.transport = transport
        self.server = server  # an aggregate's member: the server's name
        self.protocol_version: str | None = None
        self.frames: Counter[tuple[str, str]] = Counter()
        self.carried: Counter[tuple[Direction, str | None]] = (
            Counter()
        )  # frames checked in another session (``carried``)
        self.by_party: Counter[tuple[str, str]] = Counter()  # (rule, party)
        self.unanswered: Counter[str] = Counter()  # reason

    def to_document(self) -> dict[str, Any]:
        by_party = nested(self.by_party)
        server = {} if self.server is None else {"server": self.server}
        return {
            "id": self.session.id,
            **server,
            "transport": self.transport,
            "protocol_version": self.protocol_version,
            "frames": nested(self.all_frames()),
            "violations": {rule: sum(parties.values()) for rule, parties in by_party.items()},
            "violations_by_party": by_party,
            "unanswered": dict(sorted(self.unanswered.items())),
        }

    def all_frames(self) -> Counter[tuple[str, str]]:
        """Its frames, those counted in passing and those carried."""
        return self.frames + _named(self.carried) if self.carried else self.frames


class ConformanceReport:
    """What a run found: frames per direction and method, violations per rule (by method, tool,
    party and direction) with a few examples each, per session. The one report model of the gateway
    and of ``check`` (``offline/check.py`` adds the capture's own header); ``line`` is the capture's
    line being read, which ``check``'s examples name."""

    def __init__(
        self, *, upstream: str, mode: str, redactor: Redactor | None = None, events: EventLog | None = None
    ) -> None:
        """``redactor`` hides secrets in every event and example (default: the built-in patterns);
        ``events``: the run's event log, which gets each violation as an event of its own."""
        self.redactor = redactor or Redactor.build()
        self.events = events
        self.upstream = upstream
        self.mode = mode
        self.started = datetime.now(UTC)
        self.frames: Counter[tuple[str, str]] = Counter()
        self.violations: Counter[str] = Counter()
        self.by_method: Counter[tuple[str, str]] = Counter()
        self.by_tool: Counter[tuple[str, str]] = Counter()
        self.by_party: Counter[tuple[str, str]] = Counter()
        self.by_direction: Counter[tuple[str, str]] = Counter()
        self.line: int | None = None
        self.examples: dict[str, list[dict[str, Any]]] = {}
        self.protocol_version: str | None = None
        self.sessions: dict[int, _SessionCounts] = {}  # by the session object (its id may change)
        self.unanswered: list[dict[str, Any]] = []
        self.unanswered_by_reason: Counter[str] = Counter()

    def open_session(self, session: Session, transport: str, server: str | None = None) -> None:
        """A session of the gateway begins: it gets an entry of its own (``server``: the member of an
        aggregate it is a session with, for the report's section per server)."""
        self.sessions[id(session)] = _SessionCounts(session, transport, server)

    def carried(self, session: Session) -> Counter[tuple[Direction, str | None]]:
        """Where the frames of ``session`` are counted that another session checks for it (an
        aggregate's call routed at the client's version: ADR 38), by direction and method, one
        increment each; they join its section and the run's table when the report is written."""
        counts = self._of(session)
        return counts.carried if counts is not None else Counter()

    def _of(self, session: Session | None) -> _SessionCounts | None:
        return None if session is None else self.sessions.get(id(session))

    def negotiated(self, session: Session, version: str | None) -> None:
        """The version a session's handshake settled on."""
        self.protocol_version = version
        counts = self._of(session)
        if counts is not None:
            counts.protocol_version = version

    def frame(
        self, direction: Direction | None, method: str | None, kind: MessageKind | None, session: Session | None = None
    ) -> None:
        """A frame counted under the method it names, or for a response the method it answers (in
        its direction's table: a response is told by its direction); ``(response)`` when that is
        not known, ``(not json-rpc)`` for a frame of no kind or naming no method (``direction``
        ``None``: a captured line of no known sender, ``(unknown)``)."""
        if method is None:
            method = "(response)" if kind is RESPONSE or kind is ERROR_RESPONSE else "(not json-rpc)"
        key = (_DIRECTION_NAMES[direction], method)
        self.frames[key] += 1
        if self.sessions and session is not None:  # (``check`` follows one session and opens none)
            counts = self.sessions.get(id(session))
            if counts is not None:
                counts.frames[key] += 1

    def violation(
        self,
        rule: str,
        *,
        direction: Direction | None,
        method: str | None = None,
        tool: str | None = None,
        request_id: Any = None,
        errors: Any = (),
        action: str = "",
        excerpt: str | None = None,
        patch: Any = None,
        kind: MessageKind | None = None,
        session: Session | None = None,
        document: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Count a violation (``kind``: of the frame that broke the rule, when a frame did); return
        its event (for the log). The party at fault is the sender of a frame going in ``direction``.
        ``document``: that frame, parsed; a kept example shows it, redacted, as its excerpt."""
        party = party_of(direction)
        self.violations[rule] += 1
        self.by_method[(rule, method_key(method, kind))] += 1
        self.by_party[(rule, party)] += 1
        self.by_direction[(rule, "(unknown)" if direction is None else direction.value)] += 1
        if tool is not None:
            self.by_tool[(rule, tool)] += 1
        counts = self._of(session)
        if counts is not None:
            counts.by_party[(rule, party)] += 1
        event: dict[str, Any] = {
            "rule": rule,
            "party": party,
            "direction": None if direction is None else direction.value,
            "session": None if session is None else session.id,
            "method": method,
            "tool": tool,
            "id": request_id,
            "action": action,
            "errors": list(errors)[:10],
        }
        if self.line is not None:
            event["line"] = self.line
        if excerpt is not None:
            event["excerpt"] = excerpt
        if patch is not None:
            event["patch"] = patch
        event, applied = self.redactor.redact_record(event)
        event["redaction_applied"] = applied
        if self.events is not None:
            self._emit(event, applied)
        examples = self.examples.setdefault(rule, [])
        if len(examples) < EXAMPLES_PER_RULE:
            example = event
            if document is not None and "excerpt" not in event:  # the example only: the log keeps its shape
                # Only what the excerpt can show is redacted (twice its length: a secret across the cut is whole).
                shown = jsonio.dumps(self.redactor.redact_frame(head_of(document, 2 * EXCERPT_CHARS))[0]).decode()
                example = {**event, "excerpt": shown[:EXCERPT_CHARS] + ("…" if len(shown) > EXCERPT_CHARS else "")}
            examples.append(example)
        return event

    def _emit(self, event: Mapping[str, Any], applied: bool) -> None:
        """A violation as an event of the run's log (redacted as the report's example is)."""
        assert self.events is not None
        rule = event["rule"]
        self.events.emit(
            "violation",
            rule=rule,
            direction=event["direction"],
            method=event["method"],
            tool_id=event["tool"],
            request_id=event["id"],
            action=event["action"],
            status="error",
            redaction_applied=applied,
            error={"code": rule, "message": rule.replace("_", " "), "details": list(event["errors"])},
            **{key: event[key] for key in ("patch", "excerpt") if key in event},
        )

    def ended_unanswered(
        self,
        session: Session,
        direction: Direction,
        request_id: RequestId,
        method: str,
        reason: str,
        tool: str | None = None,
    ) -> None:
        """A request sent in ``direction`` ended without its peer's answer: cancelled by its sender
        (``client_cancelled``), its session ended by the client (``client_closed``), the gateway
        stopping (``gateway_stopped``), or its peer gone (``upstream_gone``). Not a violation."""
        self.unanswered_by_reason[reason] += 1
        counts = self._of(session)
        if counts is not None:
            counts.unanswered[reason] += 1
        if len(self.unanswered) < UNANSWERED_LISTED:
            entry = {
                "session": session.id,
                "direction": direction.value,
                "id": request_id,
                "method": method,
                "tool": tool,
                "reason": reason,
            }
            self.unanswered.append(self.redactor.redact_record(entry)[0])

    @property
    def total(self) -> int:
        """Every violation counted."""
        return sum(self.violations.values())

    def counts(self) -> dict[str, Any]:
        """The counters and examples, as the report's sections (the gateway's and ``check``'s alike)."""
        frames = sum((_named(counts.carried) for counts in self.sessions.values()), self.frames)
        return {
            "frames": nested(frames),
            "violations": dict(sorted(self.violations.items())),
            "violations_by_method": nested(self.by_method),
            "violations_by_tool": nested(self.by_tool),
            "violations_by_party": nested(self.by_party),
            "violations_by_direction": nested(self.by_direction),
            "examples": {rule: self.examples[rule] for rule in sorted(self.examples)},
        }

    def to_document(self) -> dict[str, Any]:
        return {
            "upstream": self.redactor.redact_text(self.upstream)[0],
            "mode": self.mode,
            "protocol_version": self.protocol_version,
            "started": self.started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            **self.counts(),
            "sessions": [counts.to_document() for counts in self.sessions.values()],
            **_servers(self.sessions.values()),
            "unanswered": list(self.unanswered),
            "unanswered_by_reason": dict(sorted(self.unanswered_by_reason.items())),
            "schemas": [dict(entry) for entry in schema_provenance()],  # the bytes the verdicts came from
        }

    def write(self, runs_dir: Path) -> Path:
        """Write the report atomically under ``runs_dir``; return its path."""
        folder = runs_dir / "mcp_server" / "gateway"
        folder.mkdir(parents=True, exist_ok=True)
        stamp = self.started.strftime("%Y%m%dT%H%M%SZ")
        path = folder / f"{stamp}-{os.getpid()}-report.json"
        document = self.to_document()
        if self.events is not None:  # where the page finds the run's timings (relative: runs/ may move)
            document["event_log"] = os.path.relpath(self.events.path, folder)
        write_atomic(path, jsonio.dumps_pretty(document), mode=PRIVATE)  # it quotes the traffic
        return path


def _servers(sessions: Iterable[_SessionCounts]) -> dict[str, Any]:
    """An aggregate's report: per server (in the order they first opened a session: a list, as the
    report is written with sorted keys), its sessions,
    the versions they spoke, their frames and violations with the party at fault (``{}``: no aggregate)."""
    servers: dict[str, dict[str, Any]] = {}
    for counts in sessions:
        if counts.server is None:
            continue
        entry = servers.setdefault(
            counts.server, {"sessions": [], "protocol_versions": [], "frames": 0, "by_party": Counter()}
        )
        entry["sessions"].append(counts.session.id)
        if counts.protocol_version is not None and counts.protocol_version not in entry["protocol_versions"]:
            entry["protocol_versions"].append(counts.protocol_version)
        entry["frames"] += sum(counts.frames.values()) + sum(counts.carried.values())
        entry["by_party"].update(counts.by_party)
    listed = []
    for name, entry in servers.items():
        by_party = nested(entry.pop("by_party"))
        entry["violations"] = {rule: sum(parties.values()) for rule, parties in by_party.items()}
        listed.append({"name": name, **entry, "violations_by_party": by_party})
    return {"servers": listed} if listed else {}


def render_table(document: Mapping[str, Any]) -> str:
    lines = [
        f"conformance report: upstream={document.get('upstream')} mode={document.get('mode')} "
        f"protocol={document.get('protocol_version')}"
    ]
    for direction, methods in document.get("frames", {}).items():
        total = sum(methods.values())
        detail = ", ".join(f"{method}={count}" for method, count in methods.items())
        lines.append(f"  frames {direction}: {total} ({detail})")
    violations = document.get("violations", {})
    if not violations:
        lines.append("  violations: none")
    for rule, count in violations.items():
        methods = ", ".join(f"{m}={c}" for m, c in document.get("violations_by_method", {}).get(rule, {}).items())
        tools = ", ".join(f"{t}={c}" for t, c in document.get("violations_by_tool", {}).get(rule, {}).items())
        parties = ", ".join(f"{p}={c}" for p, c in document.get("violations_by_party", {}).get(rule, {}).items())
        lines.append(
            f"  violation {rule}: {count} (methods: {methods}{'; tools: ' + tools if tools else ''}"
            f"{'; party: ' + parties if parties else ''})"
        )
        for example in document.get("examples", {}).get(rule, [])[:1]:
            paths = ", ".join(str(e.get("path")) for e in example.get("errors", [])[:3] if isinstance(e, Mapping))
            lines.append(f"    e.g. {example.get('direction')} id={example.get('id')} {paths}".rstrip())
    lines += _session_lines(document)
    for entry in document.get("servers", []):
        rules = ", ".join(f"{rule}={count}" for rule, count in entry.get("violations", {}).items())
        versions = ", ".join(entry.get("protocol_versions", [])) or "none"
        lines.append(
            f"  server {entry.get('name')}: {len(entry.get('sessions', []))} session(s), protocol {versions}, frames"
            f" {entry.get('frames')}; violations: {rules or 'none'}"
        )
    return "\n".join(lines) + "\n"


def _session_lines(document: Mapping[str, Any]) -> list[str]:
    """Per session: frames, violations with the party at fault, requests ended unanswered; then
    the unanswered requests listed (a report of an older gateway has none of these)."""
    lines = []
    for entry in document.get("sessions", []):
        frames = sum(sum(methods.values()) for methods in entry.get("frames", {}).values())
        faults = ", ".join(
            f"{rule}: {sum(parties.values())} ({', '.join(parties)})"
            for rule, parties in entry.get("violations_by_party", {}).items()
        )
        ended = ", ".join(f"{reason}={count}" for reason, count in entry.get("unanswered", {}).items())
        lines.append(
            f"  session {entry.get('id')} ({entry.get('transport')}): frames {frames}; violations: {faults or 'none'}"
            f"{'; unanswered: ' + ended if ended else ''}"
        )
    for entry in document.get("unanswered", []):
        lines.append(
            f"  unanswered {entry.get('direction')} id={entry.get('id')} {entry.get('method')}: {entry.get('reason')}"
        )
    return lines


def run_digest(report: Path, document: Mapping[str, Any]) -> dict[str, Any] | None:
    """The digest of the run's event log the report names (``None`` without one, or when it is gone)."""
    named = document.get("event_log")
    if not isinstance(named, str):
        return None
    try:
        return digest_log(report.parent / named).to_document()
    except OSError:
        return None


def write_page(out: Path, page: str) -> None:
    """The page written whole or not at all; ``ReportError`` when ``out`` cannot be written."""
    try:
        write_atomic(out, page.encode(), mode=PRIVATE)
    except OSError as exc:
        raise ReportError("io_error", f"cannot write {out}: {exc.strerror}") from None
