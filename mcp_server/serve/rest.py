"""The REST face beside ``/mcp``: ``GET /tools``, ``POST /execute``, ``GET /health`` and the approvals.

The HTTP app delegates these paths here after its Host/Origin check. Every status comes from the
error catalogue; ``/execute`` goes through the same execution gate as an MCP ``tools/call``.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..execution.gate import ExecutionGate, ExecutionRecord, Stopwatch, Trace
from ..execution.http_tools import HttpToolExecutor
from ..registry.schemas import SchemaRegistry, violations
from ..transport.http import Receive, Scope, Send, read_body, respond

__all__ = ["RestFace", "error_object"]

log = logging.getLogger("mcp_server")

PATHS = ("/tools", "/execute", "/health", "/approvals")


def error_object(rejection: Rejection) -> dict[str, Any]:
    """The REST error: ``code`` (the catalogue slug), ``message``, ``details``, ``retryable``, ``policy_violation``."""
    return {
        **rejection.summary(),
        "retryable": bool(rejection.extra.get("retryable", rejection.error.retryable)),
        "policy_violation": bool(rejection.extra.get("policy_violation", False)),
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class _Reply:
    status: int
    document: Any
    headers: tuple[tuple[bytes, bytes], ...] = ()


class RestFace:
    """The REST routes of one server: the tool registry, governed execution, health, approvals."""

    def __init__(
        self,
        *,
        registry: SchemaRegistry,
        gate: ExecutionGate,
        executor: HttpToolExecutor | None,
        max_body_bytes: int,
        approver_token: str | None = None,
        upstream_url: str | None = None,
    ) -> None:
        self.registry = registry
        self.gate = gate
        self.executor = executor
        self.max_body_bytes = max_body_bytes
        self.approver_token = approver_token
        self.upstream_url = upstream_url
        self._execute_schema = registry.bundled("execute-request.schema.json")
        self._decision_schema = registry.bundled("approval-decision.schema.json")

    def serves(self, path: str) -> bool:
        return path in PATHS or path.startswith("/approvals/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send, headers: Mapping[str, str]) -> None:
        path = scope["path"].rstrip("/") or "/"
        method = scope["method"]
        try:
            reply = await self._route(path, method, receive, headers)
        except Rejection as rejection:
            reply = _Reply(status=rejection.error.http_status, document={"error": error_object(rejection)})
        except Exception:
            log.exception("internal error in %s %s", method, path)  # the traceback to the log, never the wire
            internal = Rejection(CanonicalError.INTERNAL_ERROR)
            reply = _Reply(status=internal.error.http_status, document={"error": error_object(internal)})
        await respond(send, reply.status, jsonio.dumps(reply.document), b"application/json", reply.headers)

    async def _route(self, path: str, method: str, receive: Receive, headers: Mapping[str, str]) -> _Reply:
        wanted = {"/tools": "GET", "/execute": "POST", "/health": "GET", "/approvals": "GET"}.get(path, "POST")
        if method != wanted:
            raise Rejection(CanonicalError.HTTP_METHOD_NOT_ALLOWED, [{"path": "", "msg": f"use {wanted}"}])
        if path == "/tools":
            tools = [] if self.executor is None else [t.registry_entry() for t in self.executor.by_id.values()]
            return _Reply(status=200, document={"tools": tools})
        if path == "/health":
            return await self._health()
        if path == "/execute":
            return await self._execute(receive, headers)
        self._check_approver(headers)
        if path == "/approvals":
            return _Reply(status=200, document={"pending": [p.to_document() for p in self.gate.approvals.pending()]})
        return await self._decide(path.removeprefix("/approvals/"), receive, headers)

    # -- bodies -----------------------------------------------------------------------------

    async def _json_body(self, receive: Receive, headers: Mapping[str, str], validator: Any) -> Any:
        kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if kind != "application/json":
            raise Rejection(CanonicalError.UNSUPPORTED_MEDIA_TYPE, [{"path": "", "msg": "content_type"}])
        body, size = await read_body(receive, headers, self.max_body_bytes)
        if size is not None:  # the body was over the limit: not read whole
            raise Rejection(CanonicalError.PAYLOAD_TOO_LARGE, [{"path": "", "msg": "payload_too_large"}])
        self.gate.policy.check_size("client_to_server", len(body))
        try:
            document = jsonio.loads(body)
        except jsonio.JSONSyntaxError:
            raise Rejection(CanonicalError.INVALID_REQUEST_BODY, [{"path": "", "msg": "not_json"}]) from None
        found = violations(validator, document)
        if found:
            raise Rejection(CanonicalError.INVALID_REQUEST_BODY, found)
        return document

    # -- POST /execute ----------------------------------------------------------------------

    async def _execute(self, receive: Receive, headers: Mapping[str, str]) -> _Reply:
        request_id = secrets.token_hex(8)
        clock = Stopwatch()
        trace = Trace(session_id="")
        tool_id = ""
        try:
            body = await self._json_body(receive, headers, self._execute_schema)
            given = body["trace"]
            trace = Trace(
                session_id=body["session_id"],
                trace_id=given["trace_id"],
                agent_step=given.get("agent_step"),
                attempt=given.get("attempt"),
            )
            tool_id = body["tool_id"]
            tool = None if self.executor is None else self.executor.by_id.get(tool_id)
            if tool is None or self.executor is None:
                raise Rejection(CanonicalError.TOOL_NOT_FOUND, [{"path": "/tool_id", "msg": "tool_not_found"}])
            executor = self.executor
            arguments = body["args"]
            found = violations(executor.io[tool.name].input, arguments, prefix="/args")
            if found:
                raise Rejection(CanonicalError.INVALID_TOOL_INPUT, found)
            executed = False

            async def call() -> dict[str, Any]:
                nonlocal executed
                executed = True
                return await executor.execute(tool, arguments, trace)

            try:
                result = await self.gate.run(
                    tool.name, arguments, trace, call, approval=tool.approval, timeout_seconds=tool.timeout_seconds
                )
            except Rejection as rejection:
                if not executed:  # refused before any call went out: still one record
                    self._record(tool_id, trace, rejection.error.slug, clock.elapsed_ms())
                raise
        except Rejection as rejection:
            status_code = rejection.extra.get("status_code")
            document = {
                "status": "failure",
                "result": {},
                "error": error_object(rejection),
                "execution": {"latency_ms": clock.elapsed_ms(), "status_code": status_code, "request_id": request_id},
            }
            return _Reply(status=rejection.error.http_status, document=document, headers=_request_id(request_id))
        policy = self.gate.policy  # the REST face always redacts; the gate has when the policy sanitises
        sanitised = result if policy.sanitise_results else policy.redactor.redact(result)[0]
        document = {
            "status": "success",
            "result": sanitised,
            "execution": {
                "latency_ms": clock.elapsed_ms(),
                "status_code": result.get("status_code"),
                "request_id": request_id,
            },
        }
        return _Reply(status=200, document=document, headers=_request_id(request_id))

    def _record(self, tool_id: str, trace: Trace, error: str, latency_ms: float) -> None:
        if self.executor is None:
            return
        self.executor.sink(ExecutionRecord.of(trace, tool_id, latency_ms=latency_ms, error_class=error))

    # -- approvals ----------------------------------------------------------------------------

    def _check_approver(self, headers: Mapping[str, str]) -> None:
        if self.approver_token is None:
            return
        given = headers.get("authorization", "")
        expected = "Bearer " + self.approver_token
        if not secrets.compare_digest(given.encode(), expected.encode()):
            raise Rejection(CanonicalError.APPROVER_UNAUTHORIZED, [{"path": "", "msg": "approver_token"}])

    async def _decide(self, approval_id: str, receive: Receive, headers: Mapping[str, str]) -> _Reply:
        body = await self._json_body(receive, headers, self._decision_schema)
        allow = body["decision"] == "allow"
        pending = self.gate.approvals.decide(approval_id, allow=allow, arguments_sha256=body.get("arguments_sha256"))
        return _Reply(status=200, document={"id": pending.id, "decision": body["decision"]})

    # -- GET /health --------------------------------------------------------------------------

    async def _health(self) -> _Reply:
        checks: dict[str, Any] = {
            "schemas": {"ok": bool(self.registry.versions), "versions": list(self.registry.versions)}
        }
        if self.executor is not None:
            checks["execution_base_url"] = await self.executor.health()
        if self.upstream_url is not None:
            checks["upstream"] = await _reachable(self.upstream_url)
        healthy = all(check["ok"] for check in checks.values())
        status = 200 if healthy else CanonicalError.DEPENDENCY_UNAVAILABLE.http_status
        document = {
            "status": "ok" if healthy else "degraded",
            "versions": list(self.registry.versions),
            "checks": checks,
        }
        return _Reply(status=status, document=document)


def _request_id(request_id: str) -> tuple[tuple[bytes, bytes], ...]:
    return ((b"x-request-id", request_id.encode()),)


async def _reachable(url: str) -> dict[str, Any]:
    try:
        async with httpx.AsyncClient(timeout=2.0) as client:
            response = await client.get(url)
    except httpx.HTTPError as exc:
        return {"ok": False, "url": url, "detail": type(exc).__name__}
    return {"ok": True, "url": url, "status_code": response.status_code}
