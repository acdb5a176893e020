"""The independent oracle of issue 24: the official schemas' own verdict on a frame, by python ``jsonschema``.

Nothing here imports the project's validation code: the method tables, the result types and the
verdict are read from the schema documents again (the errata list, `schemas/mcp/errata.json`, applied
here again), and every definition is checked with the validator class of the draft the document
declares (formats not asserted: an annotation in both drafts). Also the frames the differential
test feeds both sides: valid frames of every request, notification, result and error of a version
(the 2026-07-28 examples and frames built from the definitions), and a seeded corpus of their
mutations.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from jsonschema import Draft7Validator, Draft202012Validator
from referencing import Registry
from referencing.jsonschema import DRAFT7, DRAFT202012

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas" / "mcp"
VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
C2S, S2C = "client_to_server", "server_to_client"
OPPOSITE = {C2S: S2C, S2C: C2S}
ID = "oracle-id"
"""The id of every built frame that has one (a response answers the request of this id)."""

# What a key is retyped to: one value of every JSON type (and the empty string, an empty object).
RETYPES: tuple[Any, ...] = ("", "x", None, [], [None], {}, {"k": "v"}, 1.5, 7, -1, True)
ADDED_KEY = "x-oracle-added"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
FORMATTED = {"uri": "file:///a", "uri-template": "file:///{a}", "byte": "aGk="}
"""Strings built for a ``format``: values that meet it, so a frame is valid whether formats are asserted or not."""
VARIANTS = 6
"""Full frames built per definition, each taking the next branch of every ``anyOf``/``oneOf``."""


@dataclass(frozen=True, slots=True)
class Case:
    """One frame to judge: who sends it, and for a response the method of the request it answers."""

    version: str
    direction: str
    frame: Any
    answers: str | None = None
    origin: str = "built"

    @property
    def raw(self) -> bytes:
        return json.dumps(self.frame, separators=(",", ":")).encode()


def corrected(version: str, document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with the corrections ``schemas/mcp/errata.json`` records for ``version`` (where the
    generated JSON is narrower than schema.ts, ADR 41): the data file read and applied here again, not
    through the project's code. A place that does not hold what its erratum replaces fails."""
    for erratum in json.loads((SCHEMAS / "errata.json").read_text())["errata"]:
        place = erratum["versions"].get(version)
        if place is None:
            continue
        *parents, last = [t.replace("~1", "/").replace("~0", "~") for t in place["pointer"].split("/")[1:]]
        node: Any = document
        for token in parents:
            node = node[int(token)] if isinstance(node, list) else node[token]
        key = int(last) if isinstance(node, list) else last
        assert node[key] == place["replaces"], f"{erratum['name']}: {version} {place['pointer']} holds {node[key]!r}"
        node[key] = copy.deepcopy(place["with"])
    return document


