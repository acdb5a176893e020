"""A client's call an aggregate routes at the client's version (ADR 37): checked once, by the client's
session, and still the server's in the report; its bytes, and its reply's, passed on as they came
unless something in them changes. One in-process gateway session per test, its upstream a real
``Aggregate`` in front of a scripted server on an in-memory connection, its client a recorder whose
reading can be held (what the aggregate then queues, it must still attribute).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import pytest

from mcp_server.core import jsonio
from mcp_server.core.errors import CanonicalError
from mcp_server.core.types import CLIENT_TO_SERVER, Frame, Message, Reply, RequestId
from mcp_server.gateway.aggregate.aggregate import Aggregate
from mcp_server.gateway.aggregate.member import Member
from mcp_server.gateway.aggregate.servers import AggregateOptions, ServerSpec
from mcp_server.gateway.bridge.upstream_side import UpstreamSide
from mcp_server.gateway.config import GatewayConfig, Mode
from mcp_server.gateway.reports import new_report
from mcp_server.gateway.session import GatewayRun, GatewaySession
from mcp_server.registry.schemas import SchemaRegistry

VERSION = "2025-11-25"
TOOLS = [
    {
        "name": "add",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]},
    },
    {"name": "late", "inputSchema": {"type": "object"}},  # answered only once it is cancelled
]


class Scripted:
    """An MCP server on an in-memory connection: ``add`` answers its ``bad`` argument with a result its
    output schema refuses; ``late`` answers once cancelled, then logs a line (which tells the test
    the late answer went before it). What it was sent (``received``) and what it said (``said``) are
    kept as bytes; it says things spaced, as the gateway never would."""

    name = "scripted"

    def __init__(self) -> None:
        self._out: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._late: set[RequestId] = set()
        self.received: list[bytes] = []
        self.said: list[bytes] = []

    async def open(self) -> None:
        return None

    async def frames(self) -> AsyncIterator[tuple[bytes, None]]:
        while (raw := await self._out.get()) is not None:
            yield raw, None

    async def send(self, raw: bytes, about: Message | None = None) -> None:
        self.received.append(raw)
        frame = jsonio.loads(raw)
        method, params = frame.get("method"), frame.get("params") or {}
        if method == "notifications/cancelled" and params.get("requestId") in self._late:
            self._say({"id": params["requestId"], "result": {"content": [{"type": "text", "text": "late"}]}})
            self._say({"method": "notifications/message", "params": {"level": "info", "data": "answered late"}})
        elif "id" in frame and method is not None:
            self._answer(frame["id"], method, params)

    def _answer(self, request_id: RequestId, method: str, params: dict[str, Any]) -> None:
        if method == "initialize":
            capabilities = {"tools": {}, "logging": {}}
            info = {"name": "scripted", "version": "1"}
            result: dict[str, Any] = {"protocolVersion": VERSION, "capabilities": capabilities, "serverInfo": info}
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call" and params.get("name") == "late":
            self._late.add(request_id)
            return
        elif method == "tools/call":
            total = "seven" if params.get("arguments", {}).get("bad") else 7
            result = {"content": [], "structuredContent": {"sum": total}}
        else:
            result = {}
        self._say({"id": request_id, "result": result})

    def _say(self, frame: dict[str, Any]) -> None:
        raw = json.dumps({"jsonrpc": "2.0", **frame}).encode()  # (spaced: bytes the gateway would not make)
        self.said.append(raw)
        self._out.put_nowait(raw)

    async def close(self) -> int:
        self._out.put_nowait(None)
        return 0


class Recorder:
    """The gateway session's client: what it is sent, by id (and notifications in order); ``hold``
    keeps it from reading on (its ``passed`` waits) from the next frame on."""

    ordered = True

    def __init__(self) -> None:
        self.replies: dict[RequestId, dict[str, Any]] = {}
        self.raw: dict[RequestId, bytes] = {}  # each reply's bytes
        self.notified: list[dict[str, Any]] = []
        self.changed = asyncio.Event()
        self.reading = asyncio.Event()
        self.reading.set()

    def relaying(self, frame: Frame, message: Message) -> None:
        return None

    async def passed(self, reply: Reply, message: Message | None) -> None:
        await self.reading.wait()
        frame = jsonio.loads(reply.to_bytes())
        if "method" in frame:
            self.notified.append(frame)
        else:
            self.replies[frame.get("id")], self.raw[frame.get("id")] = frame, reply.to_bytes()  # (none: null)
        self.changed.set()

    def cancelled(self, request_id: RequestId) -> bool:
        return True

    def asker(self, message: Message) -> Any:
        raise AssertionError("nothing is held for approval here")

    async def until(self, found: Callable[[], Any]) -> Any:
        while not (value := found()):
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 10)
        return value


class Rig:
    """One gateway session, its aggregate of one scripted server (its names under ``prefix``), its
    recorder, and what the client sent (``sent``)."""

    def __init__(self, registry: SchemaRegistry, mode: Mode, prefix: str = "calc") -> None:
        config = GatewayConfig(mode=mode)
        self.run = GatewayRun(registry, config, new_report("test", config, None, None), 1 << 20)
        spec = ServerSpec(name="calc", prefix=prefix)
        self.server = Scripted()
        self.sent: list[bytes] = []

        def side() -> UpstreamSide:
            return UpstreamSide(self.run, "scripted", server="calc", config=config, tool_schemas=True)

        self.member = Member(0, spec, lambda: self.server, side)
        self.client = Recorder()
        aggregate = Aggregate([self.member], AggregateOptions(), self.run, "aggregate of calc")
        self.gateway = GatewaySession(self.run, aggregate, lambda _: self.client, transport="test")
        self.ids = iter(range(1, 1000))

    async def send(self, frame: dict[str, Any]) -> None:
        raw = json.dumps({"jsonrpc": "2.0", **frame}).encode()  # (spaced: bytes the gateway would not make)
        self.sent.append(raw)
        handled = await self.gateway.from_client(Frame(raw, "test", self.gateway.session))
        assert handled.reply is None, handled.reply  # everything here goes to the aggregate

    async def request(self, method: str, params: dict[str, Any] | None = None) -> RequestId:
        request_id = next(self.ids)
        await self.send({"id": request_id, "method": method, **({} if params is None else {"params": params})})
        return request_id

    async def answer(self, request_id: RequestId) -> dict[str, Any]:
        return dict(await self.client.until(lambda: self.client.replies.get(request_id)))

    def report(self) -> dict[str, Any]:
        return self.run.report.to_document()


def run_rig(
    registry: SchemaRegistry,
    mode: Mode,
    body: Callable[[Rig], Coroutine[Any, Any, None]],
    prefix: str = "calc",
    version: str = VERSION,
) -> Rig:
    """``body`` against an opened session (initialized at ``version``, its tools listed), then the
    session's end (the server answers ``VERSION`` whatever it is asked)."""

    async def main() -> Rig:
        rig = Rig(registry, mode, prefix)
        await rig.gateway.start()
        pump = asyncio.ensure_future(rig.gateway.pump_upstream())
        try:
            hello = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}
            await rig.answer(await rig.request("initialize", hello))
            await rig.send({"method": "notifications/initialized"})
            listed = await rig.answer(await rig.request("tools/list"))
            names = [f"{prefix}__add", f"{prefix}__late"] if prefix else ["add", "late"]
            assert [tool["name"] for tool in listed["result"]["tools"]] == names
            await body(rig)
        finally:
            pump.cancel()
            await rig.gateway.close_upstream(None)
        return rig

    return asyncio.run(main())


