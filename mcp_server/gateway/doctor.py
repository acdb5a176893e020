"""``mcp-server doctor``: an upstream checked in one go. Each bundled protocol version, newest first,
is tried on a fresh upstream through a gateway session of its own (observe mode: the same chain,
tool schemas and report as ``gateway``); then a short verdict. It never calls a tool.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from ..core import jsonio
from ..core.errors import CanonicalError
from ..core.session import Session
from ..core.settings import SetupError
from ..core.types import CLIENT_TO_SERVER, Frame, Message, Reply, RequestId
from ..execution.peer import PeerChannel
from ..registry.versions import CLIENT_CAPABILITIES_META, PROTOCOL_VERSION_META
from .session import GatewaySession
from .startup import Gateway

__all__ = ["Attempt", "Findings", "examine", "findings_document", "render_verdict", "run_doctor"]

CLIENT_INFO = {"name": "mcp-server doctor", "version": "1"}
_REFUSED_CREDENTIALS = (CanonicalError.UPSTREAM_UNAUTHORIZED.mcp_code, CanonicalError.UPSTREAM_FORBIDDEN.mcp_code)
_CONNECT_SECONDS = 5.0


@dataclass(slots=True)
class Attempt:
    """One protocol version tried: ``answered`` is the version the upstream named (its counter-offer
    when it is another), ``tools`` what it listed under it."""

    version: str
    accepted: bool = False
    answered: str | None = None
    refusal: str | None = None  # the upstream's error, when it answered with one
    tools: list[str] = field(default_factory=list)
    heard: bool = False  # whether the upstream sent anything at all
    definitions: list[Mapping[str, Any]] = field(default_factory=list)  # the tools, whole, as listed
    server: str | None = None  # the upstream's ``serverInfo.name``
    unauthorized: str | None = None  # the upstream refused the credentials: what it said (issue 31)
    session: str | None = None  # its gateway session's id: its section of the report
    unread: str | None = None  # a reply that reads as no one document (a member named twice): why


@dataclass(slots=True)
class Findings:
    upstream: str
    attempts: list[Attempt] = field(default_factory=list)
    report: Mapping[str, Any] = field(default_factory=dict)

    @property
    def accepted(self) -> list[str]:
        return [attempt.version for attempt in self.attempts if attempt.accepted]

    @property
    def ok(self) -> bool:
        return bool(self.accepted) and not self.report.get("violations")


class _Client:
    """The doctor as the gateway session's client: its requests go in through ``from_client``, what
    passes the gateway comes back through ``passed`` to the request waiting for it."""

    ordered = True

    def __init__(self, attempt: Attempt) -> None:
        self.attempt = attempt
        self.own = Session()  # the doctor's own bookkeeping of its requests (the gateway has its own)
        self.peer = PeerChannel(self._send, direction=CLIENT_TO_SERVER, prefix="doctor")
        self.gateway: GatewaySession | None = None

    async def _send(self, raw: bytes) -> None:
        assert self.gateway is not None
        handled = await self.gateway.from_client(Frame(raw, "doctor", self.gateway.session))
        if handled.reply is not None:  # the gateway answered itself (the policy refused the request)
            await self.passed(handled.reply, None)

    async def ask(self, method: str, params: Mapping[str, Any], pumping: asyncio.Future[None]) -> Any:
        """The result of the upstream's reply; ``None`` for an error, no answer, or the upstream gone."""
        asking = asyncio.ensure_future(self.peer.request(self.own, method, params))
        await asyncio.wait((asking, pumping), return_when=asyncio.FIRST_COMPLETED)
        if not asking.done():
            self.peer.close()
        return await asking

    async def notify(self, method: str) -> None:
        await self._send(jsonio.dumps({"jsonrpc": "2.0", "method": method}))

    def relaying(self, frame: Frame, message: Message) -> None:
        return None

    async def passed(self, reply: Reply, message: Message | None) -> None:
        self.attempt.heard = True
        try:  # read as a client reads it (observe mode relays a reply that names a member twice)
            document: Any = jsonio.loads(reply.to_bytes())
        except jsonio.JSONSyntaxError as exc:  # no reply to learn from; the finding is the ledger's
            self.attempt.unread = str(exc)
            request_id = None if message is None else message.id
            document = {"id": request_id, "error": {"code": None, "message": f"an unreadable reply: {exc}"}}
        error = document.get("error") if isinstance(document, Mapping) else None
        if isinstance(error, Mapping):
            self.attempt.refusal = f"{error.get('code')} {error.get('message')}"
            if error.get("code") in _REFUSED_CREDENTIALS:
                errors = (error.get("data") or {}).get("errors") if isinstance(error.get("data"), Mapping) else None
                said = errors[0].get("msg") if isinstance(errors, list) and errors else None
                self.attempt.unauthorized = str(said or error.get("message"))
        if isinstance(document, Mapping):
            self.peer.deliver(document.get("id"), document)

    def cancelled(self, request_id: RequestId) -> bool:
        return True  # one client: every request is its own

    def asker(self, message: Message) -> PeerChannel:
        return self.peer


