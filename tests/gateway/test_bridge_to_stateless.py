"""`mcp-server gateway --bridge 2026-07-28` (issue 22): handshake-era clients (the official SDK in
legacy mode, and a raw NDJSON client) to an upstream that speaks the stateless protocol, over a
STDIO or HTTP front, with the upstream as a child process or over Streamable HTTP.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from mcp_server.core.errors import CanonicalError
from mcp_server.gateway.bridge.to_stateless import MAX_ROUNDS

from ..conftest import ROOT, initialize_frame, server_env
from ..processes import free_port, running
from .clients import sdk_session
from .gateways import TARGET, Peer, gateway_command, http_gateway, report_of

WAIT = 60.0
BRIDGE = ("--bridge", "2026-07-28")
MODERN = [*TARGET, "--era", "modern"]  # the conformance target serving 2026-07-28 only
SCRIPTED = [sys.executable, str(ROOT / "tests" / "upstreams" / "scripted_server.py")]


def stdio_front(tmp_path: Path, *options: str, upstream: list[str] = MODERN) -> StdioServerParameters:
    """The bridging gateway on STDIO, as the SDK client starts it."""
    command = gateway_command(*BRIDGE, *options, upstream=upstream)
    if "--upstream" in options:
        command = command[: command.index("--")]
    env = server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"))
    return StdioServerParameters(command=command[0], args=command[1:], env=env)


@contextmanager
def http_upstream(tmp_path: Path, command: list[str] = MODERN) -> Iterator[str]:
    """The SDK server of ``command`` over Streamable HTTP on loopback: its URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with running([*command, "--http", str(port)], url, server_env(tmp_path)) as served:
        yield served


@contextmanager
def front(tmp_path: Path, kind: str, upstream: str) -> Iterator[StdioServerParameters | str]:
    """The bridge on a ``kind`` front (stdio, http) before the target as a ``upstream`` (stdio, http)."""
    with ExitStack() as stack:
        options: tuple[str, ...] = ()
        if upstream == "http":
            options = ("--upstream", stack.enter_context(http_upstream(tmp_path)))
        if kind == "stdio":
            yield stdio_front(tmp_path, *options)
        else:
            yield stack.enter_context(http_gateway(tmp_path, *BRIDGE, *options, upstream=MODERN)).url


async def _tour(client: Client) -> None:
    """Tools, resources and prompts of the target, as a client of the handshake era uses them."""
    assert client.protocol_version == "2025-11-25"
    tools = await client.list_tools()
    assert "test_simple_text" in {tool.name for tool in tools.tools}
    called = await client.call_tool("test_simple_text", {})
    assert called.content[0].text == "This is a simple text response for testing."
    resources = await client.list_resources()
    assert "test://static-text" in {str(resource.uri) for resource in resources.resources}
    read = await client.read_resource("test://static-text")
    assert read.contents[0].text
    prompt = await client.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
    assert prompt.messages


@pytest.mark.parametrize(
    ("kind", "upstream"), [("stdio", "stdio"), ("stdio", "http"), ("http", "stdio"), ("http", "http")]
)
def test_a_legacy_client_uses_tools_resources_and_prompts_of_a_stateless_upstream(
    tmp_path: Path, kind: str, upstream: str
) -> None:
    """Issue 22: a 2025-11-25 client to a 2026-07-28 upstream: the gateway holds the session it expects."""

    async def session(server: StdioServerParameters | str) -> None:
        async with Client(server, mode="legacy", read_timeout_seconds=WAIT) as client:
            await _tour(client)

    with front(tmp_path, kind, upstream) as server:
        asyncio.run(asyncio.wait_for(session(server), WAIT))


async def _name(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    """The user of the client: Ada, whose favourite colour is teal."""
    return types.ElicitResult(action="accept", content={"name": "Ada", "color": "teal"})


async def _sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="Paris"), model="m")


async def _roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///work", name="work")])


