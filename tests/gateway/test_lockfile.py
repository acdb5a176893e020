"""`mcp-server lock` and `mcp-server gateway --lock`: every tool pinned in a reviewable file, every
replica holding its upstream to it (issue 21). Real SDK upstreams, the gateway as a process, the
official SDK client and raw NDJSON in front.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from mcp_server.core.errors import CanonicalError

from ..conftest import cli, server_env
from ..processes import free_port, running
from .gateways import BROKEN_UPSTREAM, DRIFTING, WAIT, Peer, gateway_command, handshake, lock, report_of

NOT_LOCKED = CanonicalError.TOOL_NOT_LOCKED


def tools_seen(tmp_path: Path, *options: str, upstream: list[str]) -> list[str]:
    """The tool names the official SDK client lists through ``gateway OPTIONS -- UPSTREAM`` (it
    validates the list the gateway hands it)."""

    async def session() -> list[str]:
        command = gateway_command(*options, upstream=upstream)
        env = server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "sdk-runs"))  # its report apart
        async with Client(StdioServerParameters(command=command[0], args=command[1:], env=env)) as client:
            return sorted(tool.name for tool in (await client.list_tools()).tools)

    return asyncio.run(asyncio.wait_for(session(), WAIT))


def call(peer: Peer, request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return peer.call({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


def session_through(tmp_path: Path, *options: str, upstream: list[str]) -> tuple[list[str], dict[str, Any]]:
    """A raw session: the names listed, and the reply to each call of `add`, `say` and `echo`."""
    peer = Peer(tmp_path, *options, upstream=upstream)
    handshake(peer, "2025-11-25")
    listed = peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    replies = {
        "add": call(peer, 3, "add", {"a": 1, "b": 2}),
        "say": call(peer, 4, "say", {"text": "hi"}),
        "echo": call(peer, 5, "echo", {"text": "hi"}),
    }
    status, stderr = peer.finish()
    assert status == 0 and "Traceback" not in stderr, stderr
    return sorted(tool["name"] for tool in listed["result"]["tools"]), replies


def assert_not_locked(reply: dict[str, Any]) -> None:
    assert reply["error"]["code"] == NOT_LOCKED.mcp_code, reply
    assert reply["error"]["data"]["reason"] == NOT_LOCKED.reason


def test_the_lockfile_is_versioned_pretty_json_with_each_tool_whole_per_server(tmp_path: Path) -> None:
    """Issue 21: `lock` writes every tool's name, fingerprint and definition under the server's
    `serverInfo.name`, in a stable order (locking twice writes the same bytes)."""
    path = lock(tmp_path)
    first = path.read_bytes()
    document = json.loads(first)
    assert document["lockfileVersion"] == 1
    [(server, entry)] = document["servers"].items()
    assert server == "drifting-upstream"
    assert [tool["name"] for tool in entry["tools"]] == ["add", "echo", "fail", "trace"]
    add = entry["tools"][0]
    assert add["definition"]["name"] == "add" and "inputSchema" in add["definition"]
    assert len(add["fingerprint"]) == 64
    assert first.startswith(b'{\n  "lockfileVersion": 1,')
    assert lock(tmp_path).read_bytes() == first


def test_locking_a_second_server_keeps_the_first(tmp_path: Path) -> None:
    """Issue 21: one lockfile holds every server (`--server NAME` names an entry)."""
    lock(tmp_path)
    path = lock(tmp_path, "--server", "broken", upstream=BROKEN_UPSTREAM)
    servers = json.loads(path.read_text())["servers"]
    assert sorted(servers) == ["broken", "drifting-upstream"]
    assert len(servers["broken"]["tools"]) == 10


def test_the_locked_server_passes_unchanged_through_the_gateway(tmp_path: Path) -> None:
    """Issue 21: an upstream that lists what was locked passes: every tool listed, calls answered,
    no lock rule broken."""
    path = lock(tmp_path)
    assert tools_seen(tmp_path, "--lock", str(path), upstream=DRIFTING) == ["add", "echo", "fail", "trace"]
    names, replies = session_through(tmp_path, "--lock", str(path), upstream=DRIFTING)
    assert names == ["add", "echo", "fail", "trace"]
    assert replies["add"]["result"]["structuredContent"] == {"result": 3}
    assert_not_locked(replies["say"])  # a tool the lock does not hold is refused even when unlisted
    violations = report_of(tmp_path)["violations"]
    assert "locked_tool_changed" not in violations and "unlocked_tool" not in violations


def test_a_changed_tool_is_hidden_refused_and_reported_with_its_patch(tmp_path: Path) -> None:
    """Issue 21: a tool whose definition changed since it was locked is hidden from `tools/list`
    (the SDK client accepts the list), its calls refused with `tool_not_locked`, and reported with
    the RFC 6902 patch from the locked definition."""
    path = lock(tmp_path)
    changed = [*DRIFTING, "--variant", "changed"]
    assert tools_seen(tmp_path, "--lock", str(path), upstream=changed) == ["echo", "fail", "trace"]
    names, replies = session_through(tmp_path, "--lock", str(path), upstream=changed)
    assert names == ["echo", "fail", "trace"]
    assert_not_locked(replies["add"])
    assert replies["echo"]["result"]["structuredContent"] == {"result": "hi"}
    report = report_of(tmp_path)
    [example, *_] = report["examples"]["locked_tool_changed"]
    assert example["tool"] == "add" and example["action"] == "hidden"
    added = {"default": 0, "title": "C", "type": "integer"}
    assert {"op": "add", "path": "/inputSchema/properties/c", "value": added} in example["patch"]
    assert report["violations"]["tool_not_locked"] >= 1


def test_a_renamed_tool_is_known_by_its_definition(tmp_path: Path) -> None:
    """Issue 21 (a renamed tool defeats hash pinning): a locked definition under a new name is
    `locked_tool_renamed`, naming the locked name; it is hidden, and the old name is not `removed`."""
    path = lock(tmp_path)
    names, replies = session_through(tmp_path, "--lock", str(path), upstream=[*DRIFTING, "--variant", "renamed"])
    assert names == ["add", "fail", "trace"]
    assert_not_locked(replies["say"])
    report = report_of(tmp_path)
    renamed = report["examples"]["locked_tool_renamed"][0]  # once per listing (the gateway lists too)
    assert renamed["tool"] == "say"
    assert renamed["errors"] == [{"path": "/name", "msg": "locked as 'echo'"}]
    assert renamed["patch"] == [{"op": "replace", "path": "/name", "value": "say"}]
    assert "locked_tool_removed" not in report["violations"]


def test_a_removed_tool_and_a_new_one_are_reported(tmp_path: Path) -> None:
    """Issue 21: a locked tool no longer listed is `locked_tool_removed`; a tool the lock lacks is
    `unlocked_tool`, hidden and refused."""
    path = lock(tmp_path)
    names, _ = session_through(tmp_path, "--lock", str(path), upstream=[*DRIFTING, "--variant", "removed"])
    assert names == ["add", "echo", "trace"]
    removed = report_of(tmp_path)["examples"]["locked_tool_removed"][0]
    assert removed["tool"] == "fail" and removed["action"] == "reported"
    assert {"op": "remove", "path": "/name"} in removed["patch"]
    added = tmp_path / "added"
    added.mkdir()
    peer = Peer(added, "--lock", str(path), upstream=[*DRIFTING, "--variant", "added"])
    handshake(peer, "2025-11-25")
    listed = peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert "delete_everything" not in {tool["name"] for tool in listed["result"]["tools"]}
    assert_not_locked(call(peer, 3, "delete_everything", {}))
    peer.finish()
    assert report_of(added)["examples"]["unlocked_tool"][0]["tool"] == "delete_everything"


def test_observe_mode_reports_a_changed_tool_and_lets_it_through(tmp_path: Path) -> None:
    """Issue 21: in observe mode a changed tool stays listed and callable; it is reported."""
    path = lock(tmp_path)
    changed = [*DRIFTING, "--variant", "changed"]
    names, replies = session_through(tmp_path, "--lock", str(path), "--mode", "observe", upstream=changed)
    assert names == ["add", "echo", "fail", "trace"]
    assert replies["add"]["result"]["structuredContent"] == {"result": 3}
    report = report_of(tmp_path)
    assert report["examples"]["locked_tool_changed"][0]["action"] == "observed"
    assert report["violations"]["tool_not_locked"] == 2  # the calls of `add` and `say`, counted, passed on


def test_two_gateways_reading_one_lockfile_decide_the_same(tmp_path: Path) -> None:
    """Issue 21: every replica reading the same file decides the same way (two processes at once)."""
    path = lock(tmp_path)
    changed = [*DRIFTING, "--variant", "changed"]
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    peers = [Peer(where, "--lock", str(path), upstream=changed) for where in (first, second)]
    seen = []
    for peer in peers:
        handshake(peer, "2025-11-25")
    for peer in peers:
        listed = peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        add, echo = call(peer, 3, "add", {"a": 1, "b": 1}), call(peer, 4, "echo", {"text": "x"})
        names = [tool["name"] for tool in listed["result"]["tools"]]
        seen.append((names, add.get("error", {}).get("code"), echo["result"]))
    for peer in peers:
        peer.finish()
    assert seen[0] == seen[1]
    assert seen[0][1] == NOT_LOCKED.mcp_code
    assert report_of(first)["violations"] == report_of(second)["violations"]


def test_the_broken_upstreams_second_list_is_held_to_the_lock(tmp_path: Path) -> None:
    """Issue 21: the upstream that changes a tool on its second `tools/list` (over pages) passes the
    first and has the tool hidden on the second; the calls of it are refused from then on."""
    pages = [*BROKEN_UPSTREAM, "--pages"]
    path = lock(tmp_path, upstream=pages)
    peer = Peer(tmp_path, "--lock", str(path), upstream=pages)
    handshake(peer, "2025-11-25")

    def listing(first_id: int) -> list[str]:
        names, cursor, request_id = [], None, first_id
        while True:
            params = {} if cursor is None else {"cursor": cursor}
            result = peer.call({"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": params})["result"]
            names += [tool["name"] for tool in result["tools"]]
            cursor, request_id = result.get("nextCursor"), request_id + 1
            if cursor is None:
                return names

    assert "wrong_structured" in listing(10)
    assert "wrong_structured" not in listing(20)
    assert_not_locked(call(peer, 30, "wrong_structured", {}))
    peer.finish()
    assert report_of(tmp_path)["examples"]["locked_tool_changed"][0]["tool"] == "wrong_structured"


@pytest.mark.parametrize(
    ("tamper", "fragment"),
    [
        (lambda text: text.replace('"add"', '"sum"', 1), "/servers/drifting-upstream/tools/0/definition/name"),
        (lambda text: text.replace("Add two", "Subtract two", 1), "/servers/drifting-upstream/tools/0/fingerprint"),
        (lambda text: text.replace('"lockfileVersion": 1', '"lockfileVersion": 2'), "/lockfileVersion"),
        (lambda text: text[:-3], "line"),
    ],
    ids=["name", "fingerprint", "version", "syntax"],
)
def test_a_bad_lockfile_exits_2_naming_the_place(tmp_path: Path, tamper: Any, fragment: str) -> None:
    """Issue 21: a lockfile that is not a sound one (schema, a fingerprint not its definition's, JSON
    syntax) is refused at start: exit 2, the pointer or the line named, no traceback."""
    path = lock(tmp_path)
    path.write_text(tamper(path.read_text()))
    result = cli(tmp_path, "gateway", "--lock", str(path), "--", *DRIFTING, wait=WAIT)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("mcp:error reason=setup_failed detail=lockfile ")
    assert fragment in result.stderr and "Traceback" not in result.stderr


def test_the_config_file_names_the_lockfile_relative_to_itself(tmp_path: Path) -> None:
    """Issue 21: `lock = "FILE"` in the gateway configuration, a path relative to the file."""
    (tmp_path / "conf").mkdir()
    lock(tmp_path, output="conf/tools.lock.json")
    config = tmp_path / "conf" / "gateway.toml"
    config.write_text('lock = "tools.lock.json"\n')
    names, replies = session_through(tmp_path, "--config", str(config), upstream=[*DRIFTING, "--variant", "changed"])
    assert "add" not in names
    assert_not_locked(replies["add"])


def test_lock_leaves_a_file_that_is_not_a_lockfile_untouched(tmp_path: Path) -> None:
    """Issue 21: `lock` merges into an existing lockfile; a file there that is not one is unusable
    input (exit 2, named), never overwritten."""
    kept = tmp_path / "mcp.lock.json"
    kept.write_text('{"not": "a lockfile"}\n')
    result = cli(tmp_path, "lock", "--", *DRIFTING, wait=WAIT)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("mcp:error reason=setup_failed detail=lockfile mcp.lock.json")
    assert kept.read_text() == '{"not": "a lockfile"}\n'


def test_a_lockfile_of_several_servers_is_matched_by_server_info_or_named(tmp_path: Path) -> None:
    """Issue 21: with several servers locked, the upstream's `serverInfo.name` picks its entry (or
    `--lock-server NAME`); an entry the file lacks is refused at start (exit 2)."""
    lock(tmp_path)
    path = lock(tmp_path, "--server", "broken", upstream=BROKEN_UPSTREAM)
    names, replies = session_through(tmp_path, "--lock", str(path), upstream=DRIFTING)
    assert names == ["add", "echo", "fail", "trace"]
    assert replies["add"]["result"]["structuredContent"] == {"result": 3}
    named = tmp_path / "named"
    named.mkdir()
    names, replies = session_through(named, "--lock", str(path), "--lock-server", "broken", upstream=DRIFTING)
    assert names == []  # held to the other server's entry: nothing here is locked there
    assert_not_locked(replies["add"])
    result = cli(tmp_path, "gateway", "--lock", str(path), "--lock-server", "nope", "--", *DRIFTING, wait=WAIT)
    assert result.returncode == 2 and "no server 'nope'" in result.stderr


def test_locking_over_http_writes_what_locking_over_stdio_does(tmp_path: Path) -> None:
    """Issue 21: `lock --upstream URL` locks a Streamable HTTP server; the same server locks to the
    same bytes whichever way it is reached."""
    over_stdio = lock(tmp_path, output="stdio.lock.json").read_bytes()
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with running([*DRIFTING, "http", str(port)], url, server_env(tmp_path)):
        result = cli(tmp_path, "lock", "--upstream", url, "--output", "http.lock.json", wait=WAIT)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "http.lock.json").read_bytes() == over_stdio
