"""W3C trace context across the gateway, and its OpenTelemetry spans (issue 21). A real SDK upstream
that answers with the trace context its call came with; the gateway as a process (STDIO and HTTP
fronts, STDIO and HTTP upstreams), and in-process with the SDK's in-memory span exporter.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx

from mcp_server.core.settings import Settings
from mcp_server.gateway import startup
from mcp_server.observe.events import read_events
from mcp_server.transport.http import bind_tcp

from ..conftest import server_env
from ..processes import free_port, running
from .gateways import DRIFTING, HEADERS, WAIT, Peer, body_of, handshake, http_gateway, initialize

TRACE, CALLER = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE}-{CALLER}-01"


def traced_call(params_meta: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "trace", "arguments": {}}
    if params_meta is not None:
        params["_meta"] = params_meta
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}


def seen_upstream(reply: dict[str, Any]) -> dict[str, Any]:
    """What the upstream's `trace` tool saw: ``{"meta": traceparent in _meta, "header": HTTP header}``."""
    seen: dict[str, Any] = json.loads(reply["result"]["content"][0]["text"])
    return seen


def call_events(tmp_path: Path) -> list[dict[str, Any]]:
    """The gateway's frame events of the call (id 7), client's request first."""
    [log] = (tmp_path / "runs" / "mcp_server" / "gateway").glob("*.jsonl")
    return [event for event in read_events(log) if event["event"] == "frame" and event["request_id"] == 7]


def test_a_traceparent_in_meta_goes_upstream_under_the_gateways_span(tmp_path: Path) -> None:
    """Issue 21 / W3C Trace Context: the upstream gets the caller's trace id under a span id of the
    gateway's own (its parent), `tracestate` carried; the log records the trace and both span ids."""
    peer = Peer(tmp_path, upstream=DRIFTING)
    handshake(peer, "2025-11-25")
    reply = peer.call(traced_call({"traceparent": TRACEPARENT, "tracestate": "vendor=1", "progressToken": 3}))
    peer.finish()
    version, trace, span, flags = seen_upstream(reply)["meta"].split("-")
    assert (version, trace, flags) == ("00", TRACE, "01")
    assert span != CALLER and len(span) == 16
    request, *answers = call_events(tmp_path)
    assert request["direction"] == "client_to_server"
    assert (request["trace_id"], request["span_id"], request["parent_span_id"]) == (TRACE, span, CALLER)
    assert answers and all(answer["trace_id"] == TRACE for answer in answers)


def test_a_call_without_trace_context_goes_on_as_it_came(tmp_path: Path) -> None:
    """Issue 21: no trace context, no span: nothing added to the call, no span ids in the log."""
    peer = Peer(tmp_path, upstream=DRIFTING)
    handshake(peer, "2025-11-25")
    reply = peer.call(traced_call())
    invalid = peer.call({**traced_call({"traceparent": "00-" + "0" * 32 + "-" + CALLER + "-01"}), "id": 8})
    peer.finish()
    assert seen_upstream(reply) == {"meta": None, "header": None}
    assert seen_upstream(invalid)["meta"] == "00-" + "0" * 32 + "-" + CALLER + "-01"  # invalid: passed as it came
    assert all("span_id" not in event for event in call_events(tmp_path))


def test_the_http_header_crosses_to_an_http_upstream_in_both_places(tmp_path: Path) -> None:
    """Issue 21: a `traceparent` header on the gateway's HTTP front reaches an HTTP upstream as the
    gateway's span, in `_meta.traceparent` and in the `traceparent` header."""
    port = free_port()
    upstream = f"http://127.0.0.1:{port}/mcp"
    with (
        running([*DRIFTING, "http", str(port)], upstream, server_env(tmp_path)),
        http_gateway(tmp_path, "--upstream", upstream) as gateway,
        httpx.Client(timeout=WAIT) as client,
    ):
        session_id = initialize(client, gateway.url)
        headers = {**HEADERS, "Mcp-Session-Id": session_id, "traceparent": TRACEPARENT}
        seen = seen_upstream(body_of(client.post(gateway.url, json=traced_call(), headers=headers)))
    assert seen["meta"] == seen["header"]
    _, trace, span, _ = seen["header"].split("-")
    assert trace == TRACE and span != CALLER


def test_otel_export_makes_one_span_per_forwarded_call_with_the_callers_parent(tmp_path: Path) -> None:
    """Issue 21: with OpenTelemetry on, each forwarded call is one span (method, tool, verdict,
    latency), the caller's span its parent, the forwarded call its child, and a call without a trace
    a root span. The SDK's in-memory exporter, a gateway running in this process."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from mcp_server.observe.otel import OtelTracer

    exporter = InMemorySpanExporter()
    env = server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"))
    gateway = startup.prepare(
        Settings.from_env(env), env, None, upstream_url=None, command=DRIFTING, tracer=OtelTracer(exporter, batch=False)
    )
    listener = bind_tcp("127.0.0.1", 0)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    ready, seen = threading.Event(), {}

    def client() -> None:
        try:
            if ready.wait(WAIT):
                with httpx.Client(timeout=WAIT) as http:
                    headers = {**HEADERS, "Mcp-Session-Id": initialize(http, url)}
                    traced = http.post(url, json=traced_call({"traceparent": TRACEPARENT}), headers=headers)
                    seen["upstream"] = seen_upstream(body_of(traced))
                    plain = {**traced_call(), "id": 8, "params": {"name": "echo", "arguments": {"text": "x"}}}
                    seen["plain"] = body_of(http.post(url, json=plain, headers=headers))
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # the gateway's own stop, on its loop's handler

    thread = threading.Thread(target=client)
    thread.start()
    listen = startup.Listen("http", "/mcp", "127.0.0.1", listener.getsockname()[1])
    startup.run_http(gateway, listener, listen, ready.set, max_sessions=4, idle_seconds=WAIT)
    thread.join(WAIT)
    finished = exporter.get_finished_spans()
    spans = {span.attributes["mcp.tool"]: span for span in finished if span.attributes["mcp.method"] == "tools/call"}
    traced, plain = spans["trace"], spans["echo"]
    assert format(traced.context.trace_id, "032x") == TRACE
    assert traced.parent is not None and format(traced.parent.span_id, "016x") == CALLER
    assert seen["upstream"]["meta"].split("-")[2] == format(traced.context.span_id, "016x")
    assert traced.attributes["mcp.verdict"] == "relayed" and traced.attributes["mcp.latency_ms"] > 0
    assert plain.parent is None  # no caller's trace: a root span of the gateway's own
    assert traced.resource.attributes["service.name"] == "mcp-server-gateway"  # unless OTEL_SERVICE_NAME
    assert seen["plain"]["result"]["content"][0]["text"] == "x"


def test_opentelemetry_is_not_imported_unless_asked_for(tmp_path: Path) -> None:
    """Issue 21: the OpenTelemetry export is an extra; the gateway imports none of it unless it is on."""
    probe = (
        "import sys, mcp_server.cli, mcp_server.gateway.startup, mcp_server.gateway.session, mcp_server.gateway.lock;"
        "print(sorted(name for name in sys.modules if name.startswith('opentelemetry')))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=server_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
