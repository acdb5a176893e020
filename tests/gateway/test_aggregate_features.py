"""What the aggregate promises besides relaying (issue 33), each seen on the wire of a real gateway
with real servers: merged lists paged in a stable order and announced when a server's list changes,
a URI two servers share served from the first, subscriptions and completions routed to their owner,
the report and its page with a section per server, policy and approvals by exposed names, the
lockfile per server, servers read from a client's own configuration file, and the MCP Inspector CLI.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import mcp.types as types
import pytest
from mcp.client.client import Client

from mcp_server.core.errors import CanonicalError

from ..conftest import cli, server_env
from ..node_tools import inspector_cli
from ..processes import free_port, running
from .aggregate_servers import (
    BROKEN,
    FLEET,
    WAIT,
    Raw,
    every_page,
    everything,
    http_gateway,
    memory,
    report_of,
    server,
    write_config,
)
from .gateways import HEADERS, TARGET, initialize, rpc


def fleet(name: str, *options: str, **table: Any) -> dict[str, Any]:
    return server([*FLEET, "--name", name, *options], **table)


def test_merged_lists_are_paged_in_a_stable_order_and_announced_when_a_server_changes_its_own(tmp_path: Path) -> None:
    """Issue 33: lists merged in a stable order (servers as configured, each in its own), paginated
    (MCP utilities/pagination), and `list_changed` when any server's list changes (`grow`)."""
    config = write_config(tmp_path, {"one": fleet("one"), "two": fleet("two", "--tools", "3")}, page_size=4)
    peer = Raw(tmp_path, "--config", str(config))
    try:
        peer.open()
        first = [tool["name"] for tool in every_page(peer, "tools/list", "tools")]
        again = [tool["name"] for tool in every_page(peer, "tools/list", "tools")]
        grown = peer.request("tools/call", {"name": "one__grow", "arguments": {}})
        changed = peer.until("notifications/tools/list_changed")
        after = [tool["name"] for tool in every_page(peer, "tools/list", "tools")]
        bad_cursor = peer.request("tools/list", {"cursor": "not-ours"})
    finally:
        peer.close()
    own = ["add", "echo", "count", "count_slowly", "ask_model", "ask_user", "roots", "grow", "log", "header"]
    assert first == again == [f"one__{n}" for n in own] + [f"two__{n}" for n in [*own, "tool_0", "tool_1", "tool_2"]]
    assert grown["result"]["isError"] is False and changed == {
        "jsonrpc": "2.0",
        "method": "notifications/tools/list_changed",
    }
    assert after == [*first[: len(own)], "one__grown", *first[len(own) :]]
    assert bad_cursor["error"]["code"] == CanonicalError.INVALID_PARAMS.mcp_code


def test_a_uri_two_servers_share_is_reported_and_served_from_the_first(tmp_path: Path) -> None:
    """Issue 33: resources keep their URIs; a URI two servers share is reported and served from the
    first listed; a templated URI goes to the template's server; an unknown one is -32002."""
    config = write_config(tmp_path, {"one": fleet("one"), "two": fleet("two")})
    peer = Raw(tmp_path, "--config", str(config))
    try:
        peer.open()
        listed = [item["uri"] for item in every_page(peer, "resources/list", "resources")]
        read = peer.request("resources/read", {"uri": "fleet://hello"})
        templated = peer.request("resources/read", {"uri": "fleet://people/ada"})
        unknown = peer.request("resources/read", {"uri": "nowhere://x"})
    finally:
        peer.close()
    assert listed == ["fleet://hello"]
    assert read["result"]["contents"][0]["text"] == "hello from one"
    assert templated["result"]["contents"][0]["text"] == "person ada"
    assert unknown["error"]["code"] == CanonicalError.RESOURCE_NOT_FOUND.mcp_code == -32002
    two = next(entry for entry in report_of(tmp_path)["servers"] if entry["name"] == "two")
    assert two["violations"] == {"resource_uri_shared": 1}


