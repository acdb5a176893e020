"""Issue 22: a 2026-07-28 client through `gateway --bridge 2025-11-25` to an upstream that speaks only
the stateful era (the conformance target with `--era legacy`): the official SDK client in 2026-07-28
mode, real gateway and upstream processes, HTTP and STDIO on either side.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import StdioServerParameters, types
from mcp.client.client import Client
from mcp.shared.exceptions import MCPError

from mcp_server.core.errors import CanonicalError

from ..conftest import ROOT, server_env
from ..processes import free_port, running
from .gateways import HEADERS, TARGET, Gateway, body_of, http_gateway, report_of, rpc

WAIT = 60.0
MODERN = "2026-07-28"
LEGACY_TARGET = [*TARGET, "--era", "legacy"]
BRIDGE = ("--bridge", "2025-11-25")
BROKEN = [sys.executable, str(ROOT / "tests" / "upstreams" / "broken_server.py")]
ME = types.Implementation(name="bridge-test", version="1")


def _run(work: Any) -> Any:
    return asyncio.run(asyncio.wait_for(work, WAIT))


async def _accept(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    """The user of the client: approves a held call, fills in the upstream's form."""
    if "approve" in json.dumps(params.model_dump(mode="json")):
        return types.ElicitResult(action="accept", content={"approve": True})
    return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.org"})


async def _sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    """The client's model."""
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="sampled"), model="test-model"
    )


def _client(url: str, name: str = "bridge-test", **options: Any) -> Client:
    info = types.Implementation(name=name, version="1")
    return Client(url, mode=MODERN, read_timeout_seconds=WAIT, client_info=info, **options)


@pytest.fixture(scope="module")
def bridge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """One HTTP gateway bridging to a STDIO upstream of the stateful era only."""
    with http_gateway(tmp_path_factory.mktemp("bridge"), *BRIDGE, upstream=LEGACY_TARGET) as gateway:
        yield gateway


def _meta(name: str = "raw", capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": name, "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
    }


