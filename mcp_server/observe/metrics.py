"""Prometheus metrics, counted from the event log's rows as their batch is sent.

Frames by direction, method and status; violations by rule; latency histograms per method and
per tool; upstream restarts. Counting is plain integer arithmetic on the event loop's thread (no
lock, no thread that holds the interpreter); the Prometheus text is made only when scraped. Label
values are bounded: a method no bundled schema defines is counted as ``(other)``, and so is every
tool past the first ``MAX_TOOL_LABELS``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric

from ..registry.schemas import SchemaRegistry
from .events import FRAME_ROW
from .writer import EMITTED_ROW, PASSED_LENGTH

__all__ = ["CONTENT_TYPE", "MAX_TOOL_LABELS", "Metrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
MAX_TOOL_LABELS = 1000
_OTHER = "(other)"
_NONE = "(none)"
_REFUSED = tuple(
    map(FRAME_ROW.index, ("direction", "kind", "method", "tool_id", "status", "seconds", "error", "action"))
)  # where a refused frame's row holds what ``Metrics._frame`` counts, in its order
_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class _Histogram:
    __slots__ = ("counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * (len(_BUCKETS) + 1)  # the last: above every bound (+Inf only)
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(_BUCKETS, seconds)] += 1
        self.total += seconds

    def buckets(self) -> list[tuple[str, float]]:
        running, out = 0, []
        for bound, count in zip((*(str(b) for b in _BUCKETS), "+Inf"), self.counts, strict=True):
            running += count
            out.append((bound, float(running)))
        return out


class Metrics:
    def __init__(self, registry: SchemaRegistry, extra_methods: Iterable[str] = ()) -> None:
        """``extra_methods``: method names beside the MCP ones (a server's own tools called directly)."""
        known = set(extra_methods)
        for version in registry.versions:
            protocol = registry.protocol(version)
            known |= protocol.request_methods | protocol.notification_methods
        self.known_methods = frozenset(known)
        self.frames: dict[tuple[str, str, str], int] = {}
        self.violations: dict[str, int] = {}
        self.frame_seconds: dict[str, _Histogram] = {}
        self.tool_seconds: dict[str, _Histogram] = {}
        self.upstream_restarts = 0
        self._upstreams_started = 0
        self._tools: set[str] = set()
        self.registry = CollectorRegistry()  # per instance: two servers in one process never share counts
        self.registry.register(self)

    def _method(self, method: Any) -> str:
        if method is None:
            return _NONE
        return method if method in self.known_methods else _OTHER

    def _tool(self, tool: str) -> str:
        if tool in self._tools:
            return tool
        if len(self._tools) >= MAX_TOOL_LABELS:
            return _OTHER
        self._tools.add(tool)
        return tool

    def count(self, row: Sequence[Any]) -> None:
        """Count one event-log row (``events.EventLog`` sends them; see its ``frame``, ``refused`` and ``emit``)."""
        if len(row) == PASSED_LENGTH:  # events.PASSED_ROW: a frame the chain passed
            when, began, _, _, _, direction, kind, _, method, tool, _, _, _, reply, _ = row
            self._frame(direction, kind, method, tool, "ok" if reply is None else reply[1], when - began, None, None)
        elif len(row) != EMITTED_ROW:  # events.FRAME_ROW: a frame the chain refused
            self._frame(*(row[at] for at in _REFUSED))
        else:
            self._emitted(row[1], row[3])

    def _frame(
        self, direction: Any, kind: Any, method: Any, tool: Any, status: str, seconds: float, error: Any, action: Any
    ) -> None:
        label = self._method(method)
        key = (direction or _NONE, label, status)
        self.frames[key] = self.frames.get(key, 0) + 1
        histogram = self.frame_seconds.get(label)
        if histogram is None:
            histogram = self.frame_seconds[label] = _Histogram()
        histogram.observe(seconds)
        if tool is not None and method == "tools/call" and kind == "request":
            tool_label = self._tool(tool)
            histogram = self.tool_seconds.get(tool_label)
            if histogram is None:
                histogram = self.tool_seconds[tool_label] = _Histogram()
            histogram.observe(seconds)
        if error is not None and action is None:  # a gateway's rejections come as violation events
            rule = error[0].lower()
            self.violations[rule] = self.violations.get(rule, 0) + 1

    def _emitted(self, event: str, fields: dict[str, Any]) -> None:
        if event == "frame":  # refused before the chain: counted by its status, and its error as a rule
            key = (fields.get("direction") or _NONE, _NONE, fields.get("status", "error"))
            self.frames[key] = self.frames.get(key, 0) + 1
            error = fields.get("error")
            if error is not None:
                self.violations[error["code"]] = self.violations.get(error["code"], 0) + 1
        elif event == "violation":
            rule = fields.get("rule") or _NONE
            self.violations[rule] = self.violations.get(rule, 0) + 1
        elif event == "upstream" and fields.get("status") == "started":
            self._upstreams_started += 1
            if self._upstreams_started > 1:
                self.upstream_restarts += 1

    def collect(self) -> Iterator[Metric]:
        """The Prometheus collector protocol: the families, made at scrape time."""
        frames = CounterMetricFamily("mcp_frames", "Frames through the chain", labels=["direction", "method", "status"])
        for labels, value in sorted(self.frames.items()):
            frames.add_metric(list(labels), value)
        yield frames
        violations = CounterMetricFamily("mcp_violations", "Violations found, by rule", labels=["rule"])
        for rule, value in sorted(self.violations.items()):
            violations.add_metric([rule], value)
        yield violations
        for name, documentation, label, histograms in (
            ("mcp_frame_duration_seconds", "Time in the chain per frame", "method", self.frame_seconds),
            ("mcp_tool_call_duration_seconds", "Time in the chain per tools/call", "tool", self.tool_seconds),
        ):
            family = HistogramMetricFamily(name, documentation, labels=[label])
            for label_value, histogram in sorted(histograms.items()):
                family.add_metric([label_value], histogram.buckets(), histogram.total)
            yield family
        restarts = CounterMetricFamily("mcp_upstream_restarts", "Upstream processes started after the first")
        restarts.add_metric([], self.upstream_restarts)
        yield restarts

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)