def test_subscriptions_and_completions_go_to_the_server_that_owns_them(tmp_path: Path) -> None:
    """Issue 33: subscriptions and completions routed to their owner; a subscription to a server that
    has none is refused (nothing promised that a server cannot keep); ping and logging/setLevel are
    the aggregate's to answer for all."""
    config = write_config(tmp_path, {"fleet": fleet("fleet"), "everything": server(everything())})
    peer = Raw(tmp_path, "--config", str(config))
    try:
        opened = peer.open()
        subscribed = peer.request("resources/subscribe", {"uri": "demo://resource/static/document/architecture.md"})
        refused = peer.request("resources/subscribe", {"uri": "fleet://hello"})
        ref = {"type": "ref/prompt", "name": "fleet__greet"}
        completed = peer.request("completion/complete", {"ref": ref, "argument": {"name": "name", "value": "a"}})
        pinged = peer.request("ping")
        levelled = peer.request("logging/setLevel", {"level": "info"})
    finally:
        peer.close()
    assert opened["result"]["capabilities"]["resources"] == {"listChanged": True, "subscribe": True}
    assert subscribed["result"] == {}
    assert refused["error"]["code"] == CanonicalError.METHOD_NOT_FOUND.mcp_code
    assert refused["error"]["data"]["errors"][0]["server"] == "fleet"
    assert completed["result"]["completion"]["values"] == ["ada", "alan"]
    assert pinged["result"] == {} and levelled["result"] == {}


def test_the_report_and_its_page_have_a_section_per_server(tmp_path: Path) -> None:
    """Issue 33: each server checked as itself; the report and the HTML page say which server
    violates what (the broken upstream's invalid tool schema and invalid result, the FastMCP
    server's nothing)."""
    config = write_config(tmp_path, {"good": fleet("good"), "broken": server(BROKEN)})
    peer = Raw(tmp_path, "--config", str(config))
    try:
        peer.open()
        names = [tool["name"] for tool in every_page(peer, "tools/list", "tools")]
        bad = peer.request("tools/call", {"name": "broken__bad_result", "arguments": {}})
        good = peer.request("tools/call", {"name": "good__add", "arguments": {"a": 1, "b": 2}})
    finally:
        assert peer.close() == 0
    assert "broken__badschema" not in names and "broken__bad_result" in names
    assert bad["error"]["data"]["reason"] == CanonicalError.UPSTREAM_INVALID_REPLY.reason
    assert good["result"]["structuredContent"] == {"total": 3}
    [path] = (tmp_path / "runs" / "mcp_server" / "gateway").glob("*-report.json")
    report = json.loads(path.read_text())
    by_server = {entry["name"]: entry for entry in report["servers"]}
    assert by_server["good"]["violations"] == {}
    # The broken server's invalid tool schema (its tool dropped) and its invalid result (refused at its
    # version, the client answered in its place): counted against it, and nothing against anyone else.
    assert by_server["broken"]["violations"] == {"invalid_tool_schema": 1, "invalid_params": 1}
    assert report["violations"] == by_server["broken"]["violations"]
    page = tmp_path / "report.html"
    done = cli(tmp_path, "report", str(path), "--html", str(page))
    assert done.returncode != 2 and page.exists(), done.stderr  # written (the exit says whether it is clean)
    html = page.read_text()
    assert 'data-server="good"' in html and 'data-server="broken"' in html
    broken_section = html[html.index('data-server="broken"') :]
    assert 'data-rule="invalid_tool_schema"' in broken_section.split("</section>")[0]
    assert "No violation." in html[html.index('data-server="good"') :].split("</section>")[0]