async def _all_tools(
    client: _Client, meta: Mapping[str, Any], pumping: asyncio.Future[None]
) -> list[Mapping[str, Any]]:
    """Every page of ``tools/list`` (a cursor seen twice ends it: an upstream going round in circles)."""
    definitions: list[Mapping[str, Any]] = []
    params: dict[str, Any] = dict(meta)
    seen: set[str] = set()
    while True:
        result = await client.ask("tools/list", params, pumping)
        if not isinstance(result, Mapping):
            return definitions
        tools = result.get("tools")
        definitions += [tool for tool in tools or [] if isinstance(tool, Mapping) and isinstance(tool.get("name"), str)]
        cursor = result.get("nextCursor")
        if not isinstance(cursor, str) or cursor in seen:
            return definitions
        seen.add(cursor)
        params = {**params, "cursor": cursor}


async def _try(gateway: Gateway, version: str) -> Attempt:
    """One version on a fresh upstream: its handshake (or ``server/discover``), then its tools."""
    attempt = Attempt(version)
    client = _Client(attempt)
    session = GatewaySession(gateway.run, gateway.new_upstream(), lambda _: client, transport="doctor")
    client.gateway = session
    attempt.session = session.session.id
    await session.start()  # a command that cannot start is a SetupError here
    pumping = asyncio.ensure_future(session.pump_upstream())
    try:
        if version in gateway.run.registry.stateless_versions:
            meta = {"_meta": {PROTOCOL_VERSION_META: version, CLIENT_CAPABILITIES_META: {}}}
            found = await client.ask("server/discover", meta, pumping)
            supported = found.get("supportedVersions") if isinstance(found, Mapping) else None
            attempt.accepted = isinstance(supported, list) and version in supported
            attempt.answered = version if attempt.accepted else None
            attempt.server = _server_name(found)
        else:
            meta = {}
            params = {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT_INFO}
            result = await client.ask("initialize", params, pumping)
            named = result.get("protocolVersion") if isinstance(result, Mapping) else None
            attempt.answered = named if isinstance(named, str) else None
            attempt.accepted = named == version
            attempt.server = _server_name(result)
            if attempt.accepted:
                await client.notify("notifications/initialized")
        if attempt.accepted:
            attempt.definitions = await _all_tools(client, meta, pumping)
            attempt.tools = [tool["name"] for tool in attempt.definitions]
    finally:
        await _close(session, pumping)
    return attempt


def _server_name(result: Any) -> str | None:
    info = result.get("serverInfo") if isinstance(result, Mapping) else None
    name = info.get("name") if isinstance(info, Mapping) else None
    return name if isinstance(name, str) and name else None


async def _close(session: GatewaySession, pumping: asyncio.Future[None]) -> None:
    """End the session as a client that is done: what is pending is cancelled, the upstream stopped."""
    gone = pumping.done()
    await session.settle_all("upstream_gone" if gone else "client_closed", upstream_alive=not gone)
    closing = asyncio.ensure_future(session.upstream.close())
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(pumping), session.run.config.grace_seconds)
    pumping.cancel()
    await session.close_upstream(closing)


