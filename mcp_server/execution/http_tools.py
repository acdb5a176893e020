"""The tool registry of HTTP-backed tools, and the executor that makes their outbound calls.

Every hop (redirects too) is checked against the policy and the tool's lists before it is sent;
credentials go out as a header, never into a record or a log. One pooled httpx client.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import httpx

from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.settings import SetupError
from ..registry.config import read_config
from ..registry.schemas import SchemaRegistry, ToolIO
from .gate import ExecutionRecord, RecordSink, Stopwatch, Trace
from .policy import Globs, Policy, denial, outbound_reason

__all__ = ["HttpTool", "HttpToolExecutor", "load_catalogue", "parse_base_url"]

MAX_REDIRECTS = 5
_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_]+)\}")
_QUERY_METHODS = frozenset({"GET", "DELETE", "HEAD"})


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpTool:
    tool_id: str
    name: str
    description: str
    args: Mapping[str, Any]
    method: str
    path: str
    headers: Mapping[str, str] = field(default_factory=dict)
    allowed_methods: frozenset[str] | None = None
    allowed_domains: tuple[str, ...] | None = None
    timeout_seconds: float = 30.0
    approval: bool = False
    credential_header: str | None = field(default=None, repr=False)
    credential: str | None = field(default=None, repr=False)
    domains: Globs = field(init=False, repr=False, compare=False)  # ``allowed_domains``, compiled once

    def __post_init__(self) -> None:
        object.__setattr__(self, "domains", Globs(self.allowed_domains, fold_case=True))

    def registry_entry(self) -> dict[str, Any]:
        """What ``GET /tools`` shows: never the credential."""
        return {
            "tool_id": self.tool_id,
            "name": self.name,
            "description": self.description,
            "args": self.args,
            "method": self.method,
            "allowed_methods": sorted(self.allowed_methods or {self.method}),
            "allowed_domains": list(self.allowed_domains or ()),
            "approval": self.approval,
        }

    def hop_denial(self, url: str, method: str) -> str | None:
        """The tool's own restriction on one hop (the policy's is checked beside it)."""
        return outbound_reason(url, method, self.allowed_methods, self.domains)


def parse_base_url(value: str) -> str:
    """``MCP_EXECUTION_BASE_URL``: an http(s) URL with a host, without a query (or ``SetupError``)."""
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise SetupError(f"MCP_EXECUTION_BASE_URL must be an http(s) URL without a query, got {value!r}")
    return value.strip().rstrip("/")


def _credential(entry: Mapping[str, Any], environ: Mapping[str, str], where: str) -> str:
    if "env" in entry:
        value = environ.get(entry["env"])
        if not value:
            raise SetupError(f"{where}: credential variable {entry['env']} is not set")
    else:
        try:
            value = Path(entry["file"]).read_text().strip()
        except OSError as exc:
            raise SetupError(f"{where}: credential file {entry['file']}: {exc.strerror}") from None
    return str(entry.get("prefix", "")) + value


def load_catalogue(path: Path, registry: SchemaRegistry, environ: Mapping[str, str]) -> tuple[HttpTool, ...]:
    """Read and validate the catalogue (TOML or JSON); ``SetupError`` naming the line or pointer."""
    document = read_config(path, what="tool catalogue", schema="http-tools.schema.json", registry=registry)
    tools: list[HttpTool] = []
    seen: set[str] = set()
    for index, entry in enumerate(document["tools"]):
        where = f"tool catalogue {path}: at /tools/{index}"
        for key in ("tool_id", "name"):
            if entry[key] in seen and (key == "tool_id" or entry["name"] != entry["tool_id"]):
                raise SetupError(f"{where}/{key}: {entry[key]!r} is declared twice")
        seen |= {entry["tool_id"], entry["name"]}
        registry.compile(entry["args"], name=f"{path}#/tools/{index}/args")  # a bad schema fails here
        credential = entry.get("credential")
        tools.append(
            HttpTool(
                tool_id=entry["tool_id"],
                name=entry["name"],
                description=entry["description"],
                args=dict(entry["args"]),
                method=entry["method"],
                path=entry["path"],
                headers=dict(entry.get("headers", {})),
                allowed_methods=frozenset(entry["allowed_methods"]) if "allowed_methods" in entry else None,
                allowed_domains=tuple(entry["allowed_domains"]) if "allowed_domains" in entry else None,
                timeout_seconds=float(entry.get("timeout_seconds", 30.0)),
                approval=bool(entry.get("approval", False)),
                credential_header=credential["header"] if credential else None,
                credential=_credential(credential, environ, where + "/credential") if credential else None,
            )
        )
    return tuple(tools)


def _body(response: httpx.Response) -> Any:
    try:
        return jsonio.loads(response.content) if response.content else None
    except jsonio.JSONSyntaxError:
        return response.text[:4096]


class HttpToolExecutor:
    """Executes the catalogue's tools as HTTP calls under one base URL, one record per execution."""

    def __init__(
        self,
        tools: Sequence[HttpTool],
        *,
        base_url: str,
        policy: Policy,
        registry: SchemaRegistry,
        sink: RecordSink,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.base_url = base_url
        self.policy = policy
        self.sink = sink
        self.by_id: Mapping[str, HttpTool] = MappingProxyType({t.tool_id: t for t in tools})
        self.io: Mapping[str, ToolIO] = MappingProxyType(
            {
                t.name: ToolIO(
                    tool_id=t.tool_id,
                    input_schema=t.args,
                    output_schema=None,
                    input=registry.compile(dict(t.args)),
                    output=None,
                )
                for t in tools
            }
        )
        self._client = client or httpx.AsyncClient(follow_redirects=False)

    def request_for(self, tool: HttpTool, arguments: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """The first hop's URL and the httpx keyword arguments: path placeholders, then body or query."""
        used: set[str] = set()

        def fill(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in arguments:
                raise Rejection(
                    CanonicalError.INVALID_TOOL_INPUT, [{"path": f"/{name}", "msg": "required by the path"}]
                )
            used.add(name)
            return quote(str(arguments[name]), safe="")

        url = self.base_url + _PLACEHOLDER.sub(fill, tool.path)
        rest = {k: v for k, v in arguments.items() if k not in used}
        headers = dict(tool.headers)
        if tool.credential_header is not None and tool.credential is not None:
            headers[tool.credential_header] = tool.credential
        options: dict[str, Any] = {"headers": headers}
        if tool.method in _QUERY_METHODS:
            options["params"] = {k: v if isinstance(v, str) else jsonio.dumps(v).decode() for k, v in rest.items()}
        else:
            options["content"] = jsonio.dumps(rest)
            headers["Content-Type"] = "application/json"
        return url, options

    def _check_hop(self, tool: HttpTool, url: str, method: str, *, redirect: bool) -> None:
        reason = self.policy.outbound_denial(url, method) or tool.hop_denial(url, method)
        if reason is not None:
            raise denial(
                CanonicalError.POLICY_DENIED,
                "/outbound",
                ("redirect_" if redirect else "") + reason,
                domain=urlsplit(url).hostname or "",
            )

    async def execute(self, tool: HttpTool, arguments: Mapping[str, Any], trace: Trace) -> dict[str, Any]:
        """Make the call; ``{"ok", "status_code", "body"}`` on 2xx, else ``Rejection``. One record either way."""
        clock = Stopwatch()
        url, method, status, error = self.base_url + tool.path, tool.method, None, None
        try:
            url, options = self.request_for(tool, arguments)
            self._check_hop(tool, url, method, redirect=False)
            request = self._client.build_request(method, url, timeout=tool.timeout_seconds, **options)
            first_host = request.url.host
            for _hop in range(MAX_REDIRECTS + 1):
                response = await self._client.send(request)
                status = response.status_code
                next_request = response.next_request if response.is_redirect else None
                if next_request is None:
                    break
                await response.aclose()
                url, method = str(next_request.url), next_request.method
                self._check_hop(tool, url, method, redirect=True)
                if next_request.url.host != first_host and tool.credential_header is not None:
                    next_request.headers.pop(tool.credential_header, None)  # never hand a secret to another host
                request = next_request
            else:
                raise Rejection(CanonicalError.UPSTREAM_FAILURE, [{"path": "", "msg": "too_many_redirects"}])
            if not response.is_success:
                raise Rejection(
                    CanonicalError.UPSTREAM_FAILURE,
                    [{"path": "", "msg": "upstream_status"}],
                    extra={"status_code": status, "retryable": status >= 500},
                )
            return {"ok": True, "status_code": status, "body": _body(response)}
        except httpx.TimeoutException:
            error = CanonicalError.TOOL_TIMEOUT.slug
            raise Rejection(
                CanonicalError.TOOL_TIMEOUT, [{"path": "", "msg": "tool_timeout"}], extra={"retryable": True}
            ) from None
        except httpx.HTTPError as exc:
            error = CanonicalError.UPSTREAM_FAILURE.slug
            raise Rejection(
                CanonicalError.UPSTREAM_FAILURE,
                [{"path": "", "msg": type(exc).__name__}],
                extra={"retryable": True},
            ) from None
        except Rejection as rejection:
            error = rejection.error.slug
            raise
        except BaseException:  # cancelled by the gate's deadline, or a bug: the record still says so
            error = CanonicalError.TOOL_TIMEOUT.slug
            raise
        finally:
            self._record(tool, trace, url, method, status, error, clock.elapsed_ms())

    def _record(
        self, tool: HttpTool, trace: Trace, url: str, method: str, status: int | None, error: str | None, ms: float
    ) -> None:
        parts = urlsplit(url)
        # Decoded first: a secret in a path segment is percent-encoded on the wire (%40 for "@").
        endpoint, applied = self.policy.redactor.redact_text(
            unquote(urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")))
        )
        self.sink(
            ExecutionRecord.of(
                trace,
                tool.tool_id,
                latency_ms=ms,
                error_class=error,
                endpoint=endpoint,
                domain=parts.hostname or "",
                method=method,
                status_code=status,
                redaction_applied=applied,
            )
        )

    async def health(self) -> dict[str, Any]:
        """Whether the execution base URL answers at all (any HTTP status counts as reachable)."""
        reason = self.policy.outbound_denial(self.base_url, "GET")
        if reason is not None:
            return {"ok": False, "url": self.base_url, "detail": reason}
        try:
            response = await self._client.request("GET", self.base_url + "/", timeout=2.0)
        except httpx.HTTPError as exc:
            return {"ok": False, "url": self.base_url, "detail": type(exc).__name__}
        return {"ok": True, "url": self.base_url, "status_code": response.status_code}

    async def aclose(self) -> None:
        await self._client.aclose()
