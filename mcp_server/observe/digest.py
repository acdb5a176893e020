"""What a run's event log says beyond the report's counters: the time the gateway added per frame,
the session's timeline, the protocol versions seen, the policy's decisions, the tool changes.

Read once the run is over (never on the request path), event by event; memory stays bounded but
for one float per measured frame (the percentiles are exact).
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from ..core import jsonio

__all__ = ["LISTED", "RunDigest", "digest_log", "log_files", "percentile"]

LISTED = 200
"""Moments, policy decisions and tool changes listed whole; the rest are counted."""

_MAX_BINS = 4096  # the timeline's bins before they are merged two by two
_FIRST_BIN = 0.01  # seconds: a short run's timeline still shows its shape
_MOMENTS = frozenset({"start", "stop", "upstream", "violation", "policy"})


def percentile(ordered: Iterable[float], share: float) -> float:
    """The nearest-rank percentile of sorted values (``share`` in 0..1)."""
    values = list(ordered)
    if not values:
        return 0.0
    rank = max(1, -(-len(values) * share // 1))
    return values[min(int(rank), len(values)) - 1]


def _seconds(stamp: Any) -> float | None:
    """An event's ``ts`` (ISO-8601 UTC) as seconds since the epoch; ``None`` when it is not one."""
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class RunDigest:
    """The fold over a run's events: ``add`` each in order, then ``to_document``."""

    def __init__(self) -> None:
        self.events = 0
        self.deterministic = False
        self.first: str | None = None
        self.last: str | None = None
        self._origin: float | None = None
        self.bin_seconds = _FIRST_BIN
        self.frame_bins: Counter[int] = Counter()
        self.violation_bins: Counter[int] = Counter()
        self.durations: dict[str, array[float]] = {}
        self.versions: Counter[str] = Counter()
        self.policy: Counter[str] = Counter()
        self.decisions: list[dict[str, Any]] = []
        self.tool_changes: list[dict[str, Any]] = []
        self.moments: list[dict[str, Any]] = []
        self.left_off: Counter[str] = Counter()
        self.schemas: list[Any] = []

    def add(self, event: Mapping[str, Any]) -> None:
        kind = event.get("event")
        if not isinstance(kind, str):
            return
        self.events += 1
        metadata = event.get("metadata")
        if isinstance(metadata, Mapping) and metadata.get("deterministic") is True:
            self.deterministic = True
        slot = self._clock(event.get("ts"))
        if kind == "frame":
            self._frame(event, slot)
            return
        if kind == "violation":
            self.violation_bins[slot] += 1
            if event.get("rule") == "tool_definition_changed":
                self._listed(self.tool_changes, "tool_changes", _change(event))
        elif kind == "policy":
            self.policy[str(event.get("status"))] += 1
            self._listed(self.decisions, "decisions", _decision(event))
        elif kind == "start":
            detail = event.get("detail")
            if isinstance(detail, Mapping) and isinstance(detail.get("schemas"), list):
                self.schemas = list(detail["schemas"])
        if kind in _MOMENTS:
            self._listed(self.moments, "moments", _moment(event))

    def _clock(self, stamp: Any) -> int:
        """The timeline's bin of an event (and the run's first and last ``ts`` kept)."""
        when = _seconds(stamp)
        if when is None:
            return 0
        if self._origin is None:
            self._origin, self.first = when, stamp
        self.last = stamp
        offset = max(0.0, when - self._origin)
        while offset / self.bin_seconds >= _MAX_BINS:  # a long run: coarser bins, the same memory
            self.bin_seconds *= 2
            self.frame_bins = _merged(self.frame_bins)
            self.violation_bins = _merged(self.violation_bins)
        return int(offset / self.bin_seconds)

    def _frame(self, event: Mapping[str, Any], slot: int) -> None:
        self.frame_bins[slot] += 1
        duration = event.get("duration_ms")
        # A reply the gateway made itself is an event of no bytes in and no time of its own.
        if not isinstance(duration, int | float) or not (event.get("bytes_in") or duration):
            return
        self.durations.setdefault(str(event.get("direction")), array("d")).append(float(duration))
        version = event.get("protocol_version")
        if isinstance(version, str):
            self.versions[version] += 1

    def _listed(self, into: list[dict[str, Any]], name: str, entry: dict[str, Any]) -> None:
        if len(into) < LISTED:
            into.append(entry)
        else:
            self.left_off[name] += 1

    def to_document(self) -> dict[str, Any]:
        bins = max([*self.frame_bins, *self.violation_bins], default=-1) + 1
        return {
            "events": self.events,
            "deterministic": self.deterministic,
            "first": self.first,
            "last": self.last,
            "timeline": {
                "bin_seconds": self.bin_seconds,
                "frames": [self.frame_bins.get(i, 0) for i in range(bins)],
                "violations": [self.violation_bins.get(i, 0) for i in range(bins)],
            },
            "added_latency_ms": {direction: _spread(values) for direction, values in sorted(self.durations.items())},
            "protocol_versions": dict(sorted(self.versions.items())),
            "policy": dict(sorted(self.policy.items())),
            "decisions": self.decisions,
            "tool_changes": self.tool_changes,
            "moments": self.moments,
            "left_off": dict(sorted(self.left_off.items())),
            "schemas": self.schemas,
        }


