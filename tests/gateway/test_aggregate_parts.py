"""The aggregate's pure parts (issue 33): the names it exposes, its merged lists and their pages, the
union of its servers' capabilities, where its servers come from (the gateway configuration, a
client's own configuration file), and the id a client's request goes to its server under."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_server.core.errors import CanonicalError, Rejection
from mcp_server.core.settings import SetupError
from mcp_server.core.types import CLIENT_TO_SERVER
from mcp_server.gateway.aggregate.aggregate import _member_id
from mcp_server.gateway.aggregate.capabilities import union
from mcp_server.gateway.aggregate.lists import Merged, Source, page
from mcp_server.gateway.aggregate.member import Call, Member
from mcp_server.gateway.aggregate.names import check_separator, expose, name_problems, prefix_for
from mcp_server.gateway.aggregate.servers import ServerSpec, read_servers
from mcp_server.gateway.bridge.upstream_side import UpstreamSide
from mcp_server.gateway.config import GatewayConfig
from mcp_server.gateway.reports import new_report
from mcp_server.gateway.session import GatewayRun
from mcp_server.registry.schemas import SchemaRegistry

STRICT_CLIENT_NAME = r"^[a-zA-Z0-9_-]{1,64}$"  # the function-calling APIs' tool name rule


def tools(*names: str) -> list[dict[str, Any]]:
    return [{"name": name, "inputSchema": {"type": "object"}} for name in names]


def test_the_default_separator_makes_names_every_client_takes() -> None:
    """Issue 33: `<server>__<tool>` is valid under MCP 2025-11-25's tool name rule and the common
    clients' stricter one (`^[a-zA-Z0-9_-]{1,64}$`)."""
    import re

    exposed = expose("everything", "__", "get-sum")
    assert exposed == "everything__get-sum"
    assert re.fullmatch(STRICT_CLIENT_NAME, exposed)


@pytest.mark.parametrize("separator", [":", ".", "/", " ", "", "__:"])
def test_a_separator_some_client_refuses_is_refused_at_start_up(separator: str) -> None:
    """Issue 33: the separator is checked against every version's tool name rules and the common
    clients' stricter ones (mcpproxy's `:` and a dot are not in the stricter set)."""
    with pytest.raises(SetupError, match="separator"):
        check_separator(separator)


def test_a_client_configuration_name_becomes_a_prefix_of_allowed_characters() -> None:
    """Issue 33: a server named in a client's file (any text) gets a prefix clients take."""
    assert prefix_for("Brave Search") == "Brave-Search"
    assert prefix_for("mcp.server/time") == "mcp-server-time"
    assert prefix_for("memory") == "memory"


def test_names_two_servers_would_share_and_names_too_long_are_each_said() -> None:
    """Issue 33: a name too long or colliding is refused at start-up with a clear message naming the
    servers and the name."""
    listings = {"a": {"tool": ["echo", "x" * 70]}, "b": {"tool": ["echo"]}, "c": {"prompt": ["echo"]}}
    problems = name_problems(listings, {"a": "", "b": "", "c": ""}, "__")
    assert len(problems) == 2
    too_long, taken = problems
    assert "'a'" in too_long and "70 characters" in too_long
    assert "'echo'" in taken and "'a'" in taken and "'b'" in taken and "'c'" not in taken  # a prompt is no tool
    assert name_problems(listings, {"a": "a", "b": "b", "c": "c"}, "__", max_length=80) == []


def test_merged_lists_keep_the_servers_order_and_each_servers_own() -> None:
    """Issue 33 (conformance `tools-list-deterministic-order`): the merged list is in a stable order."""
    merged = Merged(
        [Source(0, "b", "b", {"tools": tools("z", "a")}), Source(1, "a", "a", {"tools": tools("m")})], "__", 64
    )
    assert [tool["name"] for tool in merged.items["tools"]] == ["b__z", "b__a", "a__m"]
    assert merged.named["tools"]["a__m"] == (1, "m")


