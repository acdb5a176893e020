"""One gateway in front of many servers (issue 33), with real processes: `server-everything`,
`server-memory` (npm) and a FastMCP server of our own behind one gateway, the official SDK client in
front over both fronts. Each server's session through the aggregate is the same as direct: lists,
calls, resources, prompts, completions, progress, cancellation, sampling, elicitation and roots.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from mcp_server.gateway.aggregate.aggregate import ORIGIN_META

from ..conftest import server_env
from .aggregate_servers import (
    FLEET,
    WAIT,
    everything,
    http_gateway,
    memory,
    report_of,
    stdio_gateway,
    three,
    write_config,
)

Name = Callable[[str], str]  # a server's own tool or prompt name → the name its client calls it by


@dataclass
class Seen:
    """What the client was sent besides replies: progress, and where the server's requests came from."""

    progress: list[float] = field(default_factory=list)
    origins: list[Any] = field(default_factory=list)
    logs: list[Any] = field(default_factory=list)


def dumped(model: Any) -> Any:
    found = model.model_dump(mode="json", exclude_none=True)
    found.pop("meta", None)  # a result's _meta is the server's own (2026-07-28 puts its serverInfo there)
    return found


async def own_tools(client: Client, name: Name) -> list[Any]:
    """The server's tools as its client sees them, under the server's own names (every page)."""
    start, found, cursor = name(""), [], None
    while True:
        listed = await client.list_tools(cursor=cursor, cache_mode="bypass")
        found += [tool for tool in listed.tools if tool.name.startswith(start)]
        cursor = listed.next_cursor
        if cursor is None:
            return [{**dumped(tool), "name": tool.name[len(start) :]} for tool in found]


async def call(
    client: Client, tool: str, arguments: dict[str, Any], seen: Seen | None = None, *, invalid: bool = False
) -> Any:
    """A call's result (an invalid call's: only that it is a tool error, as the gateway answers it in
    its own words, as a single-server gateway does)."""

    async def noted(value: float, total: float | None, message: str | None) -> None:
        assert seen is not None
        seen.progress.append(value)

    try:
        result = await client.call_tool(tool, arguments, progress_callback=noted if seen else None)
    except MCPError as error:
        return {"error": error.code}
    return (
        {"isError": result.is_error, "types": sorted({c.type for c in result.content})} if invalid else dumped(result)
    )


async def fleet_session(client: Client, name: Name, seen: Seen) -> list[Any]:
    started = asyncio.Event()

    async def begun(value: float, total: float | None, message: str | None) -> None:
        started.set()

    slow = asyncio.ensure_future(client.call_tool(name("count_slowly"), {"seconds": 30}, progress_callback=begun))
    await asyncio.wait_for(started.wait(), WAIT)
    slow.cancel()  # the SDK client cancels its call (notifications/cancelled) once it started
    with contextlib.suppress(asyncio.CancelledError, MCPError):
        await slow
    resources = (await client.list_resources()).resources
    templates = (await client.list_resource_templates()).resource_templates
    prompts = [dumped(p) for p in (await client.list_prompts()).prompts if p.name.startswith(name(""))]
    reference = types.PromptReference(type="ref/prompt", name=name("greet"))
    return [
        await own_tools(client, name),
        [dumped(r) for r in resources if r.uri.startswith("fleet://")],
        [dumped(t) for t in templates if t.uri_template.startswith("fleet://")],
        [{**p, "name": p["name"][len(name("")) :]} for p in prompts],
        await call(client, name("add"), {"a": 2, "b": 3}),
        await call(client, name("add"), {"a": "two", "b": 3}, invalid=True),
        await call(client, name("count"), {"steps": 3}, seen),
        await call(client, name("ask_model"), {"question": "six times seven?"}),
        await call(client, name("ask_user"), {}),
        await call(client, name("roots"), {}),
        dumped(await client.read_resource("fleet://hello")),
        dumped(await client.read_resource("fleet://people/ada")),
        dumped(await client.get_prompt(name("greet"), {"name": "Ada"})),
        dumped(await client.complete(reference, {"name": "name", "value": "a"})),
        await call(client, name("log"), {}),
        slow.cancelled(),
    ]


