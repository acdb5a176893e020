"""The whole chain in process: error mapping, ids, notifications, and the MCP lifecycle per version."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_server.core.errors import CanonicalError
from mcp_server.core.session import Session
from mcp_server.core.types import Handler
from mcp_server.registry.schemas import SchemaRegistry

from ..conftest import exchange, initialize_frame, meta_2026

HANDSHAKE = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


def code_of(reply: dict[str, Any]) -> int:
    return int(reply["error"]["code"])


def test_oversized_frame_gets_the_exact_payload_too_large_reply(handler: Handler) -> None:
    """Issue 2 §4: the size guard's reply, byte for byte in content (issue 29: naming size and limit)."""
    [reply] = exchange(handler, [b'{"a":"' + b"x" * 1_048_576 + b'"}'])
    assert reply == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32600,
            "message": "Payload too large",
            "data": {
                "ok": False,
                "reason": "validation_failed",
                "errors": [{"path": "", "msg": "payload_too_large"}],
                "size": 1_048_584,
                "limit": 1_048_576,
            },
        },
    }


def test_an_oversized_request_is_answered_by_the_id_its_head_holds(handler: Handler) -> None:
    """Issue 29: a request over the limit is answered by its own id, read without parsing the frame."""
    frame = b'{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"x","arguments":{"a":"'
    [reply] = exchange(handler, [frame + b"x" * 1_048_576 + b'"}}}'])
    assert reply["id"] == 41 and reply["error"]["data"]["limit"] == 1_048_576


def test_an_invalid_envelope_echoes_a_readable_id(handler: Handler) -> None:
    """Issue 2 §4: -32600 with the id echoed when it is readable."""
    [reply] = exchange(handler, [{"jsonrpc": "1.0", "id": "abc", "method": "ping"}])
    assert reply["id"] == "abc" and code_of(reply) == CanonicalError.INVALID_ENVELOPE.jsonrpc_code


def test_a_notification_never_gets_a_reply_even_when_invalid(handler: Handler) -> None:
    """JSON-RPC 2.0 §4.1 and issue 2 §4: notifications are never answered."""
    replies = exchange(
        handler,
        [
            {"jsonrpc": "2.0", "method": "notifications/unknown"},
            {"jsonrpc": "1.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": "x"}},
        ],
    )
    assert replies == [None, None, None]


def test_a_response_from_the_client_to_an_unknown_id_is_not_answered(handler: Handler) -> None:
    """JSON-RPC 2.0 §5: a response is never answered; the violation is only logged."""
    assert exchange(handler, [{"jsonrpc": "2.0", "id": 99, "result": {}}]) == [None]


def test_a_request_before_initialize_is_refused_but_ping_is_allowed(handler: Handler) -> None:
    """MCP basic/lifecycle: only pings may precede the initialize request (of a method only the
    handshake versions define: one 2026-07-28 defines is taken for a stateless request, issue 24)."""
    set_level, ping = exchange(
        handler,
        [
            {"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "info"}},
            {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        ],
    )
    assert code_of(set_level) == CanonicalError.NOT_INITIALIZED.jsonrpc_code
    assert set_level["error"]["data"]["errors"][0]["msg"] == "not_initialized"
    assert ping == {"jsonrpc": "2.0", "id": 2, "result": {}}


def test_initialize_twice_is_refused(handler: Handler) -> None:
    """MCP basic/lifecycle: initialization is the first interaction, once per session."""
    first, second = exchange(handler, [initialize_frame("2025-11-25", 1), initialize_frame("2025-11-25", 2)])
    assert "result" in first
    assert code_of(second) == CanonicalError.ALREADY_INITIALIZED.jsonrpc_code


@pytest.mark.parametrize("version", HANDSHAKE)
def test_initialize_agrees_to_every_supported_handshake_version(handler: Handler, version: str) -> None:
    """MCP basic/lifecycle "Version Negotiation": a supported version is echoed back."""
    [reply] = exchange(handler, [initialize_frame(version)])
    assert reply["result"]["protocolVersion"] == version


@pytest.mark.parametrize("offered", ["1999-01-01", "2026-07-28", "latest"])
def test_initialize_with_an_unsupported_version_answers_the_newest_handshake_version(
    handler: Handler, registry: SchemaRegistry, offered: str
) -> None:
    """MCP basic/lifecycle: otherwise the server answers with the latest version it supports."""
    [reply] = exchange(handler, [initialize_frame(offered)])
    assert reply["result"]["protocolVersion"] == registry.latest_handshake == "2025-11-25"


def test_unknown_method_is_method_not_found_and_bad_params_list_every_violation(handler: Handler) -> None:
    """Issue 2 §4: unknown method -32601; invalid params -32602 listing every violation, sorted."""
    session = Session()
    _, unknown, invalid = exchange(
        handler,
        [
            initialize_frame("2025-11-25"),
            {"jsonrpc": "2.0", "id": 1, "method": "no/such"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": 7, "arguments": [], "task": 1}},
        ],
        session,
    )
    assert code_of(unknown) == -32601
    assert code_of(invalid) == -32602
    errors = invalid["error"]["data"]["errors"]
    assert [e["path"] for e in errors] == ["/params/arguments", "/params/name", "/params/task"]
    assert all(set(e) == {"path", "msg", "keyword", "schemaPath"} for e in errors)
    assert errors == sorted(errors, key=lambda e: (e["path"], e["msg"]))


def test_an_unknown_tool_is_invalid_params_on_the_wire(handler: Handler) -> None:
    """MCP spec server/tools "Error Handling": unknown tools → -32602."""
    _, reply = exchange(
        handler,
        [
            initialize_frame("2025-11-25"),
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "nope"}},
        ],
    )
    assert code_of(reply) == -32602
    assert reply["error"]["message"] == CanonicalError.TOOL_NOT_FOUND.message


def test_invalid_tool_arguments_are_a_tool_result_from_2025_11_25_and_an_error_before(handler: Handler) -> None:
    """MCP 2025-11-25 server/tools: input validation errors are tool results with isError."""
    bad_call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "validate_asset", "arguments": {"asset": {}, "schema": 5}},
    }
    _, new = exchange(handler, [initialize_frame("2025-11-25"), bad_call])
    _, old = exchange(handler, [initialize_frame("2025-06-18"), bad_call])
    assert new["result"]["isError"] is True
    assert new["result"]["structuredContent"]["errors"][0]["path"] == "/schema"
    assert code_of(old) == CanonicalError.INVALID_TOOL_INPUT.mcp_code


