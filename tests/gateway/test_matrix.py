"""The real-world matrix (issue 29): servers and clients nobody on this project wrote, each session
run direct and through the gateway (its STDIO front and its HTTP front); the results are identical.

Servers, pinned: `@modelcontextprotocol/server-everything` (STDIO and Streamable HTTP),
`@modelcontextprotocol/server-filesystem`, `@modelcontextprotocol/server-memory` (npm),
`mcp-server-time` (PyPI) and a FastMCP server of our own (`tests/upstreams/matrix_server.py`, the
SDK's `MCPServer`; STDIO and HTTP). Clients: the official Python SDK client in its default mode
(`server/discover` first) and its legacy mode, and the MCP Inspector CLI on Node 22. What a session
does: tools, resources, prompts, calls, invalid calls, results of 700 KB and 3 MB, progress,
cancellation, sampling, elicitation, roots, list changes (as far as each server has them).
The three targets of a case run side by side; servers and HTTP fronts are shared by the module.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from ..conftest import ROOT, server_env
from ..node_tools import SERVER_EVERYTHING, SERVER_FILESYSTEM, SERVER_MEMORY, inspector_cli, node_command
from ..processes import free_port, running

WAIT = 60.0
OWN = [sys.executable, str(ROOT / "tests" / "upstreams" / "matrix_server.py")]
KB = 1024


# -- What a session does, per server -----------------------------------------------------------------

Step = Callable[[Client, "Seen"], Awaitable[Any]]


@dataclass
class Seen:
    """What the client was sent besides replies: progress, and the requests it answered."""

    progress: list[float]
    asked: list[str]


def listed(what: str) -> Step:
    async def step(client: Client, seen: Seen) -> Any:
        if what == "tools":
            return [tool.model_dump(mode="json", exclude_none=True) for tool in (await client.list_tools()).tools]
        if what == "resources":
            return [r.model_dump(mode="json", exclude_none=True) for r in (await client.list_resources()).resources]
        if what == "templates":
            found = (await client.list_resource_templates()).resource_templates
            return [template.model_dump(mode="json", exclude_none=True) for template in found]
        return [prompt.model_dump(mode="json", exclude_none=True) for prompt in (await client.list_prompts()).prompts]

    return step


def called(tool: str, arguments: dict[str, Any], *, invalid: bool = False, progress: bool = False) -> Step:
    """A tool call's result (an invalid call: only whether it is a tool error or its error code, as
    the gateway answers it itself, in its own words)."""

    async def step(client: Client, seen: Seen) -> Any:
        async def noted(value: float, total: float | None, message: str | None) -> None:
            seen.progress.append(value)

        try:
            result = await client.call_tool(tool, arguments, progress_callback=noted if progress else None)
        except MCPError as error:
            return {"error": error.code} if invalid else {"error": error.code, "message": error.error.message}
        if invalid:
            return {"isError": result.is_error, "types": sorted({c.type for c in result.content})}
        dumped = result.model_dump(mode="json", exclude_none=True)
        dumped.pop("meta", None)  # the server's _meta (2026-07-28: its serverInfo), compared apart
        return dumped

    step.tool = tool  # type: ignore[attr-defined]  # which steps call what
    return step


def read(uri: str) -> Step:
    async def step(client: Client, seen: Seen) -> Any:
        return (await client.read_resource(uri)).model_dump(mode="json", exclude_none=True)

    return step


def prompted(name: str, arguments: dict[str, str]) -> Step:
    async def step(client: Client, seen: Seen) -> Any:
        return (await client.get_prompt(name, arguments)).model_dump(mode="json", exclude_none=True)

    return step


def cancelled(tool: str, arguments: dict[str, Any]) -> Step:
    """A call cancelled once the server reported its first progress; the session goes on after it."""

    async def step(client: Client, seen: Seen) -> Any:
        started = asyncio.Event()

        async def noted(value: float, total: float | None, message: str | None) -> None:
            started.set()

        call = asyncio.ensure_future(client.call_tool(tool, arguments, progress_callback=noted))
        await asyncio.wait_for(started.wait(), WAIT)
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError, MCPError):
            await call
        after = await client.call_tool("add", {"a": 1, "b": 1})
        return {"cancelled": call.cancelled(), "after": after.structured_content}

    return step


EVERYTHING_STEPS: list[Step] = [
    listed("tools"),
    listed("resources"),
    listed("templates"),
    listed("prompts"),
    called("get-sum", {"a": 2, "b": 3}),
    called("get-structured-content", {"location": "Chicago"}),
    called("get-tiny-image", {}),
    called("get-sum", {"a": "two", "b": 3}, invalid=True),
    called("trigger-long-running-operation", {"duration": 0.2, "steps": 2}, progress=True),
    called("trigger-sampling-request", {"prompt": "hi", "maxTokens": 5}),
    called("trigger-elicitation-request", {}),
    called("get-roots-list", {}),
    read("demo://resource/static/document/architecture.md"),
    prompted("args-prompt", {"city": "Paris"}),
]
OWN_STEPS: list[Step] = [
    listed("tools"),
    listed("resources"),
    listed("templates"),
    listed("prompts"),
    called("add", {"a": 2, "b": 3}),
    called("add", {"a": "two", "b": 3}, invalid=True),
    called("blob", {"kilobytes": 700}),
    called("blob", {"kilobytes": 3 * KB}),
    called("count", {"steps": 3}, progress=True),
    cancelled("count_slowly", {"seconds": 30}),
    called("ask_model", {"question": "six times seven?"}),
    called("ask_user", {}),
    called("roots", {}),
    read("text://hello"),
    read("text://people/ada"),
    prompted("greet", {"name": "Ada"}),
]
GROW_STEPS: list[Step] = [called("grow", {}), listed("tools")]  # a process of the session's own only


def filesystem_steps(folder: Path) -> list[Step]:
    return [
        listed("tools"),
        called("read_text_file", {"path": str(folder / "700k.txt")}),
        called("read_text_file", {"path": str(folder / "3m.txt")}),
        called("list_directory", {"path": str(folder)}),
        called("get_file_info", {"path": str(folder / "missing.txt")}),
        called("read_text_file", {"path": 7}, invalid=True),
    ]


MEMORY_STEPS: list[Step] = [
    listed("tools"),
    called("create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote"]}]}),
    called("read_graph", {}),
    called("search_nodes", {"query": "Ada"}),
    called("create_entities", {"entities": "none"}, invalid=True),
]
TIME_STEPS: list[Step] = [
    listed("tools"),
    called("convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
    called("convert_time", {"source_timezone": "Nowhere/City", "time": "12:00", "target_timezone": "UTC"}),
    called("get_current_time", {"timezone": 7}, invalid=True),
]


# -- The client: the official SDK's ------------------------------------------------------------------


async def _sampled(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="42"), model="m")


async def _elicited(context: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


async def _roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///srv/project", name="project")])


async def sdk_session(target: Any, mode: str, steps: list[Step]) -> dict[str, Any]:
    """One session of the official SDK client (``mode``): each step's outcome and what else it saw."""
    seen = Seen([], [])

    async def asked(callback: Callable[..., Awaitable[Any]], name: str) -> Callable[..., Awaitable[Any]]:
        async def answer(*args: Any) -> Any:
            seen.asked.append(name)
            return await callback(*args)

        return answer

    async with Client(
        target,
        mode=mode,  # type: ignore[arg-type]
        read_timeout_seconds=WAIT,
        sampling_callback=await asked(_sampled, "sampling"),
        elicitation_callback=await asked(_elicited, "elicitation"),
        list_roots_callback=await asked(_roots, "roots"),
    ) as client:
        outcomes = [await step(client, seen) for step in steps]
        version = client.protocol_version
    # What the client was asked, not in what order or how often: a server asks some of it on its own
    # time (server-everything asks for roots at start, once or twice: direct too, in 2 sessions of 12).
    return {"version": version, "outcomes": outcomes, "progress": seen.progress, "asked": sorted(set(seen.asked))}


