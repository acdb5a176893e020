"""A violation's example quotes its frame: at most so many characters, and so many levels deep."""

from __future__ import annotations

from mcp_server.core.types import CLIENT_TO_SERVER
from mcp_server.observe.report import EXCERPT_CHARS, ConformanceReport


def test_a_frame_nested_a_thousand_deep_is_quoted_by_its_first_levels_not_a_crash() -> None:
    """Issue 24 (a 1,000-deep value is a violation, never a crash) and issue 32: the report the gateway
    and `check` share quotes such a value (the JSON module writes no deeper than 255 levels)."""
    cursor: list[object] | int = 1
    for _ in range(1000):  # built, not read: the reader takes no frame that deep (ADR 40), a caller may
        cursor = [cursor]
    deep = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": cursor}}
    report = ConformanceReport(upstream="test", mode="enforce")
    report.violation("invalid_params", direction=CLIENT_TO_SERVER, method="tools/list", request_id=2, document=deep)
    [example] = report.examples["invalid_params"]
    assert example["excerpt"].startswith('{"jsonrpc":"2.0","id":2,"method":"tools/list"')
    assert len(example["excerpt"]) <= EXCERPT_CHARS + 1
