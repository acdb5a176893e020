"""Prometheus metrics, fed by the event log (on its writer thread, never on the chain's path).

Frames by direction, method and status; violations by rule; latency histograms per method and
per tool; upstream restarts. Label values are bounded: a method no bundled schema defines is
counted as ``(other)``, and so is every tool past the first ``MAX_TOOL_LABELS``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

from .registry import SchemaRegistry

__all__ = ["CONTENT_TYPE", "MAX_TOOL_LABELS", "Metrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
MAX_TOOL_LABELS = 1000
_OTHER = "(other)"
_NONE = "(none)"
_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    def __init__(self, registry: SchemaRegistry, extra_methods: Iterable[str] = ()) -> None:
        """``extra_methods``: method names beside the MCP ones (a server's own tools called directly)."""
        known = set(extra_methods)
        for version in registry.versions:
            protocol = registry.protocol(version)
            known |= protocol.request_methods | protocol.notification_methods
        self.known_methods = frozenset(known)
        self.registry = CollectorRegistry()  # per instance: two servers in one process never share counts
        self.frames = Counter(
            "mcp_frames", "Frames through the chain", ["direction", "method", "status"], registry=self.registry
        )
        self.violations = Counter("mcp_violations", "Violations found, by rule", ["rule"], registry=self.registry)
        self.frame_seconds = Histogram(
            "mcp_frame_duration_seconds",
            "Time in the chain per frame",
            ["method"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.tool_seconds = Histogram(
            "mcp_tool_call_duration_seconds",
            "Time in the chain per tools/call",
            ["tool"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.upstream_restarts = Counter(
            "mcp_upstream_restarts", "Upstream processes started after the first", registry=self.registry
        )
        self._tools: set[str] = set()
        self._upstreams_started = 0

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

    def sink(self, event: Mapping[str, Any]) -> None:
        """An event log sink: count one event."""
        kind = event["event"]
        if kind == "frame":
            method = self._method(event.get("method"))
            self.frames.labels(event.get("direction") or _NONE, method, event["status"]).inc()
            seconds = event["duration_ms"] / 1000
            self.frame_seconds.labels(method).observe(seconds)
            tool = event.get("tool_id")
            if tool is not None and event.get("method") == "tools/call" and event.get("kind") == "request":
                self.tool_seconds.labels(self._tool(tool)).observe(seconds)
            error = event.get("error")
            if error is not None and "action" not in event:  # a gateway's rejections come as violation events
                self.violations.labels(error["code"]).inc()
        elif kind == "violation":
            self.violations.labels(event.get("rule") or _NONE).inc()
        elif kind == "upstream" and event.get("status") == "started":
            self._upstreams_started += 1
            if self._upstreams_started > 1:
                self.upstream_restarts.inc()

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)