# -- Where a session connects: direct, or through either front ------------------------------------


@dataclass(frozen=True)
class Upstream:
    name: str
    command: list[str] | None = None  # a STDIO server
    url: str | None = None  # a Streamable HTTP one
    env: tuple[tuple[str, str], ...] = ()


class Targets:
    """Each upstream direct, through the gateway's STDIO front, and through its HTTP front (one
    gateway process per upstream, started on first use and shared)."""

    def __init__(self, tmp_path: Path, stack: contextlib.ExitStack) -> None:
        self.tmp_path, self.stack = tmp_path, stack
        self.fronts: dict[str, str] = {}

    def env(self, upstream: Upstream) -> dict[str, str]:
        return server_env(self.tmp_path, MCP_RUNS_DIR=str(self.tmp_path / "runs"), **dict(upstream.env))

    def upstream_args(self, upstream: Upstream) -> list[str]:
        return ["--upstream", upstream.url] if upstream.url else ["--", *(upstream.command or [])]

    def direct(self, upstream: Upstream) -> Any:
        if upstream.url:
            return upstream.url
        assert upstream.command is not None
        command = upstream.command
        return StdioServerParameters(command=command[0], args=command[1:], env=self.env(upstream))

    def stdio_front(self, upstream: Upstream) -> StdioServerParameters:
        args = ["-m", "mcp_server", "gateway", *self.upstream_args(upstream)]
        return StdioServerParameters(command=sys.executable, args=args, env=self.env(upstream))

    def http_front(self, upstream: Upstream) -> str:
        if upstream.name not in self.fronts:
            url = f"http://127.0.0.1:{free_port()}/mcp"
            command = [sys.executable, "-m", "mcp_server", "gateway", "--listen", url, *self.upstream_args(upstream)]
            self.fronts[upstream.name] = self.stack.enter_context(running(command, url, self.env(upstream)))
        return self.fronts[upstream.name]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("shared-files")
    line = "0123456789abcdef" * 63 + "\n"
    (folder / "700k.txt").write_text(line * (700 * KB // len(line)))
    (folder / "3m.txt").write_text(line * (3 * KB * KB // len(line)))
    return folder


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, files: Path) -> Iterator[tuple[Targets, dict[str, Upstream]]]:
    """The upstreams of the matrix (the HTTP ones started once) and where clients reach them."""
    tmp_path = tmp_path_factory.mktemp("matrix")
    everything = node_command(SERVER_EVERYTHING, "mcp-server-everything")
    with contextlib.ExitStack() as stack:
        ports = free_port(), free_port()
        everything_url = stack.enter_context(
            running(
                [*everything, "streamableHttp"],
                f"http://127.0.0.1:{ports[0]}/mcp",
                server_env(tmp_path, PORT=str(ports[0])),
            )
        )
        own_url = stack.enter_context(
            running([*OWN, "http", str(ports[1])], f"http://127.0.0.1:{ports[1]}/mcp", server_env(tmp_path))
        )
        upstreams = [
            Upstream("everything-stdio", [*everything, "stdio"]),
            Upstream("everything-http", url=everything_url),
            Upstream("filesystem", [*node_command(SERVER_FILESYSTEM, "mcp-server-filesystem"), str(files)]),
            Upstream("memory", node_command(SERVER_MEMORY, "mcp-server-memory")),
            Upstream("time", [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]),
            Upstream("own-stdio", OWN),
            Upstream("own-http", url=own_url),
        ]
        yield Targets(tmp_path, stack), {upstream.name: upstream for upstream in upstreams}


BIG = {"blob"}


def steps_of(name: str, files: Path, mode: str) -> list[Step]:
    if name == "own-http" and mode == "legacy":  # see the test of the SDK client's SSE event limit below
        return [step for step in OWN_STEPS if getattr(step, "tool", None) not in BIG]
    if name.startswith("everything"):
        return EVERYTHING_STEPS
    if name == "filesystem":
        return filesystem_steps(files)
    if name == "memory":
        return MEMORY_STEPS
    if name == "time":
        return TIME_STEPS
    return OWN_STEPS + (GROW_STEPS if name == "own-stdio" else [])


# The SDK client's default mode everywhere; its legacy mode where a server speaks both eras (ours) or
# where the default mode's probe is what differs (server-everything over HTTP).
SDK_CASES = [
    *((name, "auto") for name in ("everything-stdio", "everything-http", "filesystem", "memory", "time")),
    *((name, "auto") for name in ("own-stdio", "own-http")),
    *((name, "legacy") for name in ("everything-http", "own-stdio", "own-http")),
]


@pytest.mark.parametrize(("upstream", "mode"), SDK_CASES, ids=[f"{u}-{m}" for u, m in SDK_CASES])
def test_the_official_sdk_client_sees_the_same_session_through_the_gateway_as_direct(
    world: tuple[Targets, dict[str, Upstream]], files: Path, upstream: str, mode: str
) -> None:
    """Issue 29: a real server and the official SDK client (default and legacy modes): the session
    through either front of the gateway is the session direct (a memory server's store is a file of
    each session's own)."""
    targets, upstreams = world
    steps = steps_of(upstream, files, mode)

    async def sessions() -> list[dict[str, Any]]:
        runs = []
        for index, make in enumerate((targets.direct, targets.stdio_front, targets.http_front)):
            chosen = upstreams[upstream]
            if chosen.name == "memory":  # a store of each session's own (the HTTP front: a process of its own)
                store = str(targets.tmp_path / f"memory-{mode}-{index}.jsonl")
                chosen = Upstream(f"memory-{index}", chosen.command, env=(("MEMORY_FILE_PATH", store),))
            runs.append(sdk_session(make(chosen), mode, steps))
        return list(await asyncio.wait_for(asyncio.gather(*runs), WAIT * 3))

    direct, stdio_front, http_front = asyncio.run(sessions())
    for front, through in (("stdio", stdio_front), ("http", http_front)):
        differing = [
            index for index, (a, b) in enumerate(zip(direct["outcomes"], through["outcomes"], strict=False)) if a != b
        ]
        assert not differing, f"{front} front, step {differing[0]}: {str(through['outcomes'][differing[0]])[:600]}"
        assert through == direct


def test_a_result_over_the_sdk_clients_sse_event_limit_reaches_it_through_the_gateway(
    world: tuple[Targets, dict[str, Upstream]],
) -> None:
    """Issue 29, the one difference the matrix found: the official SDK client caps one SSE event at
    1 MiB, so a 700 KB result (1.4 MB with its structured copy) from our FastMCP server over HTTP,
    sent as an SSE event, never reaches it direct; through the gateway it does (its HTTP front
    answers a reply that comes at once as a JSON body, its STDIO front has no such cap)."""
    targets, upstreams = world
    chosen = upstreams["own-http"]
    step = called("blob", {"kilobytes": 700})

    async def sessions() -> list[Any]:
        made = (targets.direct(chosen), targets.stdio_front(chosen), targets.http_front(chosen))
        runs = (sdk_session(target, "legacy", [step]) for target in made)
        return list(await asyncio.wait_for(asyncio.gather(*runs), WAIT * 3))

    direct, stdio_front, http_front = asyncio.run(sessions())
    assert "1048576" in direct["outcomes"][0]["message"]  # its words name its cap: the point here
    assert stdio_front == http_front
    assert len(stdio_front["outcomes"][0]["content"][0]["text"]) == 700 * KB


# -- The client: the MCP Inspector's CLI --------------------------------------------------------------

INSPECTOR_CASES: dict[str, list[tuple[str, ...]]] = {
    "everything-stdio": [("--method", "tools/call", "--tool-name", "get-sum", "--tool-arg", "a=2", "b=3")],
    "everything-http": [("--method", "resources/list")],
    "filesystem": [("--method", "tools/call", "--tool-name", "read_text_file", "--tool-arg", "path={files}/3m.txt")],
    "own-http": [("--method", "tools/call", "--tool-name", "blob", "--tool-arg", "kilobytes=700")],
}


def inspect(targets: Targets, target: list[str], request: tuple[str, ...], env: dict[str, str]) -> tuple[int, Any]:
    given = [arg for key in ("PYTHONPATH", "MCP_RUNS_DIR") for arg in ("-e", f"{key}={env[key]}")]
    done = subprocess.run(
        [*inspector_cli(), *given, *target, *request],
        capture_output=True,
        text=True,
        cwd=targets.tmp_path,
        env={**env, "HOME": str(targets.tmp_path)},
        timeout=WAIT * 2,
    )
    printed = done.stdout[: done.stdout.rfind("}") + 1]
    return done.returncode, json.loads(printed) if printed else done.stderr[-2000:]


@pytest.mark.parametrize("upstream", INSPECTOR_CASES)
def test_the_inspector_cli_gets_the_same_answers_through_the_gateway_as_direct(
    world: tuple[Targets, dict[str, Upstream]], files: Path, upstream: str
) -> None:
    """Issue 29: the MCP Inspector CLI (TypeScript SDK, Node 22): the same exit status and answer
    through either front of the gateway as direct."""
    targets, upstreams = world
    chosen = upstreams[upstream]
    env = targets.env(chosen)
    gateway = [sys.executable, "-m", "mcp_server", "gateway"]
    direct = [chosen.url] if chosen.url else list(chosen.command or [])
    stdio_front = [*gateway, *(["--upstream", chosen.url] if chosen.url else direct)]  # the Inspector takes no `--`
    http_front = [targets.http_front(chosen)]
    for request in INSPECTOR_CASES[upstream]:
        request = tuple(part.format(files=files) for part in request)
        asked = [(targets, target, request, env) for target in (direct, stdio_front, http_front)]
        with ThreadPoolExecutor(3) as pool:
            outcomes = list(pool.map(lambda given: inspect(*given), asked))
        assert outcomes[0][0] == 0, outcomes[0]
        assert outcomes[1] == outcomes[0]
        assert outcomes[2] == outcomes[0]