async def _reachable(url: str) -> None:
    """A URL nobody listens on is unusable input, said at once (not as a timeout per version)."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(parts.hostname, port), _CONNECT_SECONDS)
    except (OSError, TimeoutError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "no answer"
        raise SetupError(f"cannot connect to {url}: {why}") from None
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


async def examine(gateway: Gateway, url: str | None, *, first: bool = False) -> Findings:
    """Every bundled version, newest first, each on a fresh upstream; the gateway's report of it all
    (``first``: only until one is accepted, for its tools: what ``lock`` records; a handshake's
    version first, whose ``serverInfo`` names the server)."""
    if url is not None:
        await _reachable(url)
    findings = Findings(gateway.upstream_name)
    # The verdict says what each violation was; the gateway's line per violation would only repeat it.
    logging.getLogger("mcp_server.gateway").setLevel(logging.ERROR)
    registry = gateway.run.registry
    versions = list(reversed(registry.versions))
    if first:
        versions.sort(key=lambda version: version in registry.stateless_versions)  # stable: newest first still
    for version in versions:
        attempt = await _try(gateway, version)
        findings.attempts.append(attempt)
        if (first and attempt.accepted) or attempt.unauthorized is not None:
            break  # refused credentials are refused at every version: said once, at once
        if not attempt.heard and not findings.accepted and version == gateway.run.registry.latest_handshake:
            break  # silent at the version every current server speaks: the older ones would only wait as long
    findings.report = gateway.run.report.to_document()
    return findings


def _version_line(attempt: Attempt) -> str:
    if attempt.unauthorized is not None:
        return f"{attempt.version} no ({attempt.unauthorized})"
    if attempt.accepted:
        return f"{attempt.version} ok ({len(attempt.tools)} tools)"
    if attempt.answered is not None:
        return f"{attempt.version} no (offers {attempt.answered})"
    if attempt.refusal is not None:
        return f"{attempt.version} no ({attempt.refusal})"
    return f"{attempt.version} no ({'no answer' if not attempt.heard else 'refused'})"


def _problem_lines(report: Mapping[str, Any]) -> list[str]:
    lines = []
    for rule, count in report.get("violations", {}).items():
        example = (report.get("examples", {}).get(rule) or [{}])[0]
        where = ", ".join(str(example[key]) for key in ("party", "method", "tool") if example.get(key))
        errors = example.get("errors") or []
        first = errors[0] if errors and isinstance(errors[0], Mapping) else {}
        detail = f": {first.get('path') or '/'} {first.get('msg', '')}".rstrip() if first else ""
        lines.append(f"  {rule} x{count} ({where}){detail}")
    return lines


def render_verdict(findings: Findings, *, behind: str) -> str:
    """The verdict for people: the versions, the tools, each violation once, and what to do next
    (``behind``: the gateway's arguments naming this upstream)."""
    report = findings.report
    frames = sum(sum(methods.values()) for methods in report.get("frames", {}).values())
    tools = sorted({name for attempt in findings.attempts for name in attempt.tools})
    lines = [
        f"upstream: {findings.upstream}",
        "versions: " + "; ".join(_version_line(attempt) for attempt in findings.attempts),
        f"tools: {', '.join(tools) if tools else 'none listed'}",
        f"frames checked: {frames}, violations: {sum(report.get('violations', {}).values())}",
    ]
    if findings.ok:
        lines.append(f"verdict: ok. Next: put it behind the gateway: mcp-server gateway {behind}")
        return "\n".join(lines) + "\n"
    problems = _problem_lines(report)
    lines += ["problems:", *problems] if problems else []
    refused = next((attempt.unauthorized for attempt in findings.attempts if attempt.unauthorized), None)
    if refused is not None:
        lines.append(
            f"verdict: problems: {refused}. Next: give it a credential (`--header 'Authorization: Bearer "
            "${TOKEN}'` or the configuration's headers), or log the gateway in: `mcp-server login --upstream URL`"
        )
    elif not findings.accepted:
        lines.append(
            "verdict: problems: it accepted none of the versions above. Next: check that it speaks MCP "
            "over this transport (its own messages are above), then run `mcp-server doctor` again"
        )
    else:
        lines.append(
            "verdict: problems. Next: fix each rule above in the server; meanwhile `mcp-server gateway "
            f"{behind}` refuses what breaks them (or `--mode observe` to only count them)"
        )
    return "\n".join(lines) + "\n"


def findings_document(findings: Findings) -> dict[str, Any]:
    """The verdict for programs (``--format json``): each version tried, the tools, the violations."""
    report = findings.report
    # Each version's own violations: its session's section of the report (ADR 42).
    found = {entry.get("id"): entry.get("violations", {}) for entry in report.get("sessions", [])}
    return {
        "ok": findings.ok,
        "upstream": findings.upstream,
        "versions": [
            {
                "version": a.version,
                "accepted": a.accepted,
                "answered": a.answered,
                "tools": a.tools,
                "violations": found.get(a.session, {}),
            }
            for a in findings.attempts
        ],
        "accepted": findings.accepted,
        "unauthorized": next((a.unauthorized for a in findings.attempts if a.unauthorized), None),
        "violations": report.get("violations", {}),
        "violations_by_tool": report.get("violations_by_tool", {}),
        "examples": report.get("examples", {}),
    }


def run_doctor(
    gateway: Gateway, *, url: str | None, command: Sequence[str], timeout: float, format: str = "text"
) -> int:
    """Examine the upstream (each request waits ``timeout`` seconds at most), print the verdict
    (``format``: ``text`` or ``json``); exit 0 when it is ok, 1 when it has problems."""
    if timeout <= 0:
        raise SetupError("--timeout must be positive")
    config = replace(gateway.run.config, request_timeout_seconds=timeout, check_wait_seconds=timeout)
    gateway = replace(gateway, run=gateway.run._replace(config=config))
    findings = asyncio.run(examine(gateway, url))
    behind = f"--upstream {url}" if url else "-- " + shlex.join(command)
    if format == "json":
        sys.stdout.write(jsonio.dumps_line(findings_document(findings)).decode())
    else:
        sys.stdout.write(render_verdict(findings, behind=behind))
    return 0 if findings.ok else 1
