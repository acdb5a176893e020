"""Pure cores of the pipeline stages, without an event loop."""

from __future__ import annotations

import pytest

from mcp_server.chain.classify import classify
from mcp_server.chain.json_syntax import parse
from mcp_server.chain.size_guard import check_size
from mcp_server.core.errors import CanonicalError, Rejection
from mcp_server.core.settings import DEFAULT_MAX_FRAME_BYTES
from mcp_server.core.types import MessageKind


def test_size_exactly_at_the_limit_passes_and_one_byte_over_is_rejected() -> None:
    """Issue 2 §4: the limit is inclusive, 1,048,576 bytes by default."""
    check_size(DEFAULT_MAX_FRAME_BYTES, DEFAULT_MAX_FRAME_BYTES)
    with pytest.raises(Rejection) as caught:
        check_size(DEFAULT_MAX_FRAME_BYTES + 1, DEFAULT_MAX_FRAME_BYTES)
    assert caught.value.error is CanonicalError.PAYLOAD_TOO_LARGE


@pytest.mark.parametrize(
    "raw",
    [b"{", b'{"a":NaN}', b'{"a":Infinity}', b'{"a":-Infinity}', b"\xff\xfe", b'{"a":"\xc3"}', b""],
)
def test_invalid_json_utf8_nan_and_infinity_are_parse_errors(raw: bytes) -> None:
    """Issue 2 §4 / JSON-RPC 2.0 §5.1: invalid JSON → -32700."""
    with pytest.raises(Rejection) as caught:
        parse(raw)
    assert caught.value.error is CanonicalError.PARSE_ERROR


@pytest.mark.parametrize("raw", [b"[]", b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', b"1", b'"x"', b"null"])
def test_a_top_level_value_that_is_not_an_object_is_an_invalid_envelope(raw: bytes) -> None:
    """Issue 2 §4: batches and scalars → -32600."""
    with pytest.raises(Rejection) as caught:
        parse(raw)
    assert caught.value.error is CanonicalError.INVALID_ENVELOPE


@pytest.mark.parametrize(
    ("document", "kind"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "ping"}, MessageKind.REQUEST),
        ({"jsonrpc": "2.0", "id": "a", "method": "ping"}, MessageKind.REQUEST),
        ({"jsonrpc": "2.0", "method": "notifications/initialized"}, MessageKind.NOTIFICATION),
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, MessageKind.RESPONSE),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "x"}}, MessageKind.ERROR_RESPONSE),
        ({"jsonrpc": "2.0", "id": None, "error": {"code": -1, "message": "x"}}, MessageKind.ERROR_RESPONSE),
    ],
)
def test_valid_messages_are_classified_by_kind(document: dict, kind: MessageKind) -> None:
    """JSON-RPC 2.0 §4-5: request, notification, response, error response."""
    assert classify(document).kind is kind


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ({"jsonrpc": "1.0", "id": 1, "method": "ping"}, "/jsonrpc"),
        ({"id": 1, "method": "ping"}, "/jsonrpc"),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, "/id"),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, "/id"),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, "/id"),
        ({"jsonrpc": "2.0", "id": 1, "method": 3}, "/method"),
        ({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}, "/params"),
        ({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}}, ""),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "x"}}, "/error/code"),
        ({"jsonrpc": "2.0", "id": 1, "result": 5}, "/result"),
        ({"jsonrpc": "2.0"}, "/id"),
    ],
)
def test_malformed_envelopes_are_rejected_at_the_offending_path(document: dict, path: str) -> None:
    """Issue 2 §4: jsonrpc exactly "2.0", id a string or integer, exactly one of result/error."""
    with pytest.raises(Rejection) as caught:
        classify(document)
    assert caught.value.error is CanonicalError.INVALID_ENVELOPE
    assert path in [entry["path"] for entry in caught.value.errors]