def _merged(bins: Counter[int]) -> Counter[int]:
    merged: Counter[int] = Counter()
    for index, count in bins.items():
        merged[index // 2] += count
    return merged


def _spread(values: array[float]) -> dict[str, float | int]:
    ordered = sorted(values)
    spread: dict[str, float | int] = {"frames": len(ordered)}
    for name, share in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
        spread[name] = percentile(ordered, share)
    spread["max"] = ordered[-1] if ordered else 0.0
    return spread


def _change(event: Mapping[str, Any]) -> dict[str, Any]:
    patch = event.get("patch")
    return {
        "ts": event.get("ts"),
        "tool": event.get("tool_id"),
        "request_id": event.get("request_id"),
        "patch": patch if isinstance(patch, list) else [],
    }


def _details(event: Mapping[str, Any]) -> list[Any]:
    error = event.get("error")
    details = error.get("details") if isinstance(error, Mapping) else None
    return list(details) if isinstance(details, list) else []


def _decision(event: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "ts": event.get("ts"),
        "status": event.get("status"),
        "session": event.get("session_id"),
        "method": event.get("method"),
        "tool": event.get("tool_id"),
        "request_id": event.get("request_id"),
        "errors": _details(event)[:3],
    }


def _moment(event: Mapping[str, Any]) -> dict[str, Any]:
    """A line of the timeline: what happened, to what, and how it ended."""
    error = event.get("error")
    return {
        "ts": event.get("ts"),
        "event": event.get("event"),
        "status": event.get("status"),
        "rule": event.get("rule") or (error.get("code") if isinstance(error, Mapping) else None),
        "direction": event.get("direction"),
        "method": event.get("method"),
        "tool": event.get("tool_id"),
        "request_id": event.get("request_id"),
    }


def log_files(path: Path) -> list[Path]:
    """A run's log in order: its rotated files (``<stem>.<n>.jsonl``, oldest first), then ``path``."""
    path = path.resolve()  # ``.latest`` names the run by a link
    stem = path.name.removesuffix(".jsonl")
    rotated = []
    for candidate in path.parent.glob(f"{stem}.*.jsonl"):
        number = candidate.name[len(stem) + 1 : -len(".jsonl")]
        if number.isdigit():
            rotated.append((int(number), candidate))
    return [candidate for _, candidate in sorted(rotated)] + [path]


def digest_log(path: Path, *, rotated: bool = True) -> RunDigest:
    """The digest of the run logged at ``path`` (``rotated``: its rotated files first). A line that
    is not an event (a raw capture's frame) adds nothing; ``OSError`` when a file cannot be read."""
    digest = RunDigest()
    for file in log_files(path) if rotated else [path]:
        with file.open("rb") as lines:
            for line in lines:
                try:
                    event = jsonio.loads(line) if line.strip() else None
                except jsonio.JSONSyntaxError:
                    continue
                if isinstance(event, dict) and "metadata" in event:
                    digest.add(event)
    return digest
