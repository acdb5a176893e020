"""W3C trace context across the gateway: the caller's ``traceparent`` read, a span of the gateway's
own made its child, and what the forwarded call carries. Plain values; OpenTelemetry export is
``otel.py``'s (imported only when it is on), behind the same ``Tracer`` face.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = ["TRACEPARENT", "TRACESTATE", "Span", "TraceParent", "Tracer", "incoming"]

TRACEPARENT, TRACESTATE = "traceparent", "tracestate"  # the header names, and the keys in ``_meta``
_FORM = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
_ZERO_TRACE, _ZERO_SPAN = "0" * 32, "0" * 16


class TraceParent(NamedTuple):
    trace_id: str
    span_id: str
    flags: str
    state: str | None = None  # ``tracestate``, carried as it came


def _parse(value: Any, state: Any) -> TraceParent | None:
    """A ``traceparent`` per W3C Trace Context §3.2 (version ``ff`` and all-zero ids are invalid)."""
    found = _FORM.match(value) if isinstance(value, str) else None
    if found is None:
        return None
    version, trace_id, span_id, flags = found.groups()
    if version == "ff" or trace_id == _ZERO_TRACE or span_id == _ZERO_SPAN:
        return None
    return TraceParent(trace_id, span_id, flags, state if isinstance(state, str) and state else None)


def incoming(meta: Any, headers: Mapping[str, str] | None) -> TraceParent | None:
    """The caller's trace context: ``params._meta.traceparent`` (the message's own), else the HTTP
    request's ``traceparent`` header; ``tracestate`` from the same place."""
    if type(meta) is dict and TRACEPARENT in meta:  # parsed JSON: a dict (an exact test is the cheap one)
        found = _parse(meta[TRACEPARENT], meta.get(TRACESTATE))
        if found is not None:
            return found
    if headers is not None and TRACEPARENT in headers:
        return _parse(headers[TRACEPARENT], headers.get(TRACESTATE))
    return None


class Span(NamedTuple):
    """The gateway's span of one call: its ids, its parent's (the caller's span, when it gave one),
    and the exporter's handle (OpenTelemetry's span, when it is on)."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    flags: str
    state: str | None = None
    handle: Any = None

    @property
    def traceparent(self) -> str:
        return f"00-{self.trace_id}-{self.span_id}-{self.flags}"

    def meta(self, meta: Mapping[str, Any] | None) -> dict[str, Any]:
        """``_meta`` of the forwarded call: the caller's, with this span as the parent."""
        carried = {**(meta or {}), TRACEPARENT: self.traceparent}
        if self.state is not None:
            carried[TRACESTATE] = self.state
        return carried


class Tracer:
    """Propagation only: a call that came with a trace gets a span id of the gateway's own (a child
    of the caller's); one without gets none. Nothing is exported. With a ``seed`` (a deterministic
    run) the span ids are derived from it and the order of the calls: a golden log stays golden."""

    always = False  # whether every forwarded call gets a span (an exporter's root spans)

    def __init__(self, seed: str | None = None) -> None:
        self._seed = seed
        self._count = 0

    def start(self, parent: TraceParent | None, method: str, tool: str | None) -> Span | None:
        if parent is None:
            return None
        return Span(parent.trace_id, self._span_id(parent), parent.span_id, parent.flags, parent.state)

    def _span_id(self, parent: TraceParent) -> str:
        if self._seed is None:
            return os.urandom(8).hex()
        self._count += 1
        return hashlib.sha256(f"{self._seed}:span:{self._count}:{parent.span_id}".encode()).hexdigest()[:16]

    def end(self, span: Span, verdict: str, *, error: bool = False) -> None:
        """The call is answered (``verdict``: what the gateway did with it); nothing to export here."""

    def close(self) -> None:
        """The run ends: what an exporter holds is sent."""