async def turns_until(found: Callable[[], Any]) -> None:
    """Turns of the event loop until ``found`` holds (what the session's tasks do in between)."""
    for _ in range(100_000):
        if found():
            return
        await asyncio.sleep(0)
    raise AssertionError("never came")


def sections(rig: Rig) -> tuple[dict[str, Any], dict[str, Any]]:
    """The report's section of the client's session and the server's."""
    client = next(entry for entry in rig.report()["sessions"] if "server" not in entry)
    [server] = rig.report()["servers"]
    return client, server


def received(rig: Rig, method: str) -> list[dict[str, Any]]:
    """What the server was sent of ``method``, read."""
    return [frame for frame in map(jsonio.loads, rig.server.received) if frame.get("method") == method]


@pytest.mark.parametrize("mode", [Mode.OBSERVE, Mode.ENFORCE])
def test_a_routed_reply_is_checked_once_and_its_violation_is_its_servers(registry: SchemaRegistry, mode: Mode) -> None:
    """The server's result its output schema refuses: one violation in the whole report, in the
    server's section (observe: relayed as it came; enforce: the client answered in its place)."""

    async def body(rig: Rig) -> None:
        good = await rig.answer(await rig.request("tools/call", {"name": "calc__add", "arguments": {}}))
        bad = await rig.answer(await rig.request("tools/call", {"name": "calc__add", "arguments": {"bad": True}}))
        assert good["result"]["structuredContent"] == {"sum": 7}
        if mode is Mode.OBSERVE:
            assert bad["result"]["structuredContent"] == {"sum": "seven"}
        else:
            assert bad["error"]["data"]["reason"] == CanonicalError.UPSTREAM_INVALID_REPLY.reason

    rig = run_rig(registry, mode, body)
    client, server = sections(rig)
    assert rig.report()["violations"] == {"invalid_tool_output": 1}
    assert server["violations"] == {"invalid_tool_output": 1} and client["violations"] == {}
    # Both calls and both replies counted in each section, as any frame that crosses both.
    assert client["frames"]["client_to_server"]["tools/call"] == 2
    assert client["frames"]["server_to_client"]["tools/call"] == 2
    assert server["frames"] >= 4 + 2  # (and the aggregate's own initialize and list)