class SpecSchema:
    """One version's schema document, read as the specification states it (schema.ts, where the
    generated JSON is narrower: the errata list)."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.document = corrected(version, json.loads((SCHEMAS / version / "schema.json").read_text()))
        self.defs_key = "$defs" if "$defs" in self.document else "definitions"
        self.defs: Mapping[str, Any] = self.document[self.defs_key]
        self.stateless = "InitializeRequest" not in self.defs  # 2026-07-28: no handshake
        modern = "2020-12" in self.document.get("$schema", "")
        self._cls = Draft202012Validator if modern else Draft7Validator
        spec = DRAFT202012 if modern else DRAFT7
        self._uri = f"urn:oracle:{version}"
        self._registry: Registry[Any] = Registry().with_resource(self._uri, spec.create_resource(self.document))
        self._validators: dict[str, Any] = {}
        self.requests: dict[tuple[str, str], str] = {}
        self.notifications: dict[tuple[str, str], str] = {}
        for union, direction, table in (
            ("ClientRequest", C2S, self.requests),
            ("ServerRequest", S2C, self.requests),
            ("ClientNotification", C2S, self.notifications),
            ("ServerNotification", S2C, self.notifications),
        ):
            for name in self._members(union):
                method = self.defs[name].get("properties", {}).get("method", {}).get("const")
                if isinstance(method, str):
                    table[(direction, method)] = name
        self.request_envelope = "JSONRPCRequest"
        self.notification_envelope = "JSONRPCNotification"
        self.result_envelope = "JSONRPCResultResponse" if "JSONRPCResultResponse" in self.defs else "JSONRPCResponse"
        self.error_envelope = "JSONRPCErrorResponse" if "JSONRPCErrorResponse" in self.defs else "JSONRPCError"

    def _members(self, union: str) -> list[str]:
        definition = self.defs.get(union, {})
        return [item["$ref"].rsplit("/", 1)[-1] for item in definition.get("anyOf", ()) if "$ref" in item]

    def validator(self, name: str) -> Any:
        validator = self._validators.get(name)
        if validator is None:
            schema = {"$ref": f"{self._uri}#/{self.defs_key}/{name}"}
            validator = self._validators[name] = self._cls(schema, registry=self._registry)
        return validator

    def valid(self, name: str, instance: Any) -> bool:
        return bool(self.validator(name).is_valid(instance))

    def asked(self, direction: str) -> str | None:
        """A request method of the other side: what an error response sent in ``direction`` answers."""
        return min((m for d, m in self.requests if d == OPPOSITE[direction]), default=None)

    def result_of(self, request_name: str) -> tuple[str, bool]:
        """The definition a response to ``request_name`` must meet, and whether it is a whole frame."""
        stem = request_name.removesuffix("Request")
        if f"{stem}ResultResponse" in self.defs:  # 2026-07-28 names each response frame
            return f"{stem}ResultResponse", True
        return (f"{stem}Result" if f"{stem}Result" in self.defs else "EmptyResult"), False

    def verdict(self, case: Case) -> bool:
        """Whether every definition the specification assigns to ``case.frame`` accepts it."""
        frame = case.frame
        if not isinstance(frame, dict):
            return False
        if "method" in frame:
            if "result" in frame or "error" in frame:
                return False  # JSON-RPC 2.0 §4, §5: a request is not also a response
            request = "id" in frame
            envelope = self.request_envelope if request else self.notification_envelope
            table = self.requests if request else self.notifications
            method = frame["method"]
            name = table.get((case.direction, method)) if isinstance(method, str) else None
            return name is not None and self.valid(envelope, frame) and self.valid(name, frame)
        if "error" in frame:
            return "result" not in frame and self.valid(self.error_envelope, frame)
        if "result" in frame:
            if case.answers is None or not self.valid(self.result_envelope, frame):
                return False
            name = self.requests[(OPPOSITE[case.direction], case.answers)]
            result, whole = self.result_of(name)
            return self.valid(result, frame if whole else frame["result"])
        return False

    def unsupported(self, case: Case) -> bool:
        """A request the schema accepts but the specification refuses: under 2026-07-28, one stating
        a protocol version other than this one in ``_meta`` (UnsupportedProtocolVersionError)."""
        frame = case.frame
        if self.version != VERSIONS[-1] or not isinstance(frame, dict) or "id" not in frame:
            return False
        meta = frame["params"].get("_meta") if isinstance(frame.get("params"), dict) else None
        stated = meta.get(VERSION_KEY) if isinstance(meta, dict) else None
        return isinstance(stated, str) and stated != self.version

    # -- valid frames ----------------------------------------------------------------------------

    @cached_property
    def valid_cases(self) -> list[Case]:
        """Valid frames of every request, notification and result type: a lean one (required members
        only) and full ones (every member, each ``anyOf`` branch in turn); duplicates dropped."""
        cases: list[Case] = []
        variants = [(False, 0), *((True, pick) for pick in range(VARIANTS))]
        for (direction, method), name in sorted(self.requests.items()):
            result, whole = self.result_of(name)
            for full, pick in variants:
                frame = self._frame(name, full, pick, {"jsonrpc": "2.0", "id": ID, "method": method})
                cases.append(Case(self.version, direction, frame))
                body = self._instance({"$ref": f"#/{self.defs_key}/{result}"}, full, 0, pick)
                response = body if whole else {"jsonrpc": "2.0", "id": ID, "result": body}
                response["id"] = ID
                cases.append(Case(self.version, OPPOSITE[direction], response, answers=method))
        for (direction, method), name in sorted(self.notifications.items()):
            for full, pick in variants:
                frame = self._frame(name, full, pick, {"jsonrpc": "2.0", "method": method})
                cases.append(Case(self.version, direction, frame))
        unique: dict[str, Case] = {}
        for case in cases:
            unique.setdefault(json.dumps([case.direction, case.answers, case.frame], sort_keys=True), case)
        cases = list(unique.values())
        error = {"code": -32603, "message": "Internal error"}
        for direction, body in ((C2S, error), (S2C, {**error, "data": {"a": 1}})):
            asked = self.asked(direction)
            if asked is not None:
                frame = {"jsonrpc": "2.0", "id": ID, "error": body}
                cases.append(Case(self.version, direction, frame, answers=asked))
        cases += self._examples()
        bad = [case for case in cases if not self.verdict(case)]
        assert not bad, f"{self.version}: built frames the schema refuses: {[c.frame for c in bad[:3]]}"
        return cases

    def _frame(self, name: str, full: bool, pick: int, skeleton: dict[str, Any]) -> dict[str, Any]:
        frame = self._instance({"$ref": f"#/{self.defs_key}/{name}"}, full, 0, pick)
        frame.update(skeleton)
        return frame

    def _examples(self) -> list[Case]:
        """The specification's own examples (bundled for 2026-07-28) that are whole frames."""
        root = SCHEMAS / self.version / "examples"
        if not root.is_dir():
            return []
        cases = []
        by_name = {name: key for key, name in self.requests.items()}
        notes = {name: key for key, name in self.notifications.items()}
        responses = {self.result_of(name)[0]: (key, name) for key, name in self.requests.items()}
        for path in sorted(root.glob("*/*.json")):
            kind, frame = path.parent.name, json.loads(path.read_text())
            if kind in by_name:
                cases.append(Case(self.version, by_name[kind][0], frame, origin=str(path.name)))
            elif kind in notes:
                cases.append(Case(self.version, notes[kind][0], frame, origin=str(path.name)))
            elif kind in responses:
                (direction, method), _ = responses[kind]
                cases.append(Case(self.version, OPPOSITE[direction], frame, answers=method, origin=path.name))
            elif kind.endswith("Error") and self.valid("Error", frame):
                response = {"jsonrpc": "2.0", "id": ID, "error": frame}
                cases.append(Case(self.version, S2C, response, answers=self.asked(S2C), origin=path.name))
        return cases

    def _resolve(self, schema: Any) -> Any:
        while isinstance(schema, dict) and "$ref" in schema:
            target = self.defs[schema["$ref"].rsplit("/", 1)[-1]]
            schema = {**{k: v for k, v in schema.items() if k != "$ref"}, **target}
        return schema

    def _instance(self, schema: Any, full: bool, depth: int = 0, pick: int = 0) -> Any:
        """A valid instance of ``schema``: required members only, or (``full``) every member too.

        ``pick`` chooses among the valid branches of each ``anyOf``/``oneOf`` (round robin)."""
        schema = self._resolve(schema)
        if not isinstance(schema, dict):
            return {}
        if "const" in schema:
            return copy.deepcopy(schema["const"])
        if "enum" in schema:
            return copy.deepcopy(schema["enum"][0])
        for key in ("anyOf", "oneOf"):
            if key in schema:
                return self._branch(schema, key, full, depth, pick)
        if "allOf" in schema:
            merged: dict[str, Any] = {}
            for part in schema["allOf"]:
                value = self._instance(part, full, depth + 1, pick)
                merged.update(value if isinstance(value, dict) else {})
            return merged
        kind = schema.get("type", "object" if "properties" in schema else None)
        if isinstance(kind, list):
            kind = next((t for t in kind if t != "null"), kind[0])
        return self._typed(schema, kind, full, depth, pick)

    def _branch(self, schema: dict[str, Any], key: str, full: bool, depth: int, pick: int) -> Any:
        rest = {k: v for k, v in schema.items() if k != key}
        checker = self._cls({self.defs_key: self.defs, **schema})
        valid = []
        for branch in schema[key]:
            candidate = self._instance({**rest, **self._resolve(branch)}, full, depth + 1, pick)
            if checker.is_valid(candidate):
                valid.append(candidate)
        return valid[pick % len(valid)] if valid else self._instance(schema[key][0], full, depth + 1, pick)

    def _typed(self, schema: dict[str, Any], kind: Any, full: bool, depth: int, pick: int) -> Any:
        if kind == "object":
            required = schema.get("required", [])
            properties = schema.get("properties", {})
            names = list(properties) if full and depth < 6 else [n for n in properties if n in required]
            value = {name: self._instance(properties[name], full, depth + 1, pick) for name in names}
            if VERSION_KEY in value:
                value[VERSION_KEY] = self.version  # a request states the version it is of (2026-07-28)
            for name in required:
                value.setdefault(name, "x")
            return value
        if kind == "array":
            items = schema.get("items")
            count = max(schema.get("minItems", 0), 2 if full and depth < 6 and items is not None else 0)
            return [self._instance(items or {}, full, depth + 1, pick) for _ in range(count)]
        if kind == "string":
            return FORMATTED.get(schema.get("format", ""), "s")
        if kind == "integer":
            return max(1, schema.get("minimum", 1))
        if kind == "number":
            return max(0.5, schema.get("minimum", 0.5)) if schema.get("maximum", 1) >= 0.5 else schema["maximum"]
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        return {}


