"""The conformance report: frames per direction and method, violations per rule, method and tool.

Plain counters while the gateway runs; written as JSON (and a short table on stderr) on exit
and on SIGUSR1. ``mcp-server report FILE`` prints the table again.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import jsonio
from ..events import EventLog
from ..redaction import Redactor
from ..registry import schema_provenance
from ..types import Direction

__all__ = ["EXAMPLES_PER_RULE", "ConformanceReport", "main_report", "nested", "render_table"]


def nested(counts: Mapping[tuple[Any, str], int]) -> dict[str, dict[str, int]]:
    """``{(outer, inner): n}`` → ``{outer: {inner: n}}``, sorted: the report's tables of counts."""
    table: dict[str, dict[str, int]] = {}
    for (outer, inner), count in sorted(counts.items(), key=lambda item: (str(item[0][0]), item[0][1])):
        table.setdefault(str(outer), {})[inner] = count
    return table


EXAMPLES_PER_RULE = 3


class ConformanceReport:
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
        self.examples: dict[str, list[dict[str, Any]]] = {}
        self.protocol_version: str | None = None

    def frame(self, direction: Direction, method: str | None) -> None:
        self.frames[(direction.value, method or "(response)")] += 1

    def violation(
        self,
        rule: str,
        *,
        direction: Direction,
        method: str | None = None,
        tool: str | None = None,
        request_id: Any = None,
        errors: Any = (),
        action: str = "",
        excerpt: str | None = None,
        patch: Any = None,
    ) -> dict[str, Any]:
        """Count a violation; return its event (for the log)."""
        self.violations[rule] += 1
        self.by_method[(rule, method or "(response)")] += 1
        if tool is not None:
            self.by_tool[(rule, tool)] += 1
        event: dict[str, Any] = {
            "rule": rule,
            "direction": direction.value,
            "method": method,
            "tool": tool,
            "id": request_id,
            "action": action,
            "errors": list(errors)[:10],
        }
        if excerpt is not None:
            event["excerpt"] = excerpt
        if patch is not None:
            event["patch"] = patch
        event, applied = self.redactor.redact(event)
        event["redaction_applied"] = applied
        if self.events is not None:
            self.events.emit(
                "violation",
                rule=rule,
                direction=direction.value,
                method=method,
                tool_id=tool,
                request_id=event["id"],
                action=action,
                status="error",
                redaction_applied=applied,
                error={"code": rule, "message": rule.replace("_", " "), "details": list(event["errors"])},
                **{key: event[key] for key in ("patch", "excerpt") if key in event},
            )
        examples = self.examples.setdefault(rule, [])
        if len(examples) < EXAMPLES_PER_RULE:
            examples.append(event)
        return event

    def to_document(self) -> dict[str, Any]:
        frames, per_method, per_tool = nested(self.frames), nested(self.by_method), nested(self.by_tool)
        return {
            "upstream": self.redactor.redact_text(self.upstream)[0],
            "mode": self.mode,
            "protocol_version": self.protocol_version,
            "started": self.started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "frames": frames,
            "violations": dict(sorted(self.violations.items())),
            "violations_by_method": per_method,
            "violations_by_tool": per_tool,
            "examples": {rule: self.examples[rule] for rule in sorted(self.examples)},
            "schemas": [dict(entry) for entry in schema_provenance()],  # the bytes the verdicts came from
        }

    def write(self, runs_dir: Path) -> Path:
        """Write the report atomically under ``runs_dir``; return its path."""
        folder = runs_dir / "mcp_server" / "gateway"
        folder.mkdir(parents=True, exist_ok=True)
        stamp = self.started.strftime("%Y%m%dT%H%M%SZ")
        path = folder / f"{stamp}-{os.getpid()}-report.json"
        temporary = path.with_suffix(".tmp")
        temporary.write_bytes(jsonio.dumps_pretty(self.to_document()))
        temporary.replace(path)
        return path


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
        lines.append(f"  violation {rule}: {count} (methods: {methods}{'; tools: ' + tools if tools else ''})")
        for example in document.get("examples", {}).get(rule, [])[:1]:
            paths = ", ".join(str(e.get("path")) for e in example.get("errors", [])[:3] if isinstance(e, Mapping))
            lines.append(f"    e.g. {example.get('direction')} id={example.get('id')} {paths}".rstrip())
    return "\n".join(lines) + "\n"


def main_report(argv: list[str]) -> int:
    """``mcp-server report FILE``: print a written report's table again."""
    if len(argv) != 1:
        sys.stderr.write("usage: mcp-server report REPORT.json\n")
        return 2
    try:
        document = jsonio.loads(Path(argv[0]).read_bytes())
    except OSError as exc:
        sys.stderr.write(f"mcp:error reason=io_error detail={argv[0]}: {exc.strerror}\n")
        return 2
    except jsonio.JSONSyntaxError:
        sys.stderr.write(f"mcp:error reason=parse_error detail={argv[0]} is not a JSON report\n")
        return 2
    if not isinstance(document, dict) or "violations" not in document:
        sys.stderr.write(f"mcp:error reason=parse_error detail={argv[0]} is not a conformance report\n")
        return 2
    sys.stdout.write(render_table(document))
    return 1 if document["violations"] else 0