@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_an_upstream_input_required_result_is_asked_of_a_legacy_client_as_its_own_requests(
    tmp_path: Path, kind: str
) -> None:
    """Issue 22: an InputRequiredResult's elicitation, sampling and roots become the old client's
    server-to-client requests; the call is retried with the answers and the state, round after round."""
    asked: list[str] = []

    async def name(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return await _name(context, params)

    async def session(server: StdioServerParameters | str) -> None:
        callbacks = {"elicitation_callback": name, "sampling_callback": _sample, "list_roots_callback": _roots}
        async with Client(server, mode="legacy", read_timeout_seconds=WAIT, **callbacks) as client:
            greeted = await client.call_tool("test_input_required_result_elicitation", {})
            assert greeted.content[0].text == "Hello, Ada!"
            rounds = await client.call_tool("test_input_required_result_multi_round", {})
            assert rounds.content[0].text == "Multi-round complete"
            stated = await client.call_tool("test_input_required_result_request_state", {})
            assert stated.content[0].text == "state-ok"
            every = await client.call_tool("test_input_required_result_multiple_inputs", {})
            assert every.content[0].text == "All inputs received: client_roots, greeting, user_name"

    with front(tmp_path, kind, "stdio") as server:
        asyncio.run(asyncio.wait_for(session(server), WAIT))
    assert asked[:3] == ["What is your name?", "Step 1: What is your name?", "Step 2: What is your favorite color?"]


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # the era's own methods
def test_what_the_stateless_upstream_cannot_carry_is_refused_naming_the_feature(tmp_path: Path) -> None:
    """Issue 22: whatever cannot be translated is refused with NOT_BRIDGEABLE naming the feature
    (a subscription; an input the client declared no capability for), never silently dropped."""

    async def session(server: StdioServerParameters) -> None:
        async with Client(server, mode="legacy", read_timeout_seconds=WAIT) as client:
            with pytest.raises(MCPError) as subscribed:
                await client.subscribe_resource("test://watched-resource")
            assert subscribed.value.error.code == CanonicalError.NOT_BRIDGEABLE.mcp_code
            assert subscribed.value.error.data["feature"] == "resources/subscribe"
            with pytest.raises(MCPError) as elicited:
                await client.call_tool("test_input_required_result_elicitation", {})
            assert elicited.value.error.code == CanonicalError.NOT_BRIDGEABLE.mcp_code
            assert elicited.value.error.data["feature"] == "elicitation/create"
            await client.send_roots_list_changed()  # no counterpart: recorded, not dropped in silence
            assert (await client.call_tool("test_simple_text", {})).is_error is False

    asyncio.run(asyncio.wait_for(session(stdio_front(tmp_path)), WAIT))
    report = report_of(tmp_path)
    assert report["violations"]["not_bridgeable"] == 3


def _until_reply(peer: Peer, request: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``request`` sent: the notifications that came before its reply, and the reply."""
    peer.send(request)
    notified = []
    while (frame := peer.receive()).get("id") != request["id"]:
        notified.append(frame)
    return notified, frame


def test_the_bridge_answers_ping_carries_the_log_level_and_progress_and_strips_stateless_fields(
    tmp_path: Path,
) -> None:
    """Issue 22: ping is the bridge's to answer (2026-07-28 has none), logging/setLevel becomes the
    per-request log opt-in, progress tokens are kept, and a result comes without resultType, ttlMs,
    cacheScope or the stateless `_meta` keys (spec 2025-11-25 has no place for them)."""
    peer = Peer(tmp_path, *BRIDGE, upstream=MODERN)
    offer = initialize_frame("2025-03-26", 1)
    offer["params"]["clientInfo"] = {"name": "old-client", "version": "7"}
    initialized = peer.call(offer)["result"]
    assert initialized["protocolVersion"] == "2025-03-26" and initialized["serverInfo"]["name"] == "conformance-target"
    assert "resultType" not in initialized and "tools" in initialized["capabilities"]
    # No subscription is opened upstream: no list-change or update notification is promised.
    assert initialized["capabilities"]["resources"] == initialized["capabilities"]["tools"] == {}
    peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert peer.call({"jsonrpc": "2.0", "id": 2, "method": "ping"}) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    listed = peer.call({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})["result"]
    assert {"resultType", "ttlMs", "cacheScope"}.isdisjoint(listed) and listed["tools"]
    assert (
        peer.call({"jsonrpc": "2.0", "id": 4, "method": "logging/setLevel", "params": {"level": "info"}})["result"]
        == {}
    )
    call = {"name": "test_tool_with_logging", "arguments": {}, "_meta": {"progressToken": "p-1"}}
    notified, reply = _until_reply(peer, {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": call})
    assert [frame["method"] for frame in notified] == ["notifications/message"] * 3
    assert "resultType" not in reply["result"]
    progress = {"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "p-2"}}
    notified, reply = _until_reply(peer, {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": progress})
    assert [frame["params"]["progressToken"] for frame in notified] == ["p-2"] * 3
    assert reply["result"]["content"][0]["text"] == "Progress tool completed"
    status, stderr = peer.finish()
    assert status == 0, stderr
    assert report_of(tmp_path)["violations"] == {}


def test_an_sdk_client_at_an_older_version_is_bridged_over_http(tmp_path: Path) -> None:
    """Issue 22: a client of 2025-06-18 gets its own version back and its calls carried."""

    async def session(url: str) -> None:
        async with sdk_session(url, "2025-06-18", []) as client:
            tools = await client.list_tools()
            assert "test_simple_text" in {tool.name for tool in tools.tools}
            called = await client.call_tool("test_simple_text", {})
            assert called.content[0].text == "This is a simple text response for testing."

    with http_gateway(tmp_path, *BRIDGE, upstream=MODERN) as gateway:
        asyncio.run(asyncio.wait_for(session(gateway.url), WAIT))


@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_a_client_of_the_upstreams_own_era_passes_through_the_bridge(tmp_path: Path, kind: str) -> None:
    """Issue 22: clients of the upstream's own era pass through untouched (new→new)."""

    async def session(server: StdioServerParameters | str) -> None:
        async with Client(server, mode="2026-07-28", read_timeout_seconds=WAIT, elicitation_callback=_name) as client:
            called = await client.call_tool("test_simple_text", {})
            assert called.content[0].text == "This is a simple text response for testing."
            greeted = await client.call_tool("test_input_required_result_elicitation", {})
            assert greeted.content[0].text == "Hello, Ada!"

    with front(tmp_path, kind, "stdio") as server:
        asyncio.run(asyncio.wait_for(session(server), WAIT))
    report = report_of(tmp_path)
    assert report["violations"] == {}


HELD = '[[tool]]\nmatch = "test_simple_text"\napproval = true\n'
SIMPLE = "This is a simple text response for testing."


def _held_calls(
    server: StdioServerParameters | str, answer: Any, calls: int, *, then_another: bool = True
) -> list[str | MCPError]:
    """Through the bridge at ``server``, the SDK client whose user answers with ``answer`` calls the
    held `test_simple_text` ``calls`` times, then (``then_another``) a tool nobody holds: each held
    call's text or error."""

    async def session() -> list[str | MCPError]:
        outcomes: list[str | MCPError] = []
        async with Client(server, mode="legacy", read_timeout_seconds=WAIT, elicitation_callback=answer) as client:
            for _ in range(calls):
                try:
                    outcomes.append((await client.call_tool("test_simple_text", {})).content[0].text)
                except MCPError as refused:
                    outcomes.append(refused)
            if then_another:
                assert (await client.call_tool("test_image_content", {})).content[0].type == "image"
        return outcomes

    return asyncio.run(asyncio.wait_for(session(), WAIT))


def _policy(tmp_path: Path, text: str) -> tuple[str, str]:
    (tmp_path / "policy.toml").write_text(text)
    return "--policy", str(tmp_path / "policy.toml")


def _refused_as(outcome: str | MCPError, member: CanonicalError) -> bool:
    return (
        isinstance(outcome, MCPError)
        and outcome.error.code == member.mcp_code
        and outcome.error.data["policy_violation"] is True
    )


@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_a_held_call_is_approved_or_refused_by_the_legacy_clients_user_before_the_bridge(
    tmp_path: Path, kind: str
) -> None:
    """Issue 22 (approval granted, refused): the gateway asks the old client by elicitation, on its
    side; only the approved call is carried to the stateless upstream."""
    answers = iter([True, False])
    asked: list[str] = []

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": next(answers)})

    options = _policy(tmp_path, HELD)
    if kind == "stdio":
        outcomes = _held_calls(stdio_front(tmp_path, *options), answer, 2)
    else:
        with http_gateway(tmp_path, *BRIDGE, *options, upstream=MODERN) as gateway:
            outcomes = _held_calls(gateway.url, answer, 2)
    assert outcomes[0] == SIMPLE and _refused_as(outcomes[1], CanonicalError.APPROVAL_DENIED)
    assert len(asked) == 2 and all("test_simple_text" in question for question in asked)
    assert report_of(tmp_path)["violations"] == {"approval_denied": 1}


def test_an_approval_answered_for_other_arguments_is_refused(tmp_path: Path) -> None:
    """Issue 22 (approval tampered): an answer that is not the yes the question asks (the approval
    given as a string, with the digest of other arguments) is a refusal; the call never runs."""

    async def tampered(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"approve": "true", "arguments_sha256": "0" * 64})

    [outcome] = _held_calls(stdio_front(tmp_path, *_policy(tmp_path, HELD)), tampered, 1)
    assert _refused_as(outcome, CanonicalError.APPROVAL_DENIED)


def test_an_approval_left_unanswered_expires_as_a_refusal(tmp_path: Path) -> None:
    """Issue 22 (approval expired): past the policy's approval deadline the call is refused."""
    answered = asyncio.Event()

    async def away(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        await answered.wait()  # the user never answers while the call waits
        return types.ElicitResult(action="decline")

    options = _policy(tmp_path, "[approval]\ndeadline_seconds = 0.5\n\n" + HELD)
    # The SDK client serves one question at a time: with its user away it sends nothing more.
    [outcome] = _held_calls(stdio_front(tmp_path, *options), away, 1, then_another=False)
    assert _refused_as(outcome, CanonicalError.APPROVAL_EXPIRED)
    assert report_of(tmp_path)["violations"] == {"approval_expired": 1}


DISCOVERED = {
    "resultType": "complete",
    "supportedVersions": ["2026-07-28"],
    "capabilities": {"tools": {}},
    "cacheScope": "public",
    "ttlMs": 0,
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1"}},
}
LISTED = {
    "tools": [{"name": "x", "inputSchema": {"type": "object"}}],
    "resultType": "complete",
    "cacheScope": "public",
    "ttlMs": 0,
}
NO_RESULT_TYPE = {"content": [{"type": "text", "text": "hi"}]}  # valid at 2025-11-25, not at 2026-07-28


@pytest.mark.parametrize("mode", ["enforce", "observe"])
def test_an_invalid_upstream_frame_is_caught_at_the_upstreams_own_version(tmp_path: Path, mode: str) -> None:
    """Issue 22: each side is validated against its own version's schema: a result without
    resultType is refused on the upstream side (enforce: the client gets the catalogued error;
    observe: passed on, and reported as the upstream's)."""
    script = tmp_path / "script.json"
    reply = lambda request_id, result: {"jsonrpc": "2.0", "id": request_id, "result": result}  # noqa: E731
    script.write_text(
        json.dumps([[1, [reply(1, DISCOVERED)]], [2, [reply(2, LISTED)]], [3, [reply(3, NO_RESULT_TYPE)]]])
    )
    peer = Peer(tmp_path, *BRIDGE, "--mode", mode, upstream=[*SCRIPTED, str(script)])
    assert peer.call(initialize_frame("2025-11-25", 1))["result"]["serverInfo"]["name"] == "scripted"
    peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"]["tools"][0]["name"] == "x"
    called = peer.call({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "x", "arguments": {}}})
    status, stderr = peer.finish()
    assert status == 0, stderr
    violations = report_of(tmp_path)["violations"]
    if mode == "enforce":
        assert called["error"]["code"] == CanonicalError.UPSTREAM_INVALID_REPLY.mcp_code, called
        assert called["error"]["data"]["rule"] == CanonicalError.INVALID_PARAMS.slug
    else:
        assert called["result"] == NO_RESULT_TYPE
    assert violations == {CanonicalError.INVALID_PARAMS.slug: 1}  # the upstream's, on its side


@pytest.mark.parametrize(
    ("upstream", "member"),
    [
        ([*TARGET, "--era", "legacy"], None),  # answers server/discover with an error of its own
        ([sys.executable, "-c", "pass"], CanonicalError.UPSTREAM_UNAVAILABLE),  # gone before it answers
    ],
)
def test_an_upstream_that_does_not_discover_fails_the_clients_initialize_never_hangs(
    tmp_path: Path, upstream: list[str], member: CanonicalError | None
) -> None:
    """Issue 22: the client's initialize is answered from server/discover; the upstream's error is
    passed on under the client's id, an upstream gone is UPSTREAM_UNAVAILABLE."""
    peer = Peer(tmp_path, *BRIDGE, upstream=upstream)
    error = peer.call(initialize_frame("2025-11-25", 1))["error"]
    if member is not None:
        assert error["code"] == member.mcp_code
    else:
        assert isinstance(error["code"], int) and error["code"] != CanonicalError.UPSTREAM_UNAVAILABLE.mcp_code
    peer.finish()


def _scripted(tmp_path: Path, results: list[tuple[int, dict[str, Any]]]) -> list[str]:
    """The scripted upstream answering the bridge's requests by their ids upstream: 1 is always
    ``server/discover``, 2 the ``tools/list`` that lists the tool ``x``."""
    replies = [(1, DISCOVERED), (2, LISTED), *results]
    script = tmp_path / "script.json"
    script.write_text(json.dumps([[n, [{"jsonrpc": "2.0", "id": n, "result": result}]] for n, result in replies]))
    return [*SCRIPTED, str(script)]


def _text(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}], "resultType": "complete"}


