"""Property tests of the whole chain: any bytes in, exactly one well-formed reply or none out."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_server.core import jsonio
from mcp_server.core.settings import DEFAULT_MAX_FRAME_BYTES
from mcp_server.core.types import Handler
from mcp_server.registry.schemas import SchemaRegistry, violations

from ..conftest import exchange

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
envelope_like = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2]),
        "id": st.none()
        | st.integers(-(2**63), 2**63 - 1)
        | st.text(max_size=3)
        | st.booleans()
        | st.floats(allow_nan=False),
        "method": st.sampled_from(["ping", "initialize", "tools/list", "tools/call", "x", "notifications/initialized"])
        | st.integers(-(2**63), 2**63 - 1),
        "params": json_values,
        "result": json_values,
        "error": json_values,
    },
).map(jsonio.dumps)
frames = st.binary(max_size=64) | envelope_like | json_values.map(jsonio.dumps)


def assert_well_formed(registry: SchemaRegistry, reply: dict[str, Any]) -> None:
    protocol = registry.protocol(registry.latest_handshake)
    if "error" in reply:
        if reply["id"] is None:
            # JSON-RPC 2.0 §5 answers an unreadable id with null; MCP 2025-11-25 lets the id be
            # omitted instead. The rest of the reply must still be a valid error response.
            reply = {key: value for key, value in reply.items() if key != "id"}
        assert violations(protocol.envelope_validator(protocol.error_response_def), reply) == []
    else:
        assert violations(protocol.envelope_validator(protocol.result_response_def), reply) == []


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(raw=frames)
def test_any_bytes_yield_at_most_one_well_formed_reply(handler: Handler, registry: SchemaRegistry, raw: bytes) -> None:
    """Issue 2 §7: one well-formed reply or none, never an escaped exception or an invalid reply."""
    [reply] = exchange(handler, [raw])
    if reply is None:
        document = jsonio.loads(raw)  # only a parsed notification or response goes unanswered
        assert isinstance(document, dict) and (
            ("method" in document and "id" not in document)
            or ("method" not in document and ("result" in document or "error" in document))
        )
        return
    assert_well_formed(registry, reply)
    if "error" in reply:
        assert reply["error"]["code"] != -32603, reply  # no internal error from any input


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.text(
        alphabet=st.characters(min_codepoint=0x80, max_codepoint=0x10FFFF, exclude_categories=["Cs"]),
        min_size=1,
        max_size=4,
    )
)
def test_the_size_limit_counts_multibyte_utf8_in_bytes(handler: Handler, text: str) -> None:
    """Issue 2 §7: passes at exactly 1,048,576 bytes, rejects 1,048,577; multibyte counted in bytes."""
    prefix, suffix = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_pad":"', b'"}}'
    unit = text.encode()
    room = DEFAULT_MAX_FRAME_BYTES - len(prefix) - len(suffix)
    body = unit * (room // len(unit))
    body += b"a" * (room - len(body))
    exact = prefix + body + suffix
    assert len(exact) == DEFAULT_MAX_FRAME_BYTES
    at_limit, over = exchange(handler, [exact, prefix + body + b"a" + suffix])
    assert at_limit["result"] == {}
    assert over["error"]["message"] == "Payload too large"