def test_an_invalid_result_observed_over_http_is_relayed_as_sent_and_counted_once_against_its_server(
    tmp_path: Path,
) -> None:
    """ADR 37 on the HTTP front, in observe mode: the broken server's result its output schema refuses
    reaches the client as the server's bytes, and is one violation in the report, in its section."""
    config = write_config(tmp_path, {"broken": server(BROKEN)})
    with (
        http_gateway(tmp_path, "--config", str(config), "--mode", "observe") as gateway,
        httpx.Client(timeout=WAIT) as client,
    ):
        headers = {**HEADERS, "Mcp-Session-Id": initialize(client, gateway.url)}
        call = rpc(1, "tools/call", {"name": "broken__wrong_structured", "arguments": {}})
        response = client.post(gateway.url, json=call, headers=headers)
        client.delete(gateway.url, headers=headers)
    assert response.status_code == 200
    # The broken server writes its JSON with spaces (Python's json.dumps); the gateway never would.
    assert '"structuredContent": {"n": "seven"}' in response.text
    report = report_of(tmp_path)
    [broken] = report["servers"]
    assert report["violations"].get("invalid_tool_output") == 1
    assert broken["violations"].get("invalid_tool_output") == 1


def test_a_request_of_no_usable_id_observed_over_stdio_is_answered_and_the_session_goes_on(tmp_path: Path) -> None:
    """Observe mode lets a call whose id is ``true`` on; the aggregate cannot route it (no reply could
    come back by that id), so it answers as a server would, with no id, sends server-everything
    nothing, and the next call is answered as ever. One violation, the client's."""
    config = write_config(tmp_path, {"everything": server(everything())})
    peer = Raw(tmp_path, "--config", str(config), "--mode", "observe")
    try:
        peer.open()
        echo = {"name": "everything__echo", "arguments": {"message": "hi"}}
        peer.send({"jsonrpc": "2.0", "id": True, "method": "tools/call", "params": echo})
        answered = peer.request("tools/call", echo)  # (what came before its answer: ``heard``)
    finally:
        assert peer.close() == 0
    [refused] = [frame for frame in peer.heard if "method" not in frame]
    assert "id" not in refused and refused["error"]["code"] == -32600, refused
    assert answered["result"]["content"][0]["text"].endswith("hi")
    report = report_of(tmp_path)
    assert report["violations"] == {"invalid_envelope": 1}
    [everything_section] = report["servers"]
    assert everything_section["violations"] == {}


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_an_invalid_tool_schema_observed_through_an_aggregate_is_its_servers_once(tmp_path: Path, era: str) -> None:
    """Observe mode keeps the broken server's tool whose schema does not compile in the merged list:
    the finding is its server's, once, in its section; the client's session (and, for a client of
    the stateless era, the era bridge's) learns the tool without finding it again (ADR 39)."""
    config = write_config(tmp_path, {"broken": server(BROKEN)})

    async def listed(url: str) -> list[str]:
        async with Client(url, mode=era, read_timeout_seconds=WAIT) as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    with http_gateway(tmp_path, "--config", str(config), "--mode", "observe") as gateway:
        names = asyncio.run(asyncio.wait_for(listed(gateway.url), 2 * WAIT))
    assert "broken__badschema" in names
    report = report_of(tmp_path)
    found = [entry["violations"].get("invalid_tool_schema", 0) for entry in report["sessions"] if "server" in entry]
    elsewhere = [entry["violations"] for entry in report["sessions"] if "server" not in entry]
    assert max(found) == 1  # (a bridge's spare aggregate, opened ahead, may have listed nothing)
    assert all("invalid_tool_schema" not in violations for violations in elsewhere), elsewhere
    assert report["violations"]["invalid_tool_schema"] == sum(found)


