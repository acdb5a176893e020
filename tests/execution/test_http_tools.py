"""HTTP-backed tools' outbound calls: bounded reads, origins, path segments (issue 30), unit level."""

from __future__ import annotations

import asyncio
import zlib
from typing import Any

import httpx
import pytest

from mcp_server.core.errors import CanonicalError, Rejection
from mcp_server.execution.http_tools import BodyTooLarge, _same_origin, _segment, read_capped


def read(body: bytes, limit: int, encoding: str | None = None) -> bytes:
    headers = {} if encoding is None else {"Content-Encoding": encoding}
    response = httpx.Response(200, headers=headers, stream=httpx.ByteStream(body))
    return asyncio.run(read_capped(response, limit))


def packed(data: bytes, wbits: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    return packer.compress(data) + packer.flush()


@pytest.mark.parametrize(("encoding", "wbits"), [("gzip", 31), ("deflate", 15), (None, 0)])
def test_a_body_within_the_limit_is_read_whole_and_inflated(encoding: str | None, wbits: int) -> None:
    """Issue 30 row 5: the body comes back decompressed, exactly, when it fits the limit."""
    data = b'{"a": "' + b"x" * 5000 + b'"}'
    assert read(packed(data, wbits) if encoding else data, len(data), encoding) == data


@pytest.mark.parametrize(("encoding", "wbits"), [("gzip", 31), ("deflate", 15), (None, 0)])
def test_one_byte_over_the_limit_after_inflating_is_too_large(encoding: str | None, wbits: int) -> None:
    """Issue 30 row 5: the limit counts decompressed bytes."""
    data = b"0" * 100_001
    with pytest.raises(BodyTooLarge):
        read(packed(data, wbits) if encoding else data, 100_000, encoding)


@pytest.mark.parametrize("encoding", ["br", "zstd", "gzip, gzip", "compress"])
def test_an_encoding_this_client_did_not_offer_is_an_upstream_failure(encoding: str) -> None:
    """Issue 30 row 5: only what can be inflated within a bound is accepted (Accept-Encoding: gzip, deflate)."""
    with pytest.raises(Rejection) as refused:
        read(b"\x00" * 10, 1000, encoding)
    assert refused.value.error is CanonicalError.UPSTREAM_FAILURE
    assert refused.value.errors[0]["msg"] == "unsupported_content_encoding"


@pytest.mark.parametrize(
    ("first", "then", "same"),
    [
        ("http://api.test/a", "http://api.test:80/b", True),
        ("https://api.test/a", "https://api.test:443/b", True),
        ("https://api.test/a", "http://api.test/a", False),  # scheme
        ("http://api.test/a", "http://api.test:8081/a", False),  # port
        ("http://api.test/a", "http://other.test/a", False),  # host
    ],
)
def test_an_origin_is_scheme_host_and_port(first: str, then: str, same: bool) -> None:
    """Issue 30 row 7: the credential stays with its origin (RFC 6454: scheme, host, port)."""
    assert _same_origin(httpx.URL(first), httpx.URL(then)) is same


@pytest.mark.parametrize(("value", "text"), [("a/b", "a/b"), (7, "7"), (True, "true"), ("...", "...")])
def test_a_path_argument_is_written_as_text_of_one_segment(value: Any, text: str) -> None:
    """Issue 30 row 8: a non-string argument is written as JSON; the caller quotes it as one segment."""
    assert _segment("item", {"item": value}) == text


@pytest.mark.parametrize("value", ["..", ".", ""])
def test_a_path_argument_that_moves_along_the_path_is_refused(value: str) -> None:
    """Issue 30 row 8: `..`, `.` and an empty segment are refused as invalid tool input."""
    with pytest.raises(Rejection) as refused:
        _segment("item", {"item": value})
    assert refused.value.error is CanonicalError.INVALID_TOOL_INPUT