def test_a_routed_reply_queued_behind_the_aggregates_own_answers_is_still_its_servers(
    registry: SchemaRegistry,
) -> None:
    """The client reads nothing for a while: the aggregate's own answers queue up, the server's
    refused result goes in behind them, and is still checked as the server's once the client reads."""

    async def body(rig: Rig) -> None:
        rig.client.reading.clear()
        first = await rig.request("tools/list")  # answered by the aggregate; the client does not read it
        await rig.request("tools/list")  # queued behind it
        call = await rig.request("tools/call", {"name": "calc__add", "arguments": {"bad": True}})
        await turns_until(lambda: not rig.member.calls)  # the server answered: its reply is queued
        rig.client.reading.set()
        assert "result" in await rig.answer(first)
        assert (await rig.answer(call))["error"]["data"]["reason"] == CanonicalError.UPSTREAM_INVALID_REPLY.reason

    rig = run_rig(registry, Mode.ENFORCE, body)
    client, server = sections(rig)
    assert server["violations"] == {"invalid_tool_output": 1} and client["violations"] == {}


def test_a_reply_after_its_call_was_cancelled_is_late_and_no_violation(registry: SchemaRegistry) -> None:
    """A routed call the client cancels: the server's answer that crosses the cancellation reaches
    nobody and breaks no rule (it is late), in either section."""

    async def body(rig: Rig) -> None:
        call = await rig.request("tools/call", {"name": "calc__late", "arguments": {}})
        await turns_until(lambda: rig.member.calls)  # the call reached the server
        await rig.send({"method": "notifications/cancelled", "params": {"requestId": call, "reason": "test"}})
        said = await rig.client.until(lambda: rig.client.notified)  # the server's line after its late answer
        assert said[0]["params"]["data"] == "answered late"
        assert call not in rig.client.replies

    rig = run_rig(registry, Mode.ENFORCE, body)
    client, server = sections(rig)
    assert rig.report()["violations"] == {} and server["violations"] == {} and client["violations"] == {}


@pytest.mark.parametrize("prefix", ["", "calc"])
def test_a_routed_call_goes_as_the_client_sent_it_unless_its_name_changes(
    registry: SchemaRegistry, prefix: str
) -> None:
    """Under the server's own names, the call's bytes go to the server as the client sent them (not
    serialised again); under a prefix, renamed to the server's name, the rest as it was."""
    name = f"{prefix}__add" if prefix else "add"

    async def body(rig: Rig) -> None:
        answer = await rig.answer(await rig.request("tools/call", {"name": name, "arguments": {"n": 1}}))
        assert answer["result"]["structuredContent"] == {"sum": 7}

    rig = run_rig(registry, Mode.ENFORCE, body, prefix)
    sent, received = rig.sent[-1], rig.server.received[-1]
    if prefix:
        assert jsonio.loads(received) == {**jsonio.loads(sent), "params": {"name": "add", "arguments": {"n": 1}}}
    else:
        assert received == sent


@pytest.mark.parametrize("version", [VERSION, "2025-06-18"])
def test_a_servers_reply_goes_to_the_client_as_the_bytes_it_sent(registry: SchemaRegistry, version: str) -> None:
    """Routed (the client's version) or checked by the server's side (another), a reply under the
    client's own id reaches the client as the server sent it, not serialised again."""

    async def body(rig: Rig) -> None:
        call = await rig.request("tools/call", {"name": "calc__add", "arguments": {}})
        assert (await rig.answer(call))["result"]["structuredContent"] == {"sum": 7}
        assert rig.client.raw[call] == rig.server.said[-1]
        assert rig.member.side is not None and rig.member.side.session.version == VERSION

    rig = run_rig(registry, Mode.ENFORCE, body, version=version)
    assert rig.report()["violations"] == {}


