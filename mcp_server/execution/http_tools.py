"""The tool registry of HTTP-backed tools, and the executor that makes their outbound calls.

Every hop (redirects too) is checked against the policy and the tool's lists before it is sent;
credentials go out as a header to the origin they were given for, never into a record or a log. A
response is read as a stream and cut at the limit, counted in decompressed bytes. One pooled client.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import httpx

from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.files import read_secret
from ..core.settings import DEFAULT_MAX_FRAME_BYTES, SetupError
from ..registry.config import read_config
from ..registry.schemas import SchemaRegistry, ToolIO
from .gate import ExecutionRecord, RecordSink, Stopwatch, Trace
from .policy import Globs, Policy, denial, outbound_reason

__all__ = [
    "ACCEPT_ENCODING",
    "BodyTooLarge",
    "HttpTool",
    "HttpToolExecutor",
    "load_catalogue",
    "parse_base_url",
    "read_capped",
]

MAX_REDIRECTS = 5
_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_]+)\}")
_QUERY_METHODS = frozenset({"GET", "DELETE", "HEAD"})
_DOT_SEGMENTS = frozenset({"", ".", ".."})  # a path argument that would be no segment, or move up the path
# What this client can inflate within a bound (``read_capped``); a server must not send anything else.
ACCEPT_ENCODING = "gzip, deflate"
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


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
        raw = read_secret(Path(entry["file"]), name=f"{where}: credential file")
        try:
            value = raw.decode().strip()
        except UnicodeDecodeError:
            raise SetupError(f"{where}: credential file {entry['file']}: not UTF-8") from None
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


def _body(content: bytes) -> Any:
    try:
        return jsonio.loads(content) if content else None
    except jsonio.JSONSyntaxError:
        return content[:4096].decode("utf-8", "replace")


def _segment(name: str, arguments: Mapping[str, Any]) -> str:
    """The path argument ``name`` as the text of one path segment; an absent one, or one that is no
    segment at all (empty) or moves along the path (``.``, ``..``), is refused: the tool's path is
    the operator's, never the caller's to climb out of."""
    if name not in arguments:
        raise Rejection(CanonicalError.INVALID_TOOL_INPUT, [{"path": f"/{name}", "msg": "required by the path"}])
    value = arguments[name]
    text = value if isinstance(value, str) else jsonio.dumps(value).decode()
    if text in _DOT_SEGMENTS:
        raise Rejection(CanonicalError.INVALID_TOOL_INPUT, [{"path": f"/{name}", "msg": "not_a_path_segment"}])
    return text


def _same_origin(one: httpx.URL, other: httpx.URL) -> bool:
    """RFC 6454 origin: scheme, host and port (the scheme's default when none is written)."""
    return (one.scheme, one.host, one.port or _PORTS.get(one.scheme)) == (
        other.scheme,
        other.host,
        other.port or _PORTS.get(other.scheme),
    )


_PORTS = {"http": 80, "https": 443}


class BodyTooLarge(Exception):
    """A response body over the limit it was read under (no more of it is read)."""


async def read_capped(response: httpx.Response, limit: int) -> bytes:
    """The body of a streamed ``response``, decompressed, at most ``limit`` bytes; ``BodyTooLarge`` as soon
    as more comes (counted after inflating, so a small compressed body cannot grow past the limit in
    memory); ``Rejection`` for an encoding this client did not offer."""
    codings = [c.strip().lower() for c in response.headers.get("content-encoding", "").split(",") if c.strip()]
    codings = [c for c in codings if c != "identity"]
    if len(codings) > 1 or (codings and codings[0] not in _WBITS):
        raise Rejection(CanonicalError.UPSTREAM_FAILURE, [{"path": "", "msg": "unsupported_content_encoding"}])
    inflate = zlib.decompressobj(_WBITS[codings[0]]) if codings else None
    body = bytearray()
    async for chunk in response.aiter_raw():
        if inflate is not None:
            try:  # never more than one byte past the room left: a bomb stops here
                chunk = inflate.decompress(chunk, limit - len(body) + 1)
            except zlib.error:
                bad = [{"path": "", "msg": "bad_content_encoding"}]
                raise Rejection(CanonicalError.UPSTREAM_FAILURE, bad) from None
        body += chunk
        if len(body) > limit:
            raise BodyTooLarge
    return bytes(body)


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
        max_body_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> None:
        self.base_url = base_url
        self.max_body_bytes = max_body_bytes
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

        def fill(match: re.Match[str]) -> str:
            return quote(_segment(match.group(1), arguments), safe="")  # one segment: "/" is %2F

        url = self.base_url + _PLACEHOLDER.sub(fill, tool.path)
        used = set(_PLACEHOLDER.findall(tool.path))
        rest = {k: v for k, v in arguments.items() if k not in used}
        headers = {"Accept-Encoding": ACCEPT_ENCODING, **tool.headers}
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

    def _body_limit(self, tool: HttpTool) -> tuple[int, Rejection]:
        """How much of a response is read: the tool's ``max_result_bytes``, else the frame limit (a
        result the reply cannot carry is not worth reading); and the refusal past it."""
        rule_limit = self.policy.rule_for(tool.name).max_result_bytes
        if rule_limit is not None and rule_limit <= self.max_body_bytes:
            return rule_limit, denial(CanonicalError.POLICY_DENIED, "/result", "result_too_large")
        refusal = Rejection(CanonicalError.UPSTREAM_FAILURE, [{"path": "", "msg": "response_too_large"}])
        return self.max_body_bytes, refusal

    async def execute(self, tool: HttpTool, arguments: Mapping[str, Any], trace: Trace) -> dict[str, Any]:
        """Make the call; ``{"ok", "status_code", "body"}`` on 2xx, else ``Rejection``. One record either way."""
        clock = Stopwatch()
        url, method, status, error = self.base_url + tool.path, tool.method, None, None
        try:
            url, options = self.request_for(tool, arguments)
            self._check_hop(tool, url, method, redirect=False)
            request = self._client.build_request(method, url, timeout=tool.timeout_seconds, **options)
            response = await self._follow(tool, request)
            url, method, status = str(response.request.url), response.request.method, response.status_code
            try:
                if not response.is_success:
                    raise Rejection(
                        CanonicalError.UPSTREAM_FAILURE,
                        [{"path": "", "msg": "upstream_status"}],
                        extra={"status_code": status, "retryable": status >= 500},
                    )
                limit, too_large = self._body_limit(tool)
                try:
                    content = await read_capped(response, limit)
                except BodyTooLarge:
                    raise too_large from None
            finally:
                await response.aclose()
            return {"ok": True, "status_code": status, "body": _body(content)}
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
            self._record(tool, arguments, trace, url, method, status, error, clock.elapsed_ms())

    async def _follow(self, tool: HttpTool, request: httpx.Request) -> httpx.Response:
        """Send ``request`` and follow its redirects, each hop checked first; the last response, its
        body not read yet. The credential goes only to the origin it was given for: once a hop
        changes scheme, host or port it is dropped, for that hop and every later one."""
        origin = request.url
        for _hop in range(MAX_REDIRECTS + 1):
            response = await self._client.send(request, stream=True)
            next_request = response.next_request if response.is_redirect else None
            if next_request is None:
                return response
            await response.aclose()
            url, method = str(next_request.url), next_request.method
            self._check_hop(tool, url, method, redirect=True)
            if tool.credential_header is not None and not _same_origin(next_request.url, origin):
                next_request.headers.pop(tool.credential_header, None)  # never hand a secret to another origin
            request = next_request
        raise Rejection(CanonicalError.UPSTREAM_FAILURE, [{"path": "", "msg": "too_many_redirects"}])

    def _record(
        self,
        tool: HttpTool,
        arguments: Mapping[str, Any],
        trace: Trace,
        url: str,
        method: str,
        status: int | None,
        error: str | None,
        ms: float,
    ) -> None:
        parts = urlsplit(url)
        path = parts.path
        # A path argument is the caller's data: the record names its placeholder, never its value (a
        # redirect's path may carry it too); then the patterns, on the decoded text (%40 is "@").
        hidden = False
        for name in _PLACEHOLDER.findall(tool.path):
            value = arguments.get(name)
            text = quote(value if isinstance(value, str) else jsonio.dumps(value).decode(), safe="")
            if value is not None and text and text in path:
                path, hidden = path.replace(text, "{" + name + "}"), True
        endpoint, applied = self.policy.redactor.redact_text(
            unquote(urlunsplit((parts.scheme, parts.netloc, path, "", "")))
        )
        applied = applied or hidden
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