def _post(url: str, frame: dict[str, Any], method: str, name: str | None = None) -> dict[str, Any]:
    headers = {**HEADERS, "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    with httpx.Client(timeout=WAIT) as http:
        return body_of(http.post(url, json=frame, headers=headers))


async def _tour(client: Client) -> list[str]:
    """Tools, resources and prompts, as the client sees them."""
    tools = await client.list_tools()
    called = await client.call_tool("test_simple_text", {})
    resources = await client.list_resources()
    read = await client.read_resource("test://static-text")
    prompts = await client.list_prompts()
    prompt = await client.get_prompt("test_simple_prompt")
    assert "test_elicitation" in [tool.name for tool in tools.tools]
    assert "test://static-text" in [str(resource.uri) for resource in resources.resources]
    assert "test_simple_prompt" in [p.name for p in prompts.prompts]
    contents = read.contents[0]
    assert isinstance(contents, types.TextResourceContents)
    first = prompt.messages[0].content
    assert isinstance(first, types.TextContent)
    text = called.content[0]
    assert isinstance(text, types.TextContent)
    return [text.text, contents.text, first.text]


def test_a_2026_client_discovers_and_uses_a_stateful_upstream_through_the_http_bridge(bridge: Gateway) -> None:
    """Issue 22: the bridge answers `server/discover` from the upstream's `initialize` (the client's
    version, the upstream's name and capabilities), and tools, resources and prompts go through."""

    async def session() -> tuple[str | None, str, list[str]]:
        async with Client(bridge.url, mode="auto", read_timeout_seconds=WAIT, client_info=ME) as client:
            assert client.server_capabilities is not None and client.server_capabilities.tools is not None
            return client.protocol_version, client.server_info.name, await _tour(client)

    version, server, seen = _run(session())
    assert (version, server) == (MODERN, "conformance-target")
    assert seen[0] and seen[1] and seen[2]


def test_clients_of_two_identities_get_two_upstream_sessions_and_one_identity_reuses_its_own(
    tmp_path: Path,
) -> None:
    """Issue 22: one upstream session per client identity (clientInfo and capabilities): a second
    client of another name takes the upstream started ahead for it (one more is started for the
    next); the same identity again starts none. (The first lists the tools, so the gateway asks no
    list of its own before the call.)"""
    with http_gateway(tmp_path, *BRIDGE, upstream=LEGACY_TARGET) as gateway:

        async def calls(name: str) -> None:
            async with _client(gateway.url, name) as client:
                await client.list_tools()
                await client.call_tool("test_simple_text", {})

        _run(calls("first"))
        one = gateway.children()
        _run(calls("first"))
        same = gateway.children()
        _run(calls("second"))
        two = gateway.children()
    assert len(one) == 2 and same == one  # the first identity's upstream, and the one started ahead
    assert len(two) == 3 and set(one) < set(two)


def test_the_upstreams_elicitation_reaches_the_2026_client_as_an_input_required_round(bridge: Gateway) -> None:
    """Issue 22 / spec 2026-07-28 (InputRequiredResult): the upstream's `elicitation/create` during
    a call is asked of the client by its result; its retry's answer goes to the upstream, whose
    reply to the call answers the retry."""

    async def call() -> str:
        async with _client(bridge.url, elicitation_callback=_accept) as client:
            result = await client.call_tool("test_elicitation", {"message": "Who are you?"})
            text = result.content[0]
            assert isinstance(text, types.TextContent)
            return text.text

    answer = _run(call())
    assert "action=accept" in answer and "ada@example.org" in answer


def test_a_tampered_request_state_is_refused_and_a_foreign_one_ignored(bridge: Gateway) -> None:
    """Issue 22 / SEP-2322: the bridge's requestState is signed; a changed one is refused with a
    catalogued error (invalid params at /params/requestState) and nothing goes upstream; a state the
    bridge never issued is unrecognised information, ignored: the call starts afresh (a new round)."""
    meta = _meta("tamperer", {"elicitation": {}})
    call = rpc(1, "tools/call", {"name": "test_elicitation", "arguments": {"message": "hi"}, "_meta": meta})
    asked = _post(bridge.url, call, "tools/call", "test_elicitation")["result"]
    assert asked["resultType"] == "input_required"
    (key,) = asked["inputRequests"]
    assert asked["inputRequests"][key]["method"] == "elicitation/create"
    answers = {key: {"action": "accept", "content": {"username": "x", "email": "x@example.org"}}}
    state = asked["requestState"]
    tampered = state[:-2] + ("AA" if not state.endswith("AA") else "BB")
    params = {**call["params"], "inputResponses": answers, "requestState": tampered}
    refused = _post(bridge.url, rpc(2, "tools/call", params), "tools/call", "test_elicitation")
    assert refused["error"]["code"] == CanonicalError.INVALID_PARAMS.mcp_code
    params = {**call["params"], "inputResponses": answers, "requestState": "someone-elses-state"}
    afresh = _post(bridge.url, rpc(3, "tools/call", params), "tools/call", "test_elicitation")["result"]
    assert afresh["resultType"] == "input_required" and afresh["requestState"] != state
    params = {**call["params"], "inputResponses": answers, "requestState": state}
    done = _post(bridge.url, rpc(4, "tools/call", params), "tools/call", "test_elicitation")
    assert "x@example.org" in done["result"]["content"][0]["text"]
    assert done["result"]["resultType"] == "complete"


def test_a_retry_without_its_answers_is_asked_again(bridge: Gateway) -> None:
    """SEP-2322 (conformance `input-required-result-missing-input-response`): a retry that leaves the
    upstream's question unanswered gets it again in a new round; answered, the call completes."""
    meta = _meta("forgetful", {"elicitation": {}})
    call = rpc(1, "tools/call", {"name": "test_elicitation", "arguments": {"message": "hi"}, "_meta": meta})
    first = _post(bridge.url, call, "tools/call", "test_elicitation")["result"]
    retry = {**call["params"], "requestState": first["requestState"]}
    again = _post(bridge.url, rpc(2, "tools/call", retry), "tools/call", "test_elicitation")["result"]
    assert again["resultType"] == "input_required" and again["inputRequests"] == first["inputRequests"]
    (key,) = again["inputRequests"]
    answers = {key: {"action": "accept", "content": {"username": "y", "email": "y@example.org"}}}
    params = {**call["params"], "inputResponses": answers, "requestState": again["requestState"]}
    done = _post(bridge.url, rpc(3, "tools/call", params), "tools/call", "test_elicitation")
    assert "y@example.org" in done["result"]["content"][0]["text"]


def test_subscriptions_listen_is_refused_as_not_bridgeable_naming_the_feature(bridge: Gateway) -> None:
    """Issue 22: what the stateful era cannot carry is refused with NOT_BRIDGEABLE and `data.feature`."""
    listen = rpc(1, "subscriptions/listen", {"_meta": _meta(), "notifications": {"toolsListChanged": True}})
    refused = _post(bridge.url, listen, "subscriptions/listen")
    assert refused["error"]["code"] == CanonicalError.NOT_BRIDGEABLE.mcp_code
    assert refused["error"]["data"]["feature"] == "subscriptions/listen"


def test_a_client_of_the_upstreams_own_era_passes_through_the_same_bridge(bridge: Gateway) -> None:
    """Issue 22: a 2025-11-25 client (its first frame `initialize`) is relayed untouched."""

    async def session() -> tuple[str | None, str]:
        async with Client(bridge.url, mode="legacy", read_timeout_seconds=WAIT, elicitation_callback=_accept) as c:
            result = await c.call_tool("test_elicitation", {"message": "Who are you?"})
            text = result.content[0]
            assert isinstance(text, types.TextContent)
            return c.protocol_version, text.text

    version, text = _run(session())
    assert version == "2025-11-25" and "ada@example.org" in text


def _held_policy(tmp_path: Path, deadline: float = 300.0) -> str:
    policy = tmp_path / "policy.toml"
    rule = '[[tool]]\nmatch = "test_elicitation"\napproval = true\n'
    policy.write_text(f"[approval]\ndeadline_seconds = {deadline}\n{rule}")
    return str(policy)


def test_a_held_call_whose_upstream_also_elicits_is_approved_then_answered_or_refused(tmp_path: Path) -> None:
    """Issue 22 with issue 21's approvals: the gateway asks its approval first (its own grant), then
    the bridge the upstream's question (its own state, another prefix): approved, both rounds go
    through; refused, the call never reaches the upstream."""
    with http_gateway(tmp_path, *BRIDGE, "--policy", _held_policy(tmp_path), upstream=LEGACY_TARGET) as gateway:

        async def call(approve: bool) -> str | int:
            async def user(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
                if "approve" in json.dumps(params.model_dump(mode="json")):
                    return types.ElicitResult(action="accept", content={"approve": approve})
                return await _accept(context, params)

            async with _client(gateway.url, elicitation_callback=user) as client:
                try:
                    result = await client.call_tool("test_elicitation", {"message": "Who are you?"})
                except MCPError as refused:
                    return refused.error.code
                text = result.content[0]
                assert isinstance(text, types.TextContent)
                return text.text

        approved, refused = _run(call(True)), _run(call(False))
    assert isinstance(approved, str) and "ada@example.org" in approved
    assert refused == CanonicalError.APPROVAL_DENIED.mcp_code


def _grant_expiry(token: str) -> int:
    payload = token.removeprefix("mcp-approval.1.").rpartition(".")[0]
    return int(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["expires"])


def test_a_held_calls_grant_tampered_or_expired_is_refused_before_the_bridge(tmp_path: Path) -> None:
    """Issue 21 through the bridge: a grant brought back with other arguments is APPROVAL_MISMATCH,
    one past the approval deadline APPROVAL_EXPIRED; neither call reaches the upstream."""
    policy = _held_policy(tmp_path, deadline=1)
    with http_gateway(tmp_path, *BRIDGE, "--policy", policy, upstream=LEGACY_TARGET) as gateway:
        meta = _meta("approver", {"elicitation": {}})
        call = {"name": "test_elicitation", "arguments": {"message": "hi"}, "_meta": meta}
        asked = _post(gateway.url, rpc(1, "tools/call", call), "tools/call", "test_elicitation")["result"]
        (key,) = asked["inputRequests"]
        yes = {key: {"action": "accept", "content": {"approve": True}}}
        other = {**call, "arguments": {"message": "something else"}, "requestState": asked["requestState"]}
        tampered = _post(
            gateway.url, rpc(2, "tools/call", {**other, "inputResponses": yes}), "tools/call", "test_elicitation"
        )
        expires = _grant_expiry(asked["requestState"])
        while time.time() < expires + 0.1:  # the grant's own expiry, read from it
            time.sleep(0.05)
        late = {**call, "requestState": asked["requestState"], "inputResponses": yes}
        expired = _post(gateway.url, rpc(3, "tools/call", late), "tools/call", "test_elicitation")
    assert tampered["error"]["code"] == CanonicalError.APPROVAL_MISMATCH.mcp_code
    assert expired["error"]["code"] == CanonicalError.APPROVAL_EXPIRED.mcp_code


@pytest.mark.parametrize("mode", ["enforce", "observe"])
def test_an_invalid_upstream_reply_is_caught_at_the_upstreams_version(tmp_path: Path, mode: str) -> None:
    """Issue 22: the upstream's side is checked against 2025-11-25: enforce answers the client with
    UPSTREAM_INVALID_REPLY; observe passes the reply on and reports the violation."""
    with http_gateway(tmp_path, *BRIDGE, "--mode", mode, upstream=BROKEN) as gateway:
        listed = _post(gateway.url, rpc(1, "tools/list", {"_meta": _meta()}), "tools/list")
        assert listed["result"]["resultType"] == "complete"
        bad = rpc(2, "tools/call", {"name": "bad_result", "arguments": {}, "_meta": _meta()})
        answer = _post(gateway.url, bad, "tools/call", "bad_result")
    report = report_of(tmp_path)
    if mode == "enforce":
        assert answer["error"]["code"] == CanonicalError.UPSTREAM_INVALID_REPLY.mcp_code
    else:
        assert answer["result"]["content"] == "not a list"
    assert report["violations"]


def test_a_2026_client_over_stdio_reaches_an_http_upstream_of_the_stateful_era(tmp_path: Path) -> None:
    """Issue 22: the STDIO front with a 2026-07-28 client, the upstream over Streamable HTTP (one
    session id per identity): tools, resources, prompts and the elicitation round go through."""
    port = free_port()
    target = [*LEGACY_TARGET, "--http", str(port)]
    with running(target, f"http://127.0.0.1:{port}/mcp", server_env(tmp_path)) as upstream:
        command = [sys.executable, "-m", "mcp_server", "gateway", *BRIDGE, "--upstream", upstream]
        parameters = StdioServerParameters(
            command=command[0], args=command[1:], env=server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"))
        )

        async def session() -> list[str]:
            async with Client(
                parameters, mode=MODERN, read_timeout_seconds=WAIT, client_info=ME, elicitation_callback=_accept
            ) as client:
                seen = await _tour(client)
                asked = await client.call_tool("test_elicitation", {"message": "Who are you?"})
                text = asked.content[0]
                assert isinstance(text, types.TextContent)
                return [*seen, text.text]

        seen = _run(session())
    assert "ada@example.org" in seen[-1]


def _state_expiry(token: str) -> float:
    payload = token.removeprefix("mcp-bridge.1.").rpartition(".")[0]
    return float(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["expires"])


def _events(url: str, frame: dict[str, Any], method: str, name: str) -> list[dict[str, Any]]:
    """Every JSON-RPC message of one POST's response (its SSE stream, or its one JSON body)."""
    headers = {**HEADERS, "MCP-Protocol-Version": MODERN, "Mcp-Method": method, "Mcp-Name": name}
    with httpx.Client(timeout=WAIT) as http:
        response = http.post(url, json=frame, headers=headers)
    if not response.headers.get("content-type", "").startswith("text/event-stream"):
        return [response.json()]
    return [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]


def test_a_round_not_retried_in_time_expires_and_unasked_log_messages_are_recorded(tmp_path: Path) -> None:
    """Issue 22: a held exchange lives as long as a request may (the request timeout): a retry past
    it is refused (invalid params). Spec 2026-07-28 (logging): log messages reach a call that asked
    for them (`_meta` logLevel); any other, with no request to ride on, is recorded as not
    bridgeable rather than dropped in silence."""
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"request_timeout_seconds": 2}))
    with http_gateway(tmp_path, *BRIDGE, "--config", str(config), upstream=LEGACY_TARGET) as gateway:
        meta = _meta("slow", {"elicitation": {}})
        logging = {"name": "test_tool_with_logging", "arguments": {}}
        unasked = _events(gateway.url, rpc(1, "tools/call", {**logging, "_meta": meta}), "tools/call", logging["name"])
        asking = {**logging, "_meta": {**meta, "io.modelcontextprotocol/logLevel": "info"}}
        asked_logs = _events(gateway.url, rpc(4, "tools/call", asking), "tools/call", logging["name"])
        call = {"name": "test_elicitation", "arguments": {"message": "hi"}, "_meta": meta}
        first = _post(gateway.url, rpc(2, "tools/call", call), "tools/call", "test_elicitation")
        asked = first.get("result") or pytest.fail(str(first))
        (key,) = asked["inputRequests"]
        expires = _state_expiry(asked["requestState"])
        while time.time() < expires + 0.1:  # the state's own expiry, read from it
            time.sleep(0.05)
        answers = {key: {"action": "accept", "content": {"username": "x", "email": "x@example.org"}}}
        late = {**call, "requestState": asked["requestState"], "inputResponses": answers}
        refused = _post(gateway.url, rpc(3, "tools/call", late), "tools/call", "test_elicitation")
    assert refused["error"]["code"] == CanonicalError.INVALID_PARAMS.mcp_code
    assert refused["error"]["data"]["errors"][0]["path"] == "/params/requestState"
    assert [event.get("method") for event in unasked] == [None]
    assert [event.get("method") for event in asked_logs].count("notifications/message") == 3
    assert report_of(tmp_path)["violations"]["not_bridgeable"] == 3