# -- the mutation corpus ---------------------------------------------------------------------------


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _nodes(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _nodes(child, (*path, index))


def _edit(frame: Any, path: tuple[Any, ...], action: str, value: Any = None) -> Any:
    mutant = copy.deepcopy(frame)
    parent = mutant
    for token in path[:-1]:
        parent = parent[token]
    last = path[-1]
    if action == "delete":
        del parent[last]
    else:
        parent[last] = copy.deepcopy(value)
    return mutant


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


Edit = tuple[tuple[Any, ...], str, Any]
"""A single edit of a frame: the path, ``delete``/``set``, and the value set."""


def edits(frame: Any) -> Iterator[Edit]:
    """Every single edit of ``frame``: delete each key, retype each value, add a key to each object.

    ``_meta``, ``params`` and ``id`` are keys like any other, and are also added where a frame has none.
    """
    for path, value in _nodes(frame):
        if path:
            if isinstance(path[-1], str):
                yield path, "delete", None
            for other in RETYPES:
                if not _same(other, value):
                    yield path, "set", other
        if isinstance(value, dict):
            yield (*path, ADDED_KEY), "set", 1
            if path in (("params",), ("result",)) and "_meta" not in value:
                for other in RETYPES:
                    yield (*path, "_meta"), "set", other
    if isinstance(frame, dict) and "params" not in frame and "method" in frame:
        for other in ("", None, [], {"_meta": ""}, {"_meta": None}, {"_meta": []}):
            yield ("params",), "set", other
    if isinstance(frame, dict) and "id" not in frame:
        for other in RETYPES:
            yield ("id",), "set", other


def mutant(case: Case, edit: Edit) -> Case:
    path, action, value = edit
    frame = _edit(case.frame, path, action, value)
    return Case(case.version, case.direction, frame, case.answers, f"{action} {'/'.join(map(str, path))}")


def corpus(spec: SpecSchema, *, seed: int, size: int) -> list[Case]:
    """The valid frames and a seeded sample of ``size`` of their mutations (all of them when fewer)."""
    every = [(case, edit) for case in spec.valid_cases for edit in edits(case.frame)]
    picked = every if len(every) <= size else random.Random(f"{seed}:{spec.version}").sample(every, size)
    return [*spec.valid_cases, *(mutant(case, edit) for case, edit in picked)]