def test_policy_and_approvals_address_tools_by_their_exposed_names(tmp_path: Path) -> None:
    """Issue 33: the policy names tools as the client sees them; a glob on a prefix is a rule for one
    server; an approval is asked of the client's user (elicitation) for the exposed name."""
    policy = tmp_path / "policy.toml"
    policy.write_text('[tools]\ndeny = ["memory__*"]\n\n[[tool]]\nmatch = "fleet__echo"\napproval = true\n')
    servers = {"fleet": fleet("fleet"), "memory": server(memory(), env={"MEMORY_FILE_PATH": str(tmp_path / "m.jsonl")})}
    peer = Raw(tmp_path, "--config", str(write_config(tmp_path, servers)), "--policy", str(policy))
    try:
        peer.open(capabilities={"elicitation": {}})
        denied = peer.request("tools/call", {"name": "memory__read_graph", "arguments": {}})
        allowed = peer.request("tools/call", {"name": "fleet__add", "arguments": {"a": 1, "b": 1}})
        peer.send(
            {
                "jsonrpc": "2.0",
                "id": 99,
                "method": "tools/call",
                "params": {"name": "fleet__echo", "arguments": {"text": "hi"}},
            }
        )
        asked = peer.until("elicitation/create")
        peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"approve": True}}})
        while (echoed := peer.next()).get("id") != 99:
            pass
    finally:
        peer.close()
    assert denied["error"]["code"] == CanonicalError.POLICY_DENIED.mcp_code
    assert allowed["result"]["structuredContent"] == {"total": 2}
    assert "'fleet__echo'" in asked["params"]["message"]
    assert echoed["result"]["content"][0]["text"] == "hi"


def test_the_lockfile_holds_each_server_to_its_own_entry(tmp_path: Path) -> None:
    """Issue 33: the lockfile keys tools by server; it applies per upstream (the aggregate's server
    names are its keys): a server it holds keeps its tools, one it lacks has its tools hidden."""
    lock = tmp_path / "tools.lock.json"
    done = cli(tmp_path, "lock", "--server", "fleet", "--output", str(lock), "--", *FLEET)
    assert done.returncode == 0, done.stderr
    servers = {"fleet": fleet("fleet"), "other": fleet("other")}
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"servers": servers, "lock": lock.name}))
    peer = Raw(tmp_path, "--config", str(config))
    try:
        peer.open()
        names = [tool["name"] for tool in every_page(peer, "tools/list", "tools")]
        refused = peer.request("tools/call", {"name": "other__add", "arguments": {"a": 1, "b": 1}})
    finally:
        peer.close()
    assert "fleet__add" in names and not any(name.startswith("other__") for name in names)
    assert refused["error"]["code"] in {CanonicalError.TOOL_NOT_LOCKED.mcp_code, CanonicalError.TOOL_NOT_FOUND.mcp_code}
    other = next(entry for entry in report_of(tmp_path)["servers"] if entry["name"] == "other")
    assert set(other["violations"]) >= {"unlocked_tool"}


def inspect(tmp_path: Path, *target_and_request: str) -> tuple[int, Any]:
    """The Inspector CLI's exit status and the JSON it printed (its environment: the code under test)."""
    env = server_env(tmp_path, HOME=str(tmp_path), MCP_RUNS_DIR=str(tmp_path / "runs"))
    given = [arg for key in ("PYTHONPATH", "MCP_RUNS_DIR") for arg in ("-e", f"{key}={env[key]}")]
    done = subprocess.run(
        [*inspector_cli(), *given, *target_and_request],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=2 * WAIT,
    )
    printed = done.stdout[: done.stdout.rfind("}") + 1]
    return done.returncode, json.loads(printed) if printed else done.stderr[-2000:]


@pytest.mark.parametrize("front", ["stdio", "http"])
def test_the_inspector_cli_sees_each_server_through_the_aggregate_as_direct(tmp_path: Path, front: str) -> None:
    """Issue 33, "done when": the MCP Inspector CLI over both fronts, servers from a client's own
    configuration file (Claude Desktop's `mcpServers`): a server's tool called through the aggregate
    answers as it does direct."""
    client_file = tmp_path / "claude_desktop_config.json"
    entries = {
        "fleet": {"command": FLEET[0], "args": FLEET[1:]},
        "memory": {
            "command": memory()[0],
            "args": memory()[1:],
            "env": {"MEMORY_FILE_PATH": str(tmp_path / "m.jsonl")},
        },
    }
    client_file.write_text(json.dumps({"mcpServers": entries}))
    call = ("--method", "tools/call", "--tool-arg", "a=2", "--tool-arg", "b=5")
    direct_status, direct = inspect(tmp_path, *FLEET, *call, "--tool-name", "add")
    gateway = [sys.executable, "-m", "mcp_server", "gateway", "--servers", str(client_file)]
    if front == "stdio":
        listed_status, listed = inspect(tmp_path, *gateway, "--method", "tools/list")
        called_status, called = inspect(tmp_path, *gateway, *call, "--tool-name", "fleet__add")
    else:
        with http_gateway(tmp_path, "--servers", str(client_file)) as running:
            listed_status, listed = inspect(tmp_path, running.url, "--transport", "http", "--method", "tools/list")
            called_status, called = inspect(
                tmp_path, running.url, "--transport", "http", *call, "--tool-name", "fleet__add"
            )
    assert direct_status == listed_status == called_status == 0, (listed, called)
    names = [tool["name"] for tool in listed["tools"]]
    assert "fleet__add" in names and "memory__read_graph" in names
    assert called == direct and called["structuredContent"] == {"total": 7}


