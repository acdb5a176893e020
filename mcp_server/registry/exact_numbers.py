"""Numbers judged by the value every parser reads: a guard where a schema compares them.

A frame's numbers are read as binary64 doubles, and a token with more digits than a double holds
(``100.00000000000000001``) reads as the nearest one (100.0): judged so, it passes
``{"maximum": 100}`` where a reader of exact decimals sees more than 100. Such a token can change a
verdict only where the double it reads as is exactly a value the schema names (a bound, a ``const``,
an ``enum`` member), is a multiple where ``multipleOf`` asks, or is no finite number: anywhere else
its exact value falls on the same side (ADR 40). So every schema compiled here carries, beside each
such keyword, a condition of plain JSON Schema that holds only for those values (``if``), and under
it (``then``) a guard of ours that refuses a float there: jsonschema-rs calls it for no other value,
and an integer always passes it (it is exact). A frame it refuses is judged again by its exact
decimals (``jsonio.loads_exact``), which jsonschema-rs compares exactly. ``integer`` alone gets no
guard: JSON Schema cannot tell a float that reads as a whole number from an integer, and a guard
beside it would run for every integer (ADR 40 says what that leaves). Pure; no I/O.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["GUARD", "KEYWORDS", "guarded", "is_guard", "unguarded"]

GUARD = "x-mcp-exact-number"
"""The keyword of the guard, added (under an ``if``) beside a schema's numeric keywords."""

_BOUNDS = ("maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum")
_MAPS = ("properties", "patternProperties", "definitions", "$defs", "dependentSchemas", "dependencies")
_ONE = (
    "additionalProperties",
    "additionalItems",
    "items",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
_MANY = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_UNGUARDED = frozenset({"RequestId", "ProgressToken"})
"""Definitions read before any schema is: ``classify`` takes an id as a string or an integer only."""


def _number(value: Any) -> bool:
    return type(value) in (int, float)  # (a bool is no number here, as in JSON)


_OFF: list[bool] = []
"""Set while a verdict whose numbers are known exact is taken (``unguarded``): the guard passes all."""


@contextlib.contextmanager
def unguarded() -> Iterator[None]:
    """The guard lets everything through meanwhile: for judging a value whose numbers are exact (its
    doubles are its values, or it was read by its decimals). Synchronous: no other verdict runs."""
    _OFF.append(True)
    try:
        yield
    finally:
        _OFF.pop()


class _ExactNumber:
    """The guard: refuses a float (its condition holds for a value a longer token could read as); as
    ``"null"``, refuses whatever reaches it (its condition holds for a number past a double's range)."""

    __slots__ = ("_any",)

    def __init__(self, parent_schema: Mapping[str, Any], value: Any, schema_path: Any) -> None:
        self._any = value == "null"

    def validate(self, instance: Any) -> None:
        if (self._any or type(instance) is float) and not _OFF:
            raise ValueError("a number here is judged by its exact decimal value")


KEYWORDS: Mapping[str, Any] = {GUARD: _ExactNumber}
"""The custom keyword every validator the registry compiles is given."""

_TYPES = ["array", "boolean", "null", "number", "object", "string"]

_FEW = 4
"""Up to this many values named, each is its own range condition (a numeric comparison, cheap);
more (a long numeric ``enum``) are one ``enum`` condition, which jsonschema-rs checks more slowly."""


def _conditions(schema: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``if``/``then`` pairs that put the guard on ``schema``'s numeric keywords (none: it has none)."""
    named = {schema[key] for key in _BOUNDS if _number(schema.get(key))}
    if _number(schema.get("const")):
        named.add(schema["const"])
    members = schema.get("enum")
    if isinstance(members, list):
        named.update(item for item in members if _number(item))
    then = {GUARD: True}
    if len(named) > _FEW:
        found = [{"if": {"enum": sorted(named)}, "then": then}]
    else:
        found = [
            {"if": {"type": "number", "minimum": value, "maximum": value}, "then": then} for value in sorted(named)
        ]
    if _number(schema.get("multipleOf")):
        found.append({"if": {"type": "number", "multipleOf": schema["multipleOf"]}, "then": then})
    if found and "type" not in schema:  # a number past a double's range (infinite) is of no JSON type to
        found.append({"if": {"not": {"type": _TYPES}}, "then": {GUARD: "null"}})  # jsonschema-rs: a bound lets it pass
    return found


def guarded(schema: Any) -> Any:
    """``schema`` with the guard beside every numeric keyword, in every subschema (a copy; the
    schema given is left as it is, and so is what it holds that is no schema: ``const``, ``enum``,
    ``default``, ``examples``)."""
    if not isinstance(schema, dict):
        return schema
    copy: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _MAPS and isinstance(value, dict):
            kept = _UNGUARDED if key in ("definitions", "$defs") else frozenset()
            copy[key] = {name: value[name] if name in kept else guarded(value[name]) for name in value}
        elif key in _MANY and isinstance(value, list):
            copy[key] = [guarded(item) for item in value]
        elif key in _ONE:
            copy[key] = guarded(value)
        else:
            copy[key] = value
    conditions = _conditions(schema)
    if conditions:
        copy["allOf"] = [*copy.get("allOf", ()), *conditions]
    return copy


def is_guard(schema_path: str) -> bool:
    """Whether a violation's schema path (an RFC 6901 pointer) ends at the guard."""
    return schema_path.endswith("/" + GUARD)
