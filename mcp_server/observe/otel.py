"""OpenTelemetry export of the gateway's spans (the ``otel`` extra): one span per forwarded call, with
its method, tool, verdict and latency, the caller's span as its parent. Imported only when on
(``--otel`` or ``MCP_OTEL=1``); the exporter follows the standard ``OTEL_*`` environment.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from time import perf_counter

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState

from ..core.settings import SetupError
from .tracing import Span, TraceParent, Tracer

__all__ = ["OtelTracer", "exporter_from_env"]

_DEFAULT_SERVICE = "mcp-server-gateway"


def exporter_from_env(environ: Mapping[str, str]) -> SpanExporter | None:
    """``OTEL_TRACES_EXPORTER``: ``otlp`` (the default; its package, opentelemetry-exporter-otlp, reads
    ``OTEL_EXPORTER_OTLP_*``), ``console`` (on stderr: stdout may be the protocol's) or ``none``."""
    name = environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",")[0].strip()
    if name == "none":
        return None
    if name == "console":
        return ConsoleSpanExporter(out=sys.stderr)
    if name != "otlp":
        raise SetupError(f"OTEL_TRACES_EXPORTER must be otlp, console or none, got {name!r}")
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[import-not-found,unused-ignore]
            OTLPSpanExporter,
        )
    except ImportError:
        raise SetupError("OTLP export needs `pip install opentelemetry-exporter-otlp-proto-http`") from None
    exporter: SpanExporter = OTLPSpanExporter()
    return exporter


class OtelTracer(Tracer):
    """Every forwarded call gets a span (a root one when the caller gave no trace), exported through
    ``exporter`` (in batches; ``batch=False``: each as it ends)."""

    always = True

    def __init__(self, exporter: SpanExporter | None, *, batch: bool = True) -> None:
        resource = Resource.create()  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
        if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
            resource = resource.merge(Resource({"service.name": _DEFAULT_SERVICE}))
        self._provider = TracerProvider(resource=resource)
        if exporter is not None:
            processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
            self._provider.add_span_processor(processor)
        self._tracer = self._provider.get_tracer("mcp_server.gateway")

    def start(self, parent: TraceParent | None, method: str, tool: str | None) -> Span | None:
        context = None
        if parent is not None:
            state = TraceState.from_header([parent.state]) if parent.state else None
            remote = SpanContext(
                int(parent.trace_id, 16),
                int(parent.span_id, 16),
                is_remote=True,
                trace_flags=TraceFlags(int(parent.flags, 16)),
                trace_state=state,
            )
            context = trace.set_span_in_context(NonRecordingSpan(remote))
        attributes = {"mcp.method": method, **({"mcp.tool": tool} if tool is not None else {})}
        span = self._tracer.start_span(
            f"{method} {tool}" if tool else method, context=context, kind=SpanKind.SERVER, attributes=attributes
        )
        own = span.get_span_context()
        return Span(
            format(own.trace_id, "032x"),
            format(own.span_id, "016x"),
            None if parent is None else parent.span_id,
            format(own.trace_flags, "02x"),
            None if parent is None else parent.state,
            (span, perf_counter()),
        )

    def end(self, span: Span, verdict: str, *, error: bool = False) -> None:
        handle, began = span.handle
        handle.set_attribute("mcp.verdict", verdict)
        handle.set_attribute("mcp.latency_ms", round((perf_counter() - began) * 1000, 3))
        if error:
            handle.set_status(Status(StatusCode.ERROR))
        handle.end()

    def close(self) -> None:
        self._provider.shutdown()