def test_a_name_taken_at_run_time_is_left_out_and_said() -> None:
    """Issue 33: a later server's tool whose exposed name is taken is hidden (and reported)."""
    merged = Merged(
        [Source(0, "a", "", {"tools": tools("echo")}), Source(1, "b", "", {"tools": tools("echo")})], "__", 64
    )
    assert [tool["name"] for tool in merged.items["tools"]] == ["echo"]
    assert [(hidden.place, hidden.rule) for hidden in merged.hidden] == [(1, "exposed_name_taken")]


def test_a_resource_uri_two_servers_list_is_served_from_the_first_and_reported() -> None:
    """Issue 33: resources keep their URIs; a URI two servers share is reported and served from the
    first listed; a URI of a template goes to the template's server."""
    first = {"resources": [{"uri": "file:///a", "name": "a"}]}
    second = {
        "resources": [{"uri": "file:///a", "name": "a"}, {"uri": "note://x", "name": "x"}],
        "resourceTemplates": [{"uriTemplate": "people://{name}/card{?size}", "name": "card"}],
    }
    merged = Merged([Source(0, "one", "one", first), Source(1, "two", "two", second)], "__", 64)
    assert [item["uri"] for item in merged.items["resources"]] == ["file:///a", "note://x"]
    assert [(hidden.place, hidden.rule, hidden.name) for hidden in merged.hidden] == [
        (1, "resource_uri_shared", "file:///a")
    ]
    assert merged.owner_of_uri("file:///a") == 0
    assert merged.owner_of_uri("people://ada/card?size=2") == 1
    assert merged.owner_of_uri("note://elsewhere") == 1  # a URI of a scheme only one server has
    assert merged.owner_of_uri("unknown://x") is None


def test_a_merged_list_is_paged_and_an_unknown_cursor_is_invalid_params() -> None:
    """MCP server/utilities/pagination: an opaque cursor; an invalid one is -32602."""
    items = tools(*"abcde")
    first, cursor = page(items, None, 2)
    second, cursor2 = page(items, cursor, 2)
    third, end = page(items, cursor2, 2)
    assert [t["name"] for t in first + second + third] == list("abcde") and end is None
    with pytest.raises(Rejection) as refused:
        page(items, "nonsense", 2)
    assert refused.value.error is CanonicalError.INVALID_PARAMS


def test_the_capabilities_are_the_union_with_nothing_a_server_cannot_keep(registry: SchemaRegistry) -> None:
    """Issue 33: the union the servers support; list changes always (the aggregate announces them);
    tasks and experimental never (not carried across servers); only what the client's version knows."""
    servers = [
        {"tools": {}, "logging": {}, "tasks": {"list": {}}, "experimental": {"x": {}}},
        {"resources": {"subscribe": True}, "completions": {}},
    ]
    assert union(servers, registry, "2025-11-25") == {
        "tools": {"listChanged": True},
        "resources": {"listChanged": True, "subscribe": True},
        "logging": {},
        "completions": {},
    }
    assert "completions" not in union(servers, registry, "2024-11-05")  # no such capability then


def config(tmp_path: Path, registry: SchemaRegistry, text: str) -> GatewayConfig:
    path = tmp_path / "gateway.toml"
    path.write_text(text)
    return GatewayConfig.load(path, registry)


def test_servers_come_from_the_gateway_configuration_in_its_order(tmp_path: Path, registry: SchemaRegistry) -> None:
    """Issue 33: a table per server: command with args and env, or URL with headers."""
    found, options = read_servers(
        config(
            tmp_path,
            registry,
            '[aggregate]\nseparator = "--"\npage_size = 7\n'
            '[servers.zeta]\ncommand = "python3"\nargs = ["s.py"]\nenv = { K = "v" }\n'
            '[servers.alpha]\nurl = "http://127.0.0.1:1/mcp"\nheaders = { Authorization = "Bearer t" }\nprefix = ""\n',
        ),
        None,
    )
    assert [(s.name, s.prefix, s.command, dict(s.env), s.url, dict(s.headers)) for s in found] == [
        ("zeta", "zeta", ("python3", "s.py"), {"K": "v"}, None, {}),
        ("alpha", "", (), {}, "http://127.0.0.1:1/mcp", {"Authorization": "Bearer t"}),
    ]
    assert (options.separator, options.page_size) == ("--", 7)