def test_2026_requests_need_no_handshake_and_every_result_carries_result_type(handler: Handler) -> None:
    """MCP 2026-07-28: per-request _meta version, server/discover, resultType on every result."""
    discover, listed = exchange(
        handler,
        [
            {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": meta_2026()},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": meta_2026()},
        ],
    )
    assert "2026-07-28" in discover["result"]["supportedVersions"]
    assert discover["result"]["resultType"] == listed["result"]["resultType"] == "complete"
    assert listed["result"]["tools"]


def test_2026_request_with_an_unsupported_version_gets_the_spec_error(
    handler: Handler, registry: SchemaRegistry
) -> None:
    """MCP 2026-07-28 UnsupportedProtocolVersionError: -32022 with requested and supported (the
    versions a request may state: what server/discover lists, conformance `server-stateless`)."""
    params = meta_2026()
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2030-01-01"
    [reply] = exchange(handler, [{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}])
    assert code_of(reply) == -32022
    assert reply["error"]["data"]["requested"] == "2030-01-01"
    assert reply["error"]["data"]["supported"] == list(registry.stateless_versions)
    registry.protocol("2026-07-28").definition_validator("UnsupportedProtocolVersionError").validate(reply)


def test_2026_request_without_client_capabilities_is_invalid_params(handler: Handler) -> None:
    """MCP 2026-07-28 RequestMetaObject: clientCapabilities is required."""
    params = meta_2026()
    del params["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    [reply] = exchange(handler, [{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}])
    assert code_of(reply) == -32602
    assert reply["error"]["data"]["errors"][0]["path"] == "/params/_meta"


def test_ping_is_not_a_method_of_2026(handler: Handler) -> None:
    """MCP 2026-07-28: ping was removed; the method is unknown at that version."""
    [reply] = exchange(handler, [{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": meta_2026()}])
    assert code_of(reply) == -32601


def test_a_chain_runs_its_stages_in_order_and_stops_at_a_rejection() -> None:
    """A chain of stages other than the known ones has no fast path: every frame goes down the
    diagnostic path, the stages in the order given, and the first rejection ends it."""
    from mcp_server.chain.compose import Chain, build_chain
    from mcp_server.chain.stage import Inspection
    from mcp_server.core.errors import Rejection
    from mcp_server.core.types import Direction, Frame, Message, MessageKind

    seen: list[str] = []

    class Named:
        def __init__(self, name: str, refuse: bool = False) -> None:
            self.name, self.refuse = name, refuse

        def inspect(self, inspection: Inspection) -> None:
            seen.append(self.name)
            if self.refuse and inspection.frame.raw == b"refuse":
                raise Rejection(CanonicalError.INVALID_PARAMS)
            inspection.message = Message(MessageKind.NOTIFICATION, method="/".join(seen))

    chain = Chain([Named("a"), Named("b"), Named("c", refuse=True), Named("d")], Direction.CLIENT_TO_SERVER)
    assert chain.fast is None
    message = chain.check(Frame(raw=b"ok", transport="test", session=Session()))
    assert seen == ["a", "b", "c", "d"] and message.method == "a/b/c/d"
    seen.clear()
    with pytest.raises(Rejection):
        chain.check(Frame(raw=b"refuse", transport="test", session=Session()))
    assert seen == ["a", "b", "c"]
    assert build_chain(SchemaRegistry(), Direction.CLIENT_TO_SERVER).fast is not None  # the known stages compile
