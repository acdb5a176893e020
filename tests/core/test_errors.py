"""The error catalogue: one enum, no literal codes elsewhere, docs generated from it."""

from __future__ import annotations

import io
import itertools
import tokenize
from pathlib import Path

import pytest

from mcp_server.core.errors import CanonicalError, Plane, Rejection, catalogue_markdown

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("slug", "http", "code", "message"),
    [
        ("INVALID_ENVELOPE", 400, -32600, "Invalid MCP envelope"),
        ("INVALID_TOOL_INPUT", 422, -32602, "Invalid tool input"),
        ("TOOL_NOT_FOUND", 404, -32001, "Unknown tool"),
        ("INTERNAL_ERROR", 500, -32603, "Internal error"),
    ],
)
def test_catalogue_holds_the_four_seed_members_exactly(slug: str, http: int, code: int, message: str) -> None:
    """Issue 2 §4: these four members with exactly these statuses, codes and messages."""
    member = CanonicalError[slug]
    assert (member.http_status, member.jsonrpc_code, member.message) == (http, code, message)


def test_looking_up_an_unknown_code_raises_key_error() -> None:
    """Issue 2 §4: no silent fallback for an unknown code."""
    with pytest.raises(KeyError):
        CanonicalError.lookup("no_such_error")
    with pytest.raises(KeyError):
        CanonicalError.for_jsonrpc_code(-1)
    assert CanonicalError.lookup("tool_not_found") is CanonicalError.TOOL_NOT_FOUND


def test_no_two_members_alias_each_other() -> None:
    """STYLE: members are never reused; an Enum with equal values would silently alias them."""
    assert len(list(CanonicalError)) == len(CanonicalError.__members__)


def test_unknown_tool_is_invalid_params_on_the_mcp_wire() -> None:
    """MCP spec server/tools "Error Handling": an unknown tool is a -32602 protocol error."""
    assert CanonicalError.TOOL_NOT_FOUND.mcp_code == -32602
    assert CanonicalError.INVALID_TOOL_INPUT.plane is Plane.TOOL_RESULT


def test_rejection_data_names_the_slug_when_no_detail_is_given() -> None:
    """STYLE: the member name, lower-cased, is the machine slug in error.data."""
    data = Rejection(CanonicalError.NOT_INITIALIZED).data()
    assert data == {"ok": False, "reason": "invalid_state", "errors": [{"path": "", "msg": "not_initialized"}]}


def _code_literals(path: Path) -> list[str]:
    """Negative JSON-RPC code literals (-32768..-32000) in code, ignoring strings and comments."""
    found = []
    tokens = list(tokenize.generate_tokens(io.StringIO(path.read_text()).readline))
    for previous, token in itertools.pairwise(tokens):
        if token.type == tokenize.NUMBER and previous.string == "-" and 32000 <= int(token.string, 0) <= 32768:
            found.append(f"{path.relative_to(ROOT)}:{token.start[0]}")
    return found


def test_no_jsonrpc_code_literal_appears_outside_the_catalogue() -> None:
    """STYLE: no JSON-RPC code literal outside the catalogue (strings and comments may cite them)."""
    offenders = [
        hit
        for path in sorted((ROOT / "mcp_server").rglob("*.py"))
        if path.name != "errors.py"
        for hit in _code_literals(path)
    ]
    assert offenders == []


def test_errors_doc_is_generated_from_the_catalogue() -> None:
    """STYLE: docs/errors.md is generated from the catalogue and kept equal by a test."""
    assert (ROOT / "docs" / "errors.md").read_text() == catalogue_markdown()