def test_each_server_negotiates_its_own_version_and_is_checked_at_it(tmp_path: Path) -> None:
    """Issue 33: each upstream negotiates its own version (the era bridge where eras differ) and every
    frame of its side is checked at that version: a server that speaks only 2025-03-26 and one that
    speaks only 2026-07-28 behind one 2025-11-25 client."""
    servers = {
        "old": fleet("old", "--speaks", "2025-03-26"),
        "modern": server([*TARGET, "--era", "modern"], bridge="2026-07-28"),
    }
    peer = Raw(tmp_path, "--config", str(write_config(tmp_path, servers)))
    try:
        opened = peer.open("2025-11-25")
        added = peer.request("tools/call", {"name": "old__add", "arguments": {"a": 1, "b": 2}})
        simple = peer.request("tools/call", {"name": "modern__test_simple_text", "arguments": {}})
    finally:
        peer.close()
    assert opened["result"]["protocolVersion"] == "2025-11-25"
    assert added["result"]["structuredContent"] == {"total": 3}
    assert simple["result"]["content"][0]["text"] == "This is a simple text response for testing."
    report = report_of(tmp_path)
    versions = {entry["name"]: entry["protocol_versions"] for entry in report["servers"]}
    assert versions == {"old": ["2025-03-26"], "modern": ["2025-11-25", "2026-07-28"]}
    assert report["violations"] == {}


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # sampling: the era's own
def test_a_server_over_http_with_headers_and_a_stateless_client_meet_through_the_aggregate(tmp_path: Path) -> None:
    """Issue 33: a server table with a URL and headers (read at start-up as an upstream's are, issue
    31: the value reaches the server and appears in no output), next to one with a command; a client
    of the stateless era (2026-07-28, the official SDK client) on the HTTP front is carried to the
    aggregate by the era bridge: its calls and a server's sampling request."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    secret = "blue-team-credential-4711"
    servers = {
        "remote": {"url": url, "headers": {"X-Team": "${TEAM_TOKEN}"}},
        "local": fleet("local"),
    }
    config = write_config(tmp_path, servers)
    with (
        running([*FLEET, "http", str(port)], url, server_env(tmp_path)),
        http_gateway(tmp_path, "--config", str(config), env={"TEAM_TOKEN": secret}) as gateway,
    ):
        found = asyncio.run(asyncio.wait_for(stateless_session(gateway.url), 2 * WAIT))
    team, total, sampled = found
    assert team == secret and total == {"total": 3} and sampled == "42"
    outputs = [path.read_bytes() for path in (tmp_path / "runs").rglob("*") if path.is_file()]
    assert outputs and not any(secret.encode() in output for output in outputs)
    assert secret not in (tmp_path / "gateway.err").read_text()


async def stateless_session(url: str) -> list[Any]:
    async def sampled(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="42"), model="m")

    async with Client(url, mode="2026-07-28", read_timeout_seconds=WAIT, sampling_callback=sampled) as client:
        team = await client.call_tool("remote__header", {"name": "X-Team"})
        added = await client.call_tool("local__add", {"a": 1, "b": 2})
        asked = await client.call_tool("remote__ask_model", {"question": "six times seven?"})
        return [team.structured_content["result"], added.structured_content, asked.structured_content["result"]]