def test_a_call_cancelled_while_its_input_is_asked_is_not_retried(tmp_path: Path) -> None:
    """Issue 22 (spec basic/utilities/cancellation): a cancelled request gets no reply; the bridge
    drops its input round, so the client's late answer retries nothing upstream."""
    wanted = {"type": "object", "properties": {"name": {"type": "string"}}}
    question = {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": wanted}}
    asking = {"resultType": "input_required", "inputRequests": {"q": question}, "requestState": "s"}
    # Upstream ids in order: the call (3), then the next request: 4 unless a retry took it.
    peer = Peer(tmp_path, *BRIDGE, upstream=_scripted(tmp_path, [(3, asking), (4, _text("four")), (5, _text("five"))]))
    offer = initialize_frame("2025-11-25", 1)
    offer["params"]["capabilities"] = {"elicitation": {}}
    assert peer.call(offer)["result"]["protocolVersion"] == "2025-11-25"
    peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"]["tools"][0]["name"] == "x"
    call = {"name": "x", "arguments": {}}
    asked = peer.call({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
    assert asked.get("method") == "elicitation/create" and asked["params"]["message"] == "Name?", asked
    peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}})
    peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"name": "Ada"}}})
    after = peer.call({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": call})
    assert after == {"jsonrpc": "2.0", "id": 4, "result": {"content": [{"type": "text", "text": "four"}]}}
    status, stderr = peer.finish()
    assert status == 0, stderr


def test_a_reply_after_the_client_cancelled_its_call_is_late_not_a_violation(tmp_path: Path) -> None:
    """Issue 32 (one session ledger; spec basic/utilities/cancellation): the bridge's cancellation
    upstream is settled by the ledger's rule, as the gateway's own is: the call ends unanswered
    (client_cancelled) on both sides, and the upstream's reply that still comes is late, not an
    unknown id."""
    script = [
        [1, [{"jsonrpc": "2.0", "id": 1, "result": DISCOVERED}]],
        [2, [{"jsonrpc": "2.0", "id": 2, "result": LISTED}]],
        [3, []],  # the call: no reply until the next request (after the cancellation)
        [4, [{"jsonrpc": "2.0", "id": n, "result": _text(str(n))} for n in (3, 4)]],
    ]
    (tmp_path / "script.json").write_text(json.dumps(script))
    peer = Peer(tmp_path, *BRIDGE, upstream=[*SCRIPTED, str(tmp_path / "script.json")])
    assert peer.call(initialize_frame("2025-11-25", 1))["result"]["protocolVersion"] == "2025-11-25"
    peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"]["tools"][0]["name"] == "x"
    call = {"name": "x", "arguments": {}}
    peer.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
    peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}})
    after = peer.call({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": call})
    assert after == {"jsonrpc": "2.0", "id": 4, "result": {"content": [{"type": "text", "text": "4"}]}}
    status, stderr = peer.finish()
    assert status == 0, stderr
    report = report_of(tmp_path)
    assert report["violations"] == {}
    assert report["unanswered_by_reason"] == {"client_cancelled": 2}


def test_input_rounds_are_bounded_and_a_state_alone_is_retried_at_once(tmp_path: Path) -> None:
    """Issue 22: an InputRequiredResult with a requestState and nothing to ask is retried at once;
    an upstream that never completes is given up on after MAX_ROUNDS, NOT_BRIDGEABLE naming it."""
    again = {"resultType": "input_required", "requestState": "again"}
    rounds = [(n, again) for n in range(3, 3 + MAX_ROUNDS)]
    peer = Peer(tmp_path, *BRIDGE, upstream=_scripted(tmp_path, [*rounds, (3 + MAX_ROUNDS, again)]))
    assert "result" in peer.call(initialize_frame("2025-11-25", 1))
    peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"]["tools"][0]["name"] == "x"
    call = {"name": "x", "arguments": {}}
    error = peer.call({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})["error"]
    assert error["code"] == CanonicalError.NOT_BRIDGEABLE.mcp_code and error["data"]["feature"] == "inputRequests"
    status, stderr = peer.finish()
    assert status == 0, stderr
