"""Whether one JSON Schema implies another, read from their structure: every instance the first
accepts, the second accepts. Conservative: ``False`` whenever it cannot tell. Pure; no I/O.

The registry uses it to check a frame's JSON-RPC envelope only where the frame's own definition
does not already say as much (2025-11-25 and later repeat the envelope in every definition).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["implies"]

_ANNOTATIONS = frozenset({"description", "title", "examples", "default", "$comment"})
# Keywords whose meaning depends on their siblings (or on the other schema's): equal values do not
# make equal constraints, so they are read only when vacuous.
_DEPENDENT = frozenset(
    {
        "additionalProperties",
        "additionalItems",
        "unevaluatedProperties",
        "unevaluatedItems",
        "if",
        "then",
        "else",
        "contains",
        "minContains",
        "maxContains",
        "$ref",
        "$dynamicRef",
        "$recursiveRef",
    }
)
_MAX_DEPTH = 16
_MISSING: Any = object()


def _target(ref: Any, definitions: Mapping[str, Any], prefix: str) -> Any:
    """What ``prefix`` + ``Name/json/pointer`` points at, or ``_MISSING``."""
    if not isinstance(ref, str) or not ref.startswith(prefix):
        return _MISSING
    node: Any = definitions
    for token in ref[len(prefix) :].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or token not in node:
            return _MISSING
        node = node[token]
    return node


def _resolve(node: Any, definitions: Mapping[str, Any], prefix: str) -> Any:
    """Follow a local ``$ref`` (one with nothing but annotations beside it) to what it names."""
    for _ in range(_MAX_DEPTH):
        if not isinstance(node, Mapping) or "$ref" not in node or set(node) - _ANNOTATIONS - {"$ref"}:
            return node
        target = _target(node["$ref"], definitions, prefix)
        if target is _MISSING:
            return node
        node = target
    return node


def _types(schema: Mapping[str, Any]) -> set[str] | None:
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return set(declared)
    return None


def implies(own: Any, other: Any, definitions: Mapping[str, Any], prefix: str, depth: int = 0) -> bool:
    """Whether ``own`` implies ``other`` (both schemas whose ``$ref`` s are ``prefix`` + a name in
    ``definitions``): each keyword of ``other`` is vacuous, or ``own`` has it at least as strictly."""
    own, other = _resolve(own, definitions, prefix), _resolve(other, definitions, prefix)
    if own == other:
        return True
    if depth > _MAX_DEPTH or not isinstance(own, Mapping) or not isinstance(other, Mapping):
        return own is False or other is True
    if set(own) - _ANNOTATIONS == {"anyOf"}:  # every branch must imply it
        return all(implies(branch, other, definitions, prefix, depth + 1) for branch in own["anyOf"])
    if any(implies(branch, other, definitions, prefix, depth + 1) for branch in own.get("allOf", ())):
        return True  # one branch of a conjunction implies it
    for keyword, value in other.items():
        if keyword in _ANNOTATIONS or (keyword in _DEPENDENT and value in ({}, True)):
            continue
        if keyword in _DEPENDENT:
            return False
        if keyword == "properties":
            mine = own.get("properties", {})
            if not all(n in mine and implies(mine[n], s, definitions, prefix, depth + 1) for n, s in value.items()):
                return False
        elif keyword == "required":
            if not set(value) <= set(own.get("required", ())):
                return False
        elif keyword == "type":
            wanted, declared = _types(other), _types(own)
            if wanted is None or declared is None or not declared <= wanted:
                return False
        elif own.get(keyword, _MISSING) != value:  # an independent keyword, held at least as strictly
            return False
    return True
