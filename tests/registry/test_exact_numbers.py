"""Numbers judged by the value every parser reads (issue 41, ADR 40): the guard beside a schema's
numeric keywords, and the second reading by exact decimals it sends a frame to."""

from __future__ import annotations

import pytest

from mcp_server.chain.schema_check import exact_reading
from mcp_server.core import jsonio
from mcp_server.registry.schemas import SchemaRegistry, accepts, violations

AMOUNT = {"type": "object", "properties": {"amount": {"type": "integer", "maximum": 100}}}


@pytest.mark.parametrize(
    ("token", "valid"),
    [
        (b"100", True),
        (b"100.0", True),  # exactly 100: a whole number, on the bound
        (b"1E2", True),
        (b"99", True),
        (b"100.00000000000000001", False),  # reads as 100.0; exactly, over the maximum and no integer
        (b"101", False),
        (b"99.5", False),
        (b"1e400", False),  # past a double's range
        (b"123456789012345678901234567890", False),  # exact at any size, and over
    ],
)
def test_a_number_is_judged_by_its_exact_decimal_value(registry: SchemaRegistry, token: bytes, valid: bool) -> None:
    """Issue 41 row 3: ``100.00000000000000001`` for ``{"type":"integer","maximum":100}`` was judged as 100."""
    raw = b'{"amount":%s}' % token
    validator = registry.compile(AMOUNT)
    assert (violations(validator, jsonio.loads(raw), exact=exact_reading(raw)) == []) is valid


def test_a_bound_alone_refuses_a_number_past_a_doubles_range(registry: SchemaRegistry) -> None:
    """Issue 41: jsonschema-rs reads an infinite double as of no JSON type, which a bare ``maximum``
    would let through; exactly, ``1e400`` is over it and ``-1e400`` under it."""
    validator = registry.compile({"maximum": 100})
    for token, valid in ((b"1e400", False), (b"-1e400", True), (b"100.0", True)):
        assert (violations(validator, jsonio.loads(token), exact=exact_reading(token)) == []) is valid, token
    assert not accepts(validator, float("inf"))  # a value built in Python: JSON holds no infinity


def test_the_guard_runs_only_on_values_at_a_named_bound(registry: SchemaRegistry) -> None:
    """ADR 40: a float off every value the schema names passes the fast check itself; one on a bound
    makes it doubt (the exact reading decides); an integer on a bound is exact and passes."""
    validator = registry.compile({"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 1}})
    assert validator.is_valid([0.25, 0.5, 0, 1])
    assert not validator.is_valid([0.5, 1.0])
    assert accepts(validator, [0.5, 1.0])


def test_listing_stops_at_the_first_violation_of_a_large_value(registry: SchemaRegistry) -> None:
    """Issue 41 row 4: jsonschema-rs gathers every violation before the first; a value over 2 KiB has
    its first listed (``more`` says so), a small one all of them."""
    validator = registry.compile({"type": "array", "items": {"type": "object", "required": ["k"]}})
    small = violations(validator, [{}, {}, {}])
    assert len(small) == 3 and not any("more" in entry for entry in small)
    [first] = violations(validator, [{}] * 5000)
    assert first["path"] == "/0" and "more" in first