@pytest.mark.parametrize("key", ["mcpServers", "servers"])
def test_servers_come_from_a_client_configuration_as_it_is(tmp_path: Path, registry: SchemaRegistry, key: str) -> None:
    """Issue 33: `mcpServers` of Claude Desktop and Cursor, `servers` of VS Code; a legacy SSE server
    and a disabled one are left out; the gateway configuration may give one a prefix."""
    client = tmp_path / "client.json"
    client.write_text(
        json.dumps(
            {
                key: {
                    "My Files": {"command": "npx", "args": ["-y", "fs"], "env": {"A": "1"}},
                    "remote": {"type": "http", "url": "https://example.org/mcp", "headers": {"X": "1"}},
                    "old": {"type": "sse", "url": "https://example.org/sse"},
                    "off": {"command": "x", "disabled": True},
                }
            }
        )
    )
    found, _ = read_servers(config(tmp_path, registry, '[servers.remote]\nprefix = "r"\n'), client)
    assert [(s.name, s.prefix, s.command, s.url) for s in found] == [
        ("remote", "r", (), "https://example.org/mcp"),
        ("My Files", "My-Files", ("npx", "-y", "fs"), None),
    ]


@pytest.mark.parametrize(
    ("text", "client", "says"),
    [
        ('[servers.a]\nprefix = "p"\n', None, "neither a command nor a url"),
        ('[servers.a]\ncommand = "x"\nurl = "http://h/mcp"\n', None, "/servers/a"),
        ('[servers.a]\nurl = "ftp://h"\n', None, "/servers/a/url"),
        ('[servers.a]\ncommand = "x"\nprefix = "a:b"\n', None, "prefix"),
        ('[aggregate]\nseparator = ":"\n[servers.a]\ncommand = "x"\n', None, "separator"),
        ("", "{not json", "not valid JSON"),
        ("", '{"other": {}}', "not an MCP client configuration"),
        ("", '{"mcpServers": {"a": {"command": "x", "args": "y"}}}', "args must be a list"),
        ("", '{"mcpServers": {"old": {"type": "sse", "url": "https://h/sse"}}}', "no server the gateway can run"),
    ],
)
def test_a_bad_server_table_or_client_file_is_refused_naming_what(
    tmp_path: Path, registry: SchemaRegistry, text: str, client: str | None, says: str
) -> None:
    """The brief's bar: every file that can be wrong has a test showing the error a user gets."""
    path = None
    if client is not None:
        path = tmp_path / "client.json"
        path.write_text(client)
    with pytest.raises(SetupError, match=says):
        read_servers(config(tmp_path, registry, text), path)


def test_a_request_goes_to_its_server_under_the_clients_id_unless_that_id_waits_there(registry: SchemaRegistry) -> None:
    """Issue 33 (ids mapped per upstream): a client's request goes to its server under the client's
    own id, so the reply goes back as it came; an id a request of the aggregate's own still waits
    under there (its ping, say) is replaced by one of the aggregate's, never taken twice."""
    config = GatewayConfig()
    run = GatewayRun(registry, config, new_report("test", config, None, None), 1 << 20)
    side = UpstreamSide(run, "one", server="one", tool_schemas=True)
    member = Member(0, ServerSpec(name="one", prefix="one"), lambda: _no_connection(), lambda: side)
    member.side = side
    side.session.expect(CLIENT_TO_SERVER, "aggregate-0-1", "ping", None)
    assert _member_id(member, 7) == 7
    assert _member_id(member, "mine") == "mine"
    replaced = _member_id(member, "aggregate-0-1")
    assert replaced != "aggregate-0-1"
    side.session.expect(CLIENT_TO_SERVER, replaced, "tools/call", "add")
    assert _member_id(member, "aggregate-0-1") not in {"aggregate-0-1", replaced}
    # A routed call (ADR 37) is booked in the aggregate alone: its id is taken there all the same.
    member.calls[9] = Call(9, "tools/call", "2025-11-25", "add", routed=True)
    assert _member_id(member, 9) != 9


def _no_connection() -> Any:
    raise AssertionError("no connection is made here")
