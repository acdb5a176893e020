"""Where a version's ``schema.json`` accepts fewer JSON types than its ``schema.ts`` says: each
declaration's members (and, inside them, array elements, index-signature values and inline
members) compared by the set of JSON types each side allows. No project imports (holds no test).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .schema_ts import (
    Array,
    Intersection,
    Lit,
    Module,
    Object,
    Prim,
    Ref,
    TsType,
    Union,
    tjs_type,
)

ALL = frozenset({"string", "number", "integer", "boolean", "null", "object", "array"})
"""Every JSON type; ``number`` includes ``integer`` (a set holding ``number`` holds ``integer`` too)."""

_KEYWORDS = {
    "string": {"string"},
    "number": {"number", "integer"},
    "boolean": {"boolean"},
    "null": {"null"},
    "undefined": set(),  # an optional member's absence, not a value
    "never": set(),
    "object": {"object"},
    "unknown": ALL,
    "any": ALL,
}
_OBJECT_GENERICS = frozenset({"Record", "Partial", "Required", "Omit", "Pick", "Readonly"})


class Unmapped(Exception):
    """A TypeScript type outside the subset the comparison reads (a type parameter, ``keyof``…)."""


@dataclass(frozen=True, slots=True)
class Gap:
    """A place where the JSON allows fewer types than the TypeScript."""

    version: str
    definition: str
    path: str  # the member, then ``[]`` for an array element and ``{}`` for an index-signature value
    line: int
    text: str
    ts: frozenset[str]
    json: frozenset[str]
    alias: str | None = None  # the type alias the place is declared with, which may carry the gap

    def __str__(self) -> str:
        where = f"{self.definition}.{self.path}" if self.path else self.definition
        return (
            f"{self.version} {where} (schema.ts:{self.line} `{self.text}`): TypeScript allows {sorted(self.ts)},"
            f" schema.json {sorted(self.json)}; missing {sorted(self.ts - self.json)}"
        )


def _json_of_value(value: Any) -> set[str]:
    if isinstance(value, bool):
        return {"boolean"}
    if isinstance(value, int):
        return {"integer"}
    if isinstance(value, float):
        return {"number", "integer"} if value.is_integer() else {"number"}
    kinds = {str: "string", type(None): "null", dict: "object", list: "array"}
    return {kinds[type(value)]}


class Comparison:
    """One version: its ``schema.ts`` declarations and its ``schema.json`` definitions."""

    def __init__(self, version: str, module: Module, document: Mapping[str, Any]) -> None:
        self.version, self.module = version, module
        self.defs_key = "$defs" if "$defs" in document else "definitions"
        self.defs: Mapping[str, Any] = document[self.defs_key]
        self.compared = 0
        self.skipped = 0
        self.absent: list[str] = []  # members the JSON definition does not name

    # The JSON side -------------------------------------------------------------------------------

    def json_types(self, schema: Any) -> frozenset[str]:
        """The JSON types ``schema`` lets through (``number`` implying ``integer``)."""
        if schema is True or schema == {}:
            return ALL
        if schema is False:
            return frozenset()
        found = set(ALL)
        if "$ref" in schema:
            found &= self.json_types(self.defs[schema["$ref"].rsplit("/", 1)[-1]])
        if "type" in schema:
            named = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            found &= set().union(*(_KEYWORDS.get(n, {n}) for n in named))
        if "const" in schema:
            found &= _json_of_value(schema["const"])
        if "enum" in schema:
            found &= set().union(*(_json_of_value(v) for v in schema["enum"]))
        for key in ("anyOf", "oneOf"):
            if key in schema:
                found &= set().union(*(self.json_types(branch) for branch in schema[key]))
        for part in schema.get("allOf", ()):
            found &= self.json_types(part)
        return frozenset(found)

    def branches(self, schema: Any) -> list[Any]:
        """The alternatives of ``schema`` (through ``$ref``, ``anyOf``, ``oneOf``, ``allOf``)."""
        if not isinstance(schema, dict):
            return [schema]
        if "$ref" in schema:
            return [*self.branches(self.defs[schema["$ref"].rsplit("/", 1)[-1]]), schema]
        found = [schema]
        for key in ("anyOf", "oneOf", "allOf"):
            for branch in schema.get(key, ()):
                found += self.branches(branch)
        return found

    def _sub(self, schema: Any, kind: str, key: str) -> Any:
        """The schema of ``schema``'s array items, index-signature values or member ``key``."""
        found = []
        for branch in self.branches(schema):
            if not isinstance(branch, dict) or kind not in self.json_types(branch):
                continue
            if key == "[]":
                found.append(branch.get("items", True))
            elif key == "{}":
                found.append(branch.get("additionalProperties", True))
            elif key in branch.get("properties", {}):
                found.append(branch["properties"][key])
        return {"anyOf": found} if len(found) > 1 else (found[0] if found else None)

    # The TypeScript side -------------------------------------------------------------------------

    def ts_types(self, ts: TsType, seen: frozenset[str] = frozenset()) -> frozenset[str]:
        """The JSON types ``ts`` lets through; ``Unmapped`` where the subset cannot tell."""
        if isinstance(ts, Prim):
            return frozenset(_KEYWORDS[ts.name])
        if isinstance(ts, Lit):
            return frozenset(_json_of_value(ts.value))
        if isinstance(ts, Array):
            return frozenset({"array"})
        if isinstance(ts, Object):
            return frozenset({"object"})
        if isinstance(ts, Union):
            return frozenset().union(*(self.ts_types(option, seen) for option in ts.options))
        if isinstance(ts, Intersection):
            return frozenset(ALL.intersection(*(self.ts_types(part, seen) for part in ts.parts)))
        if isinstance(ts, Ref):
            return self._ref_types(ts, seen)
        raise Unmapped(str(ts))

    def _ref_types(self, ref: Ref, seen: frozenset[str]) -> frozenset[str]:
        if ref.typeof:
            if ref.name not in self.module.constants:
                raise Unmapped(f"typeof {ref.name}")
            return self.ts_types(self.module.constants[ref.name], seen)
        if ref.name in _OBJECT_GENERICS:
            return frozenset({"object"})
        if ref.name == "Array":
            return frozenset({"array"})
        declaration = self.module.declarations.get(ref.name)
        if declaration is None or ref.name in seen:
            raise Unmapped(ref.name)  # a type parameter, or a name the file does not declare
        if declaration.kind == "interface":
            return frozenset({"object"})
        return self.ts_types(declaration.body, seen | {ref.name})

    def _shape(self, ts: TsType, seen: frozenset[str]) -> Iterator[tuple[TsType, frozenset[str]]]:
        """``ts``'s alternatives through unions, intersections and type aliases, each with the aliases
        expanded to reach it (a recursive alias, ``JSONValue``, is entered once)."""
        if isinstance(ts, (Union, Intersection)):
            for option in ts.options if isinstance(ts, Union) else ts.parts:
                yield from self._shape(option, seen)
        elif isinstance(ts, Ref) and not ts.typeof:
            declaration = self.module.declarations.get(ts.name)
            if declaration is not None and declaration.kind == "type" and ts.name not in seen:
                yield from self._shape(declaration.body, seen | {ts.name})
        else:
            yield ts, seen

    # The comparison ------------------------------------------------------------------------------

    def gaps(self) -> Iterator[Gap]:
        """Every place, in every declaration the JSON defines, where the JSON is the narrower."""
        for name, declaration in self.module.declarations.items():
            definition = self.defs.get(name)
            if definition is None:
                continue
            if declaration.kind == "type":
                place = _Place(name, "", declaration.line, None, name)
                yield from self._compare(place, declaration.body, definition, frozenset({name}))
            else:
                yield from self._members(name, "", declaration.body, definition, frozenset())

    def _members(self, name: str, prefix: str, body: Object, schema: Any, seen: frozenset[str]) -> Iterator[Gap]:
        for member in body.members:
            sub = self._sub(schema, "object", member.name)
            if sub is None:
                self.absent.append(f"{name}.{prefix}{member.name}")
            else:
                alias = member.type.name if isinstance(member.type, Ref) else None
                place = _Place(name, prefix + member.name, member.line, tjs_type(member.doc), alias)
                yield from self._compare(place, member.type, sub, seen)
        if body.index is not None:
            sub = self._sub(schema, "object", "{}")
            if sub is not None:
                yield from self._compare(_Place(name, prefix + "{}", body.index_line), body.index, sub, seen)

    def _compare(self, place: _Place, ts: TsType, schema: Any, seen: frozenset[str]) -> Iterator[Gap]:
        try:
            wanted = frozenset(_KEYWORDS[place.annotated]) if place.annotated else self.ts_types(ts)
        except Unmapped:
            self.skipped += 1
            return
        self.compared += 1
        allowed = self.json_types(schema)
        if not wanted <= allowed:
            text = self.module.line_text(place.line)
            yield Gap(self.version, place.definition, place.path, place.line, text, wanted, allowed, place.alias)
        for shape, expanded in self._shape(ts, seen):
            if isinstance(shape, Array):
                sub = self._sub(schema, "array", "[]")
                if sub is not None:
                    inner = _Place(place.definition, place.path + "[]", place.line)
                    yield from self._compare(inner, shape.element, sub, expanded)
            elif isinstance(shape, Object):
                prefix = place.path + "." if place.path else ""
                yield from self._members(place.definition, prefix, shape, schema, expanded)


@dataclass(frozen=True, slots=True)
class _Place:
    """Where a comparison stands: the definition, the path in it, the schema.ts line, the member's
    ``@TJS-type`` and the type alias the member is declared with (``RequestId``), if any."""

    definition: str
    path: str
    line: int
    annotated: str | None = None
    alias: str | None = None
