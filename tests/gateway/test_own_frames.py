"""Every frame the gateway writes is valid (issue 29): its own answers (to invalid input, to frames over
a limit, to replies it refused, in a peer's place) and what it relays, run through its own chain at
the session's version and against the tool's schemas, at every version.

Hypothesis drives one in-process gateway session per example: a client and an upstream that send
valid, invalid, oversized and unreadable frames; an observer session follows what each side sent,
and every frame the gateway emits to either side must pass the chain of its direction there.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_server.chain.compose import build_chain
from mcp_server.core import jsonio
from mcp_server.core.session import Session
from mcp_server.core.types import CLIENT_TO_SERVER, SERVER_TO_CLIENT, Frame, Message, Reply
from mcp_server.gateway.config import GatewayConfig
from mcp_server.gateway.reports import new_report
from mcp_server.gateway.session import GatewayRun, GatewaySession
from mcp_server.registry.schemas import SchemaRegistry
from mcp_server.registry.tools import UpstreamTools

LIMIT = 3000  # both directions: an oversized frame is cheap to make
TOOLS = [
    {
        "name": "add",
        "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
        "outputSchema": {"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]},
    },
    {"name": "say", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
]
PAD = "x" * (LIMIT + 100)

CLIENT_ACTS = (
    "call",
    "bad_arguments",
    "unknown_tool",
    "unknown_method",
    "bad_params",
    "oversized",
    "garbage",
    "ping",
    "answer",
    "oversized_answer",
)
UPSTREAM_ACTS = ("result", "invalid_result", "oversized_result", "null_id_error", "wrong_id", "error", "ask", "bad_ask")


class _Sides:
    """Both peers of the session in this process: what the gateway sends either way is kept."""

    name = "upstream"
    ordered = True

    def __init__(self) -> None:
        self.to_client: list[bytes] = []
        self.to_upstream: list[bytes] = []

    async def open(self) -> None:
        return None

    async def frames(self) -> Any:
        return
        yield

    async def send(self, raw: bytes, about: Message | None = None) -> None:
        self.to_upstream.append(raw)

    async def close(self) -> int:
        return 0

    def relaying(self, frame: Frame, message: Message) -> None:
        return None

    async def passed(self, reply: Reply, message: Message | None) -> None:
        self.to_client.append(reply.to_bytes())

    def cancelled(self, request_id: object) -> None:
        return None


class Observer:
    """What each side sent, followed in a session of its own; each frame the gateway emits must pass
    the chain of its direction there (responses settle what they answer, tools by their schemas)."""

    def __init__(self, registry: SchemaRegistry, version: str | None) -> None:
        self.registry, self.version = registry, version
        self.session = Session()
        self.tools = UpstreamTools(registry)
        self.tools.learn(TOOLS)
        self.chains = {
            d: build_chain(registry, d, tools=self.tools, max_frame_bytes=sys.maxsize)
            for d in (CLIENT_TO_SERVER, SERVER_TO_CLIENT)
        }

    def sent(self, direction: Any, frame: dict[str, Any]) -> None:
        """A request a side sent: the gateway's answer to it, or the peer's, settles it here."""
        if "method" in frame and "id" in frame:
            params = frame.get("params") or {}
            tool = params.get("name") if frame["method"] == "tools/call" else None
            self.session.expect(direction, frame["id"], frame["method"], tool, self.version if self.stateless else None)

    @property
    def stateless(self) -> bool:
        return self.version in self.registry.stateless_versions

    def emitted(self, direction: Any, raw: bytes) -> None:
        document = jsonio.loads(raw)
        if "error" in document and document.get("id") is None:
            # An answer to a frame whose id could not be read: no id from 2025-11-25, where the schema
            # allows no null; before it (or with no version known) no form is valid: JSON-RPC 2.0's null.
            in_force = self.registry.protocols.get(self.session.version or "")
            optional = in_force is not None and in_force.error_id_optional
            assert ("id" not in document) is optional, document
            if not optional:
                return
        message = self.chains[direction].check(Frame(raw, "observer", self.session, None, direction))
        self.session.answered(direction, message)  # an answer settles what it answers: a second one is unknown


def _meta(version: str) -> dict[str, Any]:
    return {"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {}}


class Script:
    """One example: the session opened at ``version``, then the acts in order."""

    def __init__(self, registry: SchemaRegistry, version: str) -> None:
        self.registry, self.version = registry, version
        config = GatewayConfig(max_frame_bytes=LIMIT, max_server_frame_bytes=LIMIT, check_wait_seconds=0.01)
        run = GatewayRun(registry, config, new_report("test", config, None, None), LIMIT, max_server_frame_bytes=LIMIT)
        self.sides = _Sides()
        self.gateway = GatewaySession(run, self.sides, lambda _: self.sides, transport="stdio")
        self.observer = Observer(registry, version)
        self.next_id = 0
        self.relayed = 0  # how many of the frames sent upstream the upstream has answered or seen

    @property
    def stateless(self) -> bool:
        return self.version in self.registry.stateless_versions

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        params = dict(params or {})
        if self.stateless:
            params["_meta"] = _meta(self.version)
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params:
            frame["params"] = params
        return frame

    async def client(self, frame: dict[str, Any] | bytes) -> None:
        raw = frame if isinstance(frame, bytes) else jsonio.dumps(frame)
        if isinstance(frame, dict):
            self.observer.sent(CLIENT_TO_SERVER, frame)
        size = None if len(raw) <= LIMIT else len(raw)
        handled = await self.gateway.from_client(
            Frame(raw if size is None else raw[:4096], "stdio", self.gateway.session, size)
        )
        if handled.reply is not None:
            self.sides.to_client.append(handled.reply.to_bytes())

    async def upstream(self, frame: dict[str, Any] | bytes) -> None:
        raw = frame if isinstance(frame, bytes) else jsonio.dumps(frame)
        if isinstance(frame, dict):
            self.observer.sent(SERVER_TO_CLIENT, frame)
        size = None if len(raw) <= LIMIT else len(raw)
        await self.gateway.from_upstream(raw if size is None else raw[:4096], size)

    def pending_upstream(self) -> dict[str, Any] | None:
        """The oldest client request the gateway relayed that the upstream has not answered."""
        for raw in self.sides.to_upstream:
            document = jsonio.loads(raw)
            waiting = "id" in document and self.gateway.session.peek(CLIENT_TO_SERVER, document["id"]) is not None
            if "method" in document and waiting:
                return dict(document)
        return None

    async def open(self) -> None:
        if self.stateless:
            return
        initialize = self.request(
            "initialize",
            {
                "protocolVersion": self.version,
                "capabilities": {"roots": {}},
                "clientInfo": {"name": "t", "version": "1"},
            },
        )
        await self.client(initialize)
        result = {
            "protocolVersion": self.version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "u", "version": "1"},
        }
        await self.upstream({"jsonrpc": "2.0", "id": initialize["id"], "result": result})
        self.observer.session.negotiate(self.version)
        await self.client({"jsonrpc": "2.0", "method": "notifications/initialized"})
        listing = self.request("tools/list")
        await self.client(listing)
        await self.upstream({"jsonrpc": "2.0", "id": listing["id"], "result": {"tools": TOOLS}})

    async def act(self, who: str, act: str) -> None:
        if who == "upstream" and act in ("ask", "bad_ask") and self.stateless:
            return  # a 2026-07-28 server asks its client by its result (input required), never a request
        if who == "client":
            frame = self._client_frame(act)
            if frame is not None:
                await self.client(frame)
            return
        pending = self.pending_upstream()
        frame = self._upstream_frame(act, pending)
        if frame is not None:
            await self.upstream(frame)

    def _client_frame(self, act: str) -> dict[str, Any] | bytes | None:
        if act in ("answer", "oversized_answer"):  # the client answers the upstream's oldest question
            asked = next((raw for raw in self.sides.to_client if b'"roots/list"' in raw), None)
            if asked is None:
                return None
            request_id = jsonio.loads(asked)["id"]
            roots = [{"uri": "file:///" + (PAD if act == "oversized_answer" else "srv")}]
            return {"jsonrpc": "2.0", "id": request_id, "result": {"roots": roots}}
        if act == "call":
            return self.request("tools/call", {"name": "add", "arguments": {"a": 1}})
        if act == "bad_arguments":
            return self.request("tools/call", {"name": "add", "arguments": {"a": "one"}})
        if act == "unknown_tool":
            return self.request("tools/call", {"name": "nowhere", "arguments": {}})
        if act == "unknown_method":
            return self.request("no/such/method")
        if act == "bad_params":
            return self.request("resources/read", {"uri": 7})
        if act == "oversized":
            return self.request("tools/call", {"name": "say", "arguments": {"text": PAD}})
        if act == "garbage":
            return b'{"jsonrpc": "2.0", "id": '
        return self.request("ping")

    def _upstream_frame(self, act: str, pending: dict[str, Any] | None) -> dict[str, Any] | bytes | None:
        if act == "ask":
            self.next_id += 1
            return {"jsonrpc": "2.0", "id": f"up{self.next_id}", "method": "roots/list"}
        if act == "bad_ask":
            self.next_id += 1
            return {"jsonrpc": "2.0", "id": f"up{self.next_id}", "method": "sampling/createMessage", "params": {}}
        if pending is None:
            return None
        rid, method = pending["id"], pending["method"]
        ok: dict[str, Any] = {"content": [{"type": "text", "text": "2"}], "structuredContent": {"sum": 2}}
        if method != "tools/call":
            ok = {}
        if act == "result":
            return {"jsonrpc": "2.0", "id": rid, "result": ok}
        if act == "invalid_result":
            return {"jsonrpc": "2.0", "id": rid, "result": {"content": "no", "structuredContent": {"sum": "two"}}}
        if act == "oversized_result":
            return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": PAD}]}}
        if act == "null_id_error":
            return {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": "Bad Request"}}
        if act == "wrong_id":
            return {"jsonrpc": "2.0", "id": "nobody", "result": ok}
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32001, "message": "failed"}}


def run(registry: SchemaRegistry, version: str, acts: list[tuple[str, str]]) -> Script:
    script = Script(registry, version)

    async def go() -> None:
        await script.open()
        for who, act in acts:
            await script.act(who, act)
        await script.gateway.settle_all("client_closed", upstream_alive=True)

    asyncio.run(go())
    return script


_REGISTRY = SchemaRegistry()
ACTS = st.lists(
    st.one_of(
        st.tuples(st.just("client"), st.sampled_from(CLIENT_ACTS)),
        st.tuples(st.just("upstream"), st.sampled_from(UPSTREAM_ACTS)),
    ),
    max_size=10,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(version=st.sampled_from(_REGISTRY.versions), acts=ACTS)
def test_every_frame_the_gateway_emits_passes_its_own_chain(version: str, acts: list[tuple[str, str]]) -> None:
    """Issue 29 (and the design's promise "our own frames pass our own chain"): whatever the peers
    send, each frame the gateway writes to either side is valid at the session's version."""
    script = run(_REGISTRY, version, acts)
    for raw in script.sides.to_client:
        script.observer.emitted(SERVER_TO_CLIENT, raw)
    for raw in script.sides.to_upstream:
        script.observer.emitted(CLIENT_TO_SERVER, raw)