async def memory_session(client: Client, name: Name, seen: Seen) -> list[Any]:
    entities = [{"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}]
    return [
        await own_tools(client, name),
        await call(client, name("create_entities"), {"entities": entities}),
        await call(client, name("search_nodes"), {"query": "Ada"}),
        await call(client, name("read_graph"), {}),
        await call(client, name("create_entities"), {"entities": "none"}, invalid=True),
    ]


async def everything_session(client: Client, name: Name, seen: Seen) -> list[Any]:
    prompts = [dumped(p) for p in (await client.list_prompts()).prompts if p.name.startswith(name(""))]
    return [
        await own_tools(client, name),
        [{**p, "name": p["name"][len(name("")) :]} for p in prompts],
        await call(client, name("get-sum"), {"a": 2, "b": 3}),
        await call(client, name("get-structured-content"), {"location": "Chicago"}),
        await call(client, name("trigger-long-running-operation"), {"duration": 0.2, "steps": 2}, seen),
        await call(client, name("trigger-sampling-request"), {"prompt": "hi", "maxTokens": 5}),
        await call(client, name("trigger-elicitation-request"), {}),
        await call(client, name("get-roots-list"), {}),
        dumped(await client.read_resource("demo://resource/static/document/architecture.md")),
        dumped(await client.get_prompt(name("args-prompt"), {"city": "Paris"})),
    ]


SESSIONS: dict[str, Callable[[Client, Name, Seen], Awaitable[list[Any]]]] = {
    "fleet": fleet_session,
    "memory": memory_session,
    "everything": everything_session,
}


def client(target: StdioServerParameters | str, seen: Seen) -> Client:
    """The official SDK client (the handshake era), answering what a server asks as a user would."""

    async def sampled(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        seen.origins.append((params.meta or {}).get(ORIGIN_META) if params.meta else None)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="42"), model="m")

    async def elicited(context: Any, params: Any) -> types.ElicitResult:
        seen.origins.append((params.meta or {}).get(ORIGIN_META) if params.meta else None)
        wanted = getattr(params, "requested_schema", {}) or {}
        if "name" in wanted.get("properties", {}):
            return types.ElicitResult(action="accept", content={"name": "ada"})
        return types.ElicitResult(action="decline")

    async def rooted(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///srv/project", name="project")])

    async def logged(params: types.LoggingMessageNotificationParams) -> None:
        seen.logs.append(params)

    return Client(
        target,
        mode="legacy",
        read_timeout_seconds=WAIT,
        sampling_callback=sampled,
        elicitation_callback=elicited,
        list_roots_callback=rooted,
        logging_callback=logged,
    )


def direct(tmp_path: Path, server: str) -> StdioServerParameters:
    command = {"fleet": FLEET, "memory": memory(), "everything": everything()}[server]
    env = server_env(tmp_path, MEMORY_FILE_PATH=str(tmp_path / f"direct-{server}.jsonl"))
    return StdioServerParameters(command=command[0], args=command[1:], env=env)


async def run_direct(tmp_path: Path) -> dict[str, tuple[list[Any], Seen]]:
    found = {}
    for server, session in SESSIONS.items():
        seen = Seen()
        async with client(direct(tmp_path, server), seen) as connected:
            found[server] = (await session(connected, lambda own: own, seen), seen)
    return found


async def run_through(target: StdioServerParameters | str) -> tuple[dict[str, tuple[list[Any], Seen]], list[Any]]:
    """Each server's session through one aggregate, one client; what the aggregate says it is, and
    what the client was asked and told (with its origin)."""
    found, asked = {}, Seen()
    async with client(target, asked) as connected:
        await connected.send_ping()
        await connected.set_logging_level("info")
        for server, session in SESSIONS.items():
            seen = Seen()
            found[server] = (await session(connected, lambda own, s=server: f"{s}__{own}", seen), seen)
        capabilities = connected.server_capabilities.model_dump(exclude_none=True)
        return found, [connected.protocol_version, capabilities, asked]


@pytest.fixture(scope="module")
def direct_sessions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[list[Any], Seen]]:
    return asyncio.run(asyncio.wait_for(run_direct(tmp_path_factory.mktemp("direct")), 4 * WAIT))


@pytest.mark.parametrize("front", ["stdio", "http"])
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # ping, logging: the era's own
def test_three_servers_behind_one_gateway_answer_each_as_it_does_direct(
    tmp_path: Path, front: str, direct_sessions: dict[str, tuple[list[Any], Seen]]
) -> None:
    """Issue 33, "done when": server-everything, server-memory and a FastMCP server behind one gateway,
    the official SDK client over STDIO and HTTP: lists, calls, resources, prompts, completions,
    progress, cancellation, sampling, elicitation and roots, each the same as direct."""
    config = write_config(tmp_path, three(tmp_path))
    if front == "stdio":
        through, said = asyncio.run(
            asyncio.wait_for(run_through(stdio_gateway(tmp_path, "--config", str(config))), 4 * WAIT)
        )
    else:
        with http_gateway(tmp_path, "--config", str(config)) as gateway:
            through, said = asyncio.run(asyncio.wait_for(run_through(gateway.url), 4 * WAIT))
    for server, (results, _) in direct_sessions.items():
        assert through[server][0] == results, server
        assert through[server][1].progress == direct_sessions[server][1].progress, server
    version, capabilities, asked = said
    assert version == "2025-11-25"
    assert capabilities["tools"] == {"list_changed": True} and capabilities["resources"]["subscribe"] is True
    assert "tasks" not in capabilities and "experimental" not in capabilities
    # What a server asks the client (sampling, elicitation) and tells it (a log) names the server.
    assert asked.origins == ["fleet", "fleet", "everything", "everything"]
    assert "fleet" in {log.meta.get(ORIGIN_META) for log in asked.logs if log.meta}
    report = report_of(tmp_path)
    assert [entry["name"] for entry in report["servers"]] == ["fleet", "memory", "everything"]
    assert all(entry["violations"] == {} for entry in report["servers"])
    assert report["violations"] == {"invalid_tool_input": 2}  # the client's two invalid calls
    # Each call relayed is counted once in its server's sections (routed or not, ADR 38): all the
    # client's but its two refused; the run's table counts both sides.
    sessions = report["sessions"]
    to_servers = sum(calls_in(entry) for entry in sessions if "server" in entry)
    from_client = sum(calls_in(entry) for entry in sessions if "server" not in entry)
    assert to_servers == from_client - 2 and to_servers > 0
    assert report["frames"]["client_to_server"]["tools/call"] == from_client + to_servers


def calls_in(entry: dict[str, Any]) -> int:
    """The ``tools/call`` requests a report's session entry counts."""
    return int(entry["frames"].get("client_to_server", {}).get("tools/call", 0))