def test_an_upstream_that_cannot_start_its_session_answers_upstream_unavailable(tmp_path: Path) -> None:
    """Issue 22: an identity's upstream that ends before answering `initialize` fails the client's
    request with UPSTREAM_UNAVAILABLE (catalogued), never a hang."""
    with http_gateway(tmp_path, *BRIDGE, upstream=[sys.executable, "-c", "pass"]) as gateway:
        listed = _post(gateway.url, rpc(1, "tools/list", {"_meta": _meta()}), "tools/list")
        again = _post(gateway.url, rpc(2, "tools/list", {"_meta": _meta()}), "tools/list")
    assert listed["error"]["code"] == CanonicalError.UPSTREAM_UNAVAILABLE.mcp_code
    assert again["error"]["code"] == CanonicalError.UPSTREAM_UNAVAILABLE.mcp_code


def test_two_clients_using_the_same_ids_at_once_each_get_their_own_rounds_and_replies(bridge: Gateway) -> None:
    """Issue 22 / JSON-RPC 2.0 (ids are the sender's): two identities whose requests share ids,
    each held in a round at the same time, each get their own question, state and answer back."""

    def one(name: str) -> str:
        meta = _meta(name, {"elicitation": {}})
        call = {"name": "test_elicitation", "arguments": {"message": f"who is {name}?"}, "_meta": meta}
        asked = _post(bridge.url, rpc(1, "tools/call", call), "tools/call", "test_elicitation")["result"]
        ((key, question),) = asked["inputRequests"].items()
        assert question["params"]["message"] == f"who is {name}?"
        answers = {key: {"action": "accept", "content": {"username": name, "email": f"{name}@example.org"}}}
        retry = {**call, "requestState": asked["requestState"], "inputResponses": answers}
        done = _post(bridge.url, rpc(2, "tools/call", retry), "tools/call", "test_elicitation")
        return str(done["result"]["content"][0]["text"])

    with ThreadPoolExecutor(2) as pool:
        texts = list(pool.map(one, ["alice", "bob"]))
    assert "alice@example.org" in texts[0] and "bob@example.org" in texts[1]


def test_the_upstreams_sampling_is_a_round_only_for_a_client_that_declared_it(bridge: Gateway) -> None:
    """Issue 22 / spec 2026-07-28 (capabilities are per request): `sampling/createMessage` during a
    call reaches a client that declared sampling as an InputRequiredResult; for one that did not,
    the bridge answers the upstream with MISSING_CLIENT_CAPABILITY and the call goes on (here the
    upstream's tool fails with that error)."""

    async def sampled() -> str:
        async with _client(bridge.url, "sampler", sampling_callback=_sampling) as client:
            result = await client.call_tool("test_sampling", {"prompt": "hello"})
            text = result.content[0]
            assert isinstance(text, types.TextContent)
            return text.text

    assert "sampled" in _run(sampled())
    call = {"name": "test_sampling", "arguments": {"prompt": "hi"}, "_meta": _meta("no-sampling", {"elicitation": {}})}
    undeclared = _post(bridge.url, rpc(1, "tools/call", call), "tools/call", "test_sampling")
    assert undeclared["error"]["code"] == CanonicalError.MISSING_CLIENT_CAPABILITY.mcp_code
