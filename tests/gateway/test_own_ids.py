"""A peer's request under an id a request of the gateway's own holds on the same way (ADR 43): renamed
on its way, answered under its own id. One gateway session in this process between a client and an
upstream kept in memory (what the gateway writes either way is read back as JSON); the gateway's own
requests are its real ones: its `tools/list` upstream, its elicitation asking the client to approve a
call the policy holds."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from mcp_server.core import jsonio
from mcp_server.core.errors import CanonicalError
from mcp_server.core.types import CLIENT_TO_SERVER, Frame, Message, Reply, RequestId
from mcp_server.execution.peer import PeerChannel
from mcp_server.execution.policy import Policy
from mcp_server.gateway.config import GatewayConfig
from mcp_server.gateway.reports import new_report
from mcp_server.gateway.session import GatewayRun, GatewaySession
from mcp_server.registry.schemas import SchemaRegistry

VERSION = "2025-11-25"
TOOLS = [{"name": "add", "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}}}]
OK = {"content": [{"type": "text", "text": "2"}]}


class _Peers:
    """The client and the upstream of one gateway session, in memory: what the gateway sends each."""

    name = "upstream"
    ordered = True

    def __init__(self) -> None:
        self.to_client: list[dict[str, Any]] = []
        self.to_upstream: list[dict[str, Any]] = []

    async def open(self) -> None:
        return None

    async def frames(self) -> Any:
        return
        yield

    async def send(self, raw: bytes, about: Message | None = None) -> None:
        self.to_upstream.append(jsonio.loads(raw))

    async def close(self) -> int:
        return 0

    def relaying(self, frame: Frame, message: Message) -> None:
        return None

    async def passed(self, reply: Reply, message: Message | None) -> None:
        self.to_client.append(jsonio.loads(reply.to_bytes()))

    def cancelled(self, request_id: RequestId) -> bool:
        return True

    def asker(self, message: Message) -> PeerChannel:
        async def ask(raw: bytes) -> None:
            self.to_client.append(jsonio.loads(raw))

        return PeerChannel(ask)  # its answer comes through the session, as the client's frame


class _Session:
    """A gateway session opened at ``VERSION`` with the tool ``add`` listed."""

    def __init__(self, registry: SchemaRegistry, policy: Policy | None = None) -> None:
        config = GatewayConfig()
        run = GatewayRun(registry, config, new_report("test", config, None, None), 1 << 20, policy=policy)
        self.peers = _Peers()
        self.gateway = GatewaySession(run, self.peers, lambda _: self.peers, transport="stdio")

    async def client(self, document: dict[str, Any]) -> None:
        handled = await self.gateway.from_client(Frame(jsonio.dumps(document), "stdio", self.gateway.session))
        if handled.reply is not None:
            self.peers.to_client.append(jsonio.loads(handled.reply.to_bytes()))

    async def upstream(self, document: dict[str, Any]) -> None:
        await self.gateway.from_upstream(jsonio.dumps(document), None)

    async def open(self) -> None:
        capabilities = {"elicitation": {}, "roots": {}}
        hello = {"protocolVersion": VERSION, "capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}}
        await self.client({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello})
        info = {"protocolVersion": VERSION, "capabilities": {"tools": {}}, "serverInfo": {"name": "u", "version": "1"}}
        await self.upstream({"jsonrpc": "2.0", "id": 0, "result": info})
        await self.client({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await self.client({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        await self.upstream({"jsonrpc": "2.0", "id": 1, "result": {"tools": TOOLS}})
        self.peers.to_client.clear()
        self.peers.to_upstream.clear()


async def _sent(frames: list[dict[str, Any]], count: int) -> None:
    """Until ``count`` frames were sent that way (the gateway's own request is a task of its own)."""
    while len(frames) < count:
        await asyncio.sleep(0)


def _call(request_id: RequestId) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": "add", "arguments": {}}}


def _run(test: Callable[[_Session], Awaitable[None]], registry: SchemaRegistry, policy: Policy | None = None) -> None:
    async def opened() -> None:
        session = _Session(registry, policy)
        await session.open()
        await test(session)

    asyncio.run(asyncio.wait_for(opened(), 10))


def test_a_client_request_under_the_id_of_the_gateways_own_list_request_goes_up_renamed_and_comes_back_as_sent(
    registry: SchemaRegistry,
) -> None:
    """ADR 43: while the gateway's own `tools/list` waits upstream under `gateway-N`, the client's
    call under `gateway-N` goes up under a fresh id and its reply comes back under `gateway-N`;
    the gateway's own reply is still its own; nothing is refused or reported."""

    async def test(session: _Session) -> None:
        gateway, peers = session.gateway, session.peers
        listing = asyncio.ensure_future(gateway.own.request(gateway.session, "tools/list", {}))
        await _sent(peers.to_upstream, 1)
        own = peers.to_upstream[0]["id"]
        await session.client(_call(own))
        wire = peers.to_upstream[1]["id"]
        assert wire != own and peers.to_upstream[1]["method"] == "tools/call"
        await session.upstream({"jsonrpc": "2.0", "id": wire, "result": OK})
        assert peers.to_client == [{"jsonrpc": "2.0", "id": own, "result": OK}]
        await session.upstream({"jsonrpc": "2.0", "id": own, "result": {"tools": TOOLS}})
        assert await listing == {"tools": TOOLS} and len(peers.to_client) == 1
        assert gateway.run.report.to_document()["violations"] == {}
        assert len(gateway.session) == 0

    _run(test, registry)


def test_a_renamed_client_request_is_cancelled_under_its_new_id_and_its_own_id_taken_twice_is_a_duplicate(
    registry: SchemaRegistry,
) -> None:
    """ADR 43: the client's own id stays in flight while its renamed request waits (a second request
    under it is refused, `data.id` naming it); the client's cancellation names it to the upstream as
    renamed; after it the id is the client's again."""

    async def test(session: _Session) -> None:
        gateway, peers = session.gateway, session.peers
        listing = asyncio.ensure_future(gateway.own.request(gateway.session, "tools/list", {}))
        await _sent(peers.to_upstream, 1)
        own = peers.to_upstream[0]["id"]
        await session.client(_call(own))
        wire = peers.to_upstream[1]["id"]
        await session.client(_call(own))
        [refused] = peers.to_client
        assert refused["id"] == own and refused["error"]["code"] == CanonicalError.DUPLICATE_REQUEST_ID.mcp_code
        assert refused["error"]["data"]["id"] == own and len(peers.to_upstream) == 2
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": own}}
        await session.client(cancel)
        assert peers.to_upstream[2]["params"]["requestId"] == wire
        assert not gateway.session.in_flight(CLIENT_TO_SERVER, own)
        await session.upstream({"jsonrpc": "2.0", "id": own, "result": {"tools": TOOLS}})
        assert await listing == {"tools": TOOLS}
        report = gateway.run.report.to_document()
        assert report["violations_by_party"] == {"duplicate_request_id": {"client": 1}}

    _run(test, registry)


def test_an_upstream_request_under_the_id_of_the_gateways_own_elicitation_goes_down_renamed_and_is_answered_as_sent(
    registry: SchemaRegistry,
) -> None:
    """ADR 43, the other way: while the gateway asks the client to approve a call (its own
    `elicitation/create` under `srv-N`, policy issue 6), the upstream's `roots/list` under `srv-N`
    reaches the client under a fresh id and the client's answer reaches the upstream under `srv-N`;
    the client's answer to the elicitation is still the gateway's."""
    policy = Policy.from_document({"tool": [{"match": "add", "approval": True}]})

    async def test(session: _Session) -> None:
        gateway, peers = session.gateway, session.peers
        held = asyncio.ensure_future(session.client(_call(5)))
        await _sent(peers.to_client, 1)
        own = peers.to_client[0]["id"]
        assert peers.to_client[0]["method"] == "elicitation/create"
        await session.upstream({"jsonrpc": "2.0", "id": own, "method": "roots/list"})
        asked = peers.to_client[1]
        assert asked["method"] == "roots/list" and asked["id"] != own
        await session.client({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": []}})
        assert peers.to_upstream == [{"jsonrpc": "2.0", "id": own, "result": {"roots": []}}]
        approve = {"action": "accept", "content": {"approve": True}}
        await session.client({"jsonrpc": "2.0", "id": own, "result": approve})
        await held
        assert peers.to_upstream[1]["method"] == "tools/call" and peers.to_upstream[1]["id"] == 5
        assert gateway.run.report.to_document()["violations"] == {}

    _run(test, registry, policy)