def test_a_routed_call_and_its_reply_are_counted_in_the_servers_session_and_the_runs_table(
    registry: SchemaRegistry,
) -> None:
    """What the client's session checks for the server (ADR 38) is still the server's session's:
    each routed call and reply once in its section, and the run's table counts them in both."""

    async def body(rig: Rig) -> None:
        for arguments in ({}, {"n": 1}, {"n": 2}):
            await rig.answer(await rig.request("tools/call", {"name": "calc__add", "arguments": arguments}))

    rig = run_rig(registry, Mode.ENFORCE, body)
    report = rig.report()
    server = next(entry for entry in report["sessions"] if entry.get("server") == "calc")
    assert server["frames"]["client_to_server"]["tools/call"] == 3
    assert server["frames"]["server_to_client"]["tools/call"] == 3
    assert server["frames"]["client_to_server"]["tools/list"] == 1  # (the aggregate's own, as before)
    assert report["frames"]["client_to_server"]["tools/call"] == 3 + 3
    assert report["frames"]["server_to_client"]["tools/call"] == 3 + 3
    [entry] = report["servers"]
    assert entry["frames"] == sum(sum(table.values()) for table in server["frames"].values())


def test_a_call_sent_under_an_id_of_the_aggregates_own_is_cancelled_under_it(registry: SchemaRegistry) -> None:
    """The client's id is taken at the server (a request of the aggregate's own waits under it): its
    call goes under another id, and the client's cancellation follows it there; the answer that
    crosses it is late."""

    async def body(rig: Rig) -> None:
        assert rig.member.side is not None
        rig.member.side.session.expect(CLIENT_TO_SERVER, "taken", "ping", None)  # the aggregate's own, waiting
        await rig.send({"id": "taken", "method": "tools/call", "params": {"name": "calc__late", "arguments": {}}})
        await turns_until(lambda: received(rig, "tools/call"))  # the call reached the server
        [sent_as] = rig.member.calls
        assert sent_as != "taken" and [frame["id"] for frame in received(rig, "tools/call")] == [sent_as]
        await rig.send({"method": "notifications/cancelled", "params": {"requestId": "taken", "reason": "test"}})
        said = await rig.client.until(lambda: rig.client.notified)
        assert said[0]["params"]["data"] == "answered late"
        [cancelled] = received(rig, "notifications/cancelled")
        assert cancelled["params"]["requestId"] == sent_as
        assert "taken" not in rig.client.replies and not rig.member.calls

    rig = run_rig(registry, Mode.ENFORCE, body)
    assert rig.report()["violations"] == {}


def test_a_request_observe_mode_lets_through_with_no_usable_id_is_answered_with_no_id(
    registry: SchemaRegistry,
) -> None:
    """In observe mode a request whose id is no string or number still goes on: no server can be
    asked it (no reply could come back by that id), so the aggregate answers as a server would, an
    invalid request with no id (its version's schema allows none), and the client waits for nothing."""

    async def body(rig: Rig) -> None:
        await rig.send({"id": True, "method": "tools/call", "params": {"name": "calc__add", "arguments": {}}})
        answer = await rig.answer(None)
        assert "id" not in answer and answer["error"]["code"] == -32600
        assert answer["error"]["data"]["errors"] == [{"path": "/id", "msg": "must be a string or an integer"}]
        assert received(rig, "tools/call") == []

    rig = run_rig(registry, Mode.OBSERVE, body)
    client, _ = sections(rig)
    assert rig.report()["violations"] == {"invalid_envelope": 1} == client["violations"]  # the client's, once


def test_a_cancellation_naming_true_cancels_no_call_of_id_1(registry: SchemaRegistry) -> None:
    """Observe mode lets on a cancellation whose ``requestId`` is ``true``: it names no request (an
    id is a string or an integer), not the call of id 1, which goes on until cancelled by its id."""

    async def body(rig: Rig) -> None:
        await rig.send({"id": 1, "method": "tools/call", "params": {"name": "calc__late", "arguments": {}}})
        await turns_until(lambda: received(rig, "tools/call"))
        await rig.send({"method": "notifications/cancelled", "params": {"requestId": True, "reason": "test"}})
        assert rig.member.calls and received(rig, "notifications/cancelled") == []
        await rig.send({"method": "notifications/cancelled", "params": {"requestId": 1, "reason": "test"}})
        await rig.client.until(lambda: rig.client.notified)  # the server's line after its late answer
        assert [frame["params"]["requestId"] for frame in received(rig, "notifications/cancelled")] == [1]

    run_rig(registry, Mode.OBSERVE, body)
