"""`implication.implies`: a conservative reading of "every instance of one schema is one of the other's"
(issue 24: the envelope a frame's own definition already implies is not checked twice)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_server.core.types import Direction
from mcp_server.registry.implication import implies
from mcp_server.registry.schemas import SchemaRegistry

DEFS: dict[str, Any] = {
    "Id": {"type": ["string", "integer"], "description": "an id"},
    "Envelope": {
        "type": "object",
        "required": ["id", "method"],
        "properties": {"id": {"$ref": "#/defs/Id"}, "method": {"type": "string"}, "params": {"type": "object"}},
    },
    "Call": {
        "type": "object",
        "required": ["id", "method", "params"],
        "properties": {
            "id": {"$ref": "#/defs/Id"},
            "method": {"const": "call", "type": "string"},
            "params": {"type": "object", "properties": {"name": {"type": "string"}}},
        },
    },
}


def check(own: Any, other: Any) -> bool:
    return implies(own, other, DEFS, "#/defs/")


def test_a_definition_that_repeats_the_envelope_more_strictly_implies_it() -> None:
    """JSON Schema keywords are conjunctive: each of the envelope's, held as strictly, suffices."""
    assert check({"$ref": "#/defs/Call"}, {"$ref": "#/defs/Envelope"})
    assert not check({"$ref": "#/defs/Envelope"}, {"$ref": "#/defs/Call"})


@pytest.mark.parametrize(
    ("own", "other"),
    [
        ({"type": "object"}, {"type": "object", "required": ["a"]}),  # a requirement it lacks
        ({"properties": {"a": {"type": "string"}}}, {"type": "object"}),  # no type of its own
        ({"type": ["string", "integer"]}, {"type": "string"}),  # a wider type
        ({"type": "object", "properties": {}}, {"type": "object", "properties": {"a": {"type": "string"}}}),
        (  # equal sibling-dependent keywords over different properties: not the same constraint
            {"properties": {"a": {}, "b": {}}, "additionalProperties": False},
            {"properties": {"a": {}}, "additionalProperties": False},
        ),
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, {"type": "string"}),  # one branch does not
    ],
)
def test_anything_it_cannot_show_is_not_implied(own: Any, other: Any) -> None:
    """Issue 24: conservative: an envelope is only skipped when its every constraint is shown held."""
    assert not check(own, other)


def test_branches_conjunctions_and_vacuous_keywords() -> None:
    """Every branch of an anyOf must imply it; one of an allOf suffices; an empty additionalProperties says nothing."""
    assert check({"anyOf": [{"type": "string", "minLength": 1}, {"const": "x", "type": "string"}]}, {"type": "string"})
    assert check({"allOf": [{"type": "integer"}, {"minimum": 1}]}, {"type": "integer"})
    assert check({"type": "object"}, {"type": "object", "additionalProperties": {}})
    assert check(False, {"type": "string"})


def test_the_registry_checks_the_envelope_only_where_a_definition_does_not_imply_it(registry: SchemaRegistry) -> None:
    """Issue 24: from 2025-11-25 on each request definition repeats its envelope (read once); before,
    the envelope carries the ``_meta`` rules the definitions leave out (read with them)."""
    client = Direction.CLIENT_TO_SERVER
    newer, older = registry.protocol("2025-11-25"), registry.protocol("2025-06-18")
    assert newer.request_validator(client, "tools/call") is newer.definition_validator("CallToolRequest")
    assert older.request_validator(client, "tools/call") is not older.definition_validator("CallToolRequest")
    assert not older.request_validator(client, "tools/call").is_valid(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "_meta": ""}}
    )
