"""SchemaRegistry: every schema the project validates against, each compiled once, on first use
(or all at start-up: ``compile_all``).

Read-only after construction, except the caches that compile a protocol validator or a tool I/O
schema on first sight. ``$ref`` resolves only against schemas indexed here: never a fetch.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import jsonschema_rs

from ..core import jsonio
from ..core.pointer import pointer
from ..core.types import Direction
from .errata import corrected
from .exact_numbers import KEYWORDS, guarded, is_guard, unguarded
from .implication import implies

__all__ = [
    "BUNDLED_SCHEMAS",
    "TOO_DEEP",
    "ProtocolSchema",
    "SchemaError",
    "SchemaRegistry",
    "ToolIO",
    "Validator",
    "accepts",
    "files_within",
    "schema_provenance",
    "violations",
]

log = logging.getLogger("mcp_server.registry")


def files_within(root: Path, *, quiet: bool = False) -> Iterator[Path]:
    """The JSON files under ``root``, sorted, that stay inside it once their links are resolved: a
    link leading out of a configured root is not served (named on stderr, unless ``quiet``)."""
    base = root.resolve()
    for path in sorted(root.rglob("*.json")):
        if not path.is_file():
            continue
        if base not in path.resolve().parents:
            if not quiet:
                log.warning("%s: %s leads out of the root (to %s): not served", root, path, path.resolve())
            continue
        yield path


def _bundled_schemas(package: Path) -> Path:
    """The wheel's copy inside the package (``mcp_server/schemas``), else the repository's top-level
    ``schemas/`` beside the package (a checkout, an editable install): the source of truth, which the
    build maps into the package (ADR 31)."""
    inside = package / "schemas"
    return inside if inside.is_dir() else package.parent / "schemas"


BUNDLED_SCHEMAS = _bundled_schemas(Path(__file__).parent.parent)
"""The bundled schemas: ``mcp/<version>/schema.json`` (the official ones, with their source and
licence) and the project's own."""

MAX_VIOLATIONS = 100
"""Cap on the violations listed for one instance; a hostile frame cannot make the reply huge."""

Validator = Any  # jsonschema_rs.Validator; the extension ships no usable stub for mypy

TOO_DEEP: Mapping[str, str] = MappingProxyType(
    {
        "path": "",
        "msg": f"nested deeper than {jsonio.MAX_DEPTH} levels: its violations cannot be listed",
        "keyword": "too_deep",
        "rule": "too_deep",
    }
)
"""The one violation listed for an invalid instance nested too deep to list its violations."""


PROVENANCE_FILE = "provenance.json"
"""Beside the MCP schemas: each bundled file's source repository, commit and SHA-256."""


@functools.cache
def schema_provenance(mcp_dir: Path = BUNDLED_SCHEMAS / "mcp") -> tuple[Mapping[str, str | None], ...]:
    """Each ``<version>/schema.json`` under ``mcp_dir``: its version, the SHA-256 of its bytes, and
    its source repository and commit when ``provenance.json`` records a file of exactly these bytes
    (``None`` otherwise: the official schemas are rewritten after release, so a commit is only
    claimed for the bytes it was recorded for)."""
    try:
        manifest = jsonio.loads((mcp_dir / PROVENANCE_FILE).read_bytes())
    except (OSError, jsonio.JSONSyntaxError):
        manifest = {}
    recorded = manifest.get("files", {}) if isinstance(manifest, dict) else {}
    found = []
    for path in sorted(mcp_dir.glob("*/schema.json")):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        entry = recorded.get(f"{path.parent.name}/schema.json")
        source = (None, None)
        if isinstance(entry, dict) and entry.get("sha256") == digest:
            source = (manifest.get("repository"), entry.get("commit"))
        found.append(
            MappingProxyType(
                {"version": path.parent.name, "sha256": digest, "repository": source[0], "commit": source[1]}
            )
        )
    return tuple(found)


class SchemaError(Exception):
    """A schema that cannot be used: unreadable, invalid against its meta-schema, or whose
    ``$ref`` does not resolve locally. Raised at start-up, naming the schema and the ref."""


def _refuse_remote(uri: str) -> Any:
    raise SchemaError(f"remote $ref not allowed: {uri} (only locally indexed schemas resolve)")


def accepts(validator: Validator, instance: Any) -> bool:
    """Whether ``instance`` is valid: ``is_valid``, where a guard of exact numbers that refused it is
    settled by its exact value (``violations``). A verdict, where ``is_valid`` alone is a fast doubt."""
    return bool(validator.is_valid(instance)) or not violations(validator, instance)


LISTED_BYTES = 2048
"""An invalid instance up to this size (serialised) has its violations listed, up to
``MAX_VIOLATIONS``; a larger one has its first. jsonschema-rs gathers every violation of an instance
before it yields the first (about 25 µs each): listing them all is what costs, not finding one."""


def violations(
    validator: Validator, instance: Any, *, prefix: str = "", exact: Callable[[], Any | None] | None = None
) -> list[dict[str, Any]]:
    """The violations of ``instance``: ``{path, msg, keyword, schemaPath}``, sorted; every one for a
    small instance (up to ``MAX_VIOLATIONS``), the first for a larger one (``LISTED_BYTES``), so the
    cost of a verdict is bounded whatever the instance holds.

    ``path`` is an absolute RFC 6901 pointer (``prefix`` is prepended, for a sub-document);
    ``msg`` is the validator's own sentence and stays inside ``error.data``. A violation found twice
    (by two branches of an ``allOf``) is listed once; an asserted ``format`` carries ``rule: "format"``.
    Where a float sits on a value the schema compares to (``exact_numbers``), the instance is judged
    again by its exact decimals: ``exact()`` reads them from the frame's own bytes, or says ``None``
    when they are its doubles' own values (without it, the floats' own values are taken exactly).
    """
    if validator.is_valid(instance):  # the common case, and the fastest path through jsonschema-rs
        return []
    try:
        large = len(jsonio.dumps(instance)) > LISTED_BYTES
    except ValueError:  # nested deeper than is written (a value built in Python): its first violation
        large = True
    found = _listed(validator, instance, prefix, large)
    if any(is_guard(entry.get("schemaPath", "")) for entry in found):
        try:
            if exact is None:
                jsonio.finite(instance)  # a value built in Python: its floats are its exact values
            exactly = None if exact is None else exact()
        except ValueError:  # a number no double holds (past binary64's range): refused as it stands
            guards = (entry for entry in found if is_guard(entry.get("schemaPath", "")))
            return [{**entry, "msg": "not a finite binary64 number"} for entry in guards]
        judged = instance if exactly is None else exactly  # (``None``: its floats are its exact values)
        with unguarded():
            found = [] if validator.is_valid(judged) else _listed(validator, judged, prefix, large)
    return found


def _listed(validator: Validator, instance: Any, prefix: str, large: bool) -> list[dict[str, Any]]:
    """The violations of an invalid ``instance``: all of a small one, the first of a ``large`` one."""
    try:
        if large:
            try:
                validator.validate(instance)
            except jsonschema_rs.ValidationError as first:
                return [{**_entry(first, prefix), "more": "not listed: the first violation of a large value"}]
            return []  # (not expected: ``is_valid`` said otherwise)
        found: list[dict[str, Any]] = []
        seen: set[tuple[str, str, str]] = set()
        for error in validator.iter_errors(instance):
            entry = _entry(error, prefix)
            if (entry["path"], entry["keyword"], entry["msg"]) in seen:
                continue  # the same fault, found by both the envelope and the method's own definition
            seen.add((entry["path"], entry["keyword"], entry["msg"]))
            found.append(entry)
            if len(found) >= MAX_VIOLATIONS:
                break
    except ValueError:
        if not jsonio.too_deep(instance):
            raise  # a value JSON cannot hold: the caller's to report
        # jsonschema-rs cannot render a violation of a value nested this deep; the verdict stands.
        return [dict(TOO_DEEP, path=prefix)]
    found.sort(key=lambda v: (v["path"], v["msg"]))
    return found


def _entry(error: Any, prefix: str) -> dict[str, Any]:
    keyword = error.kind.name
    entry = {
        "path": prefix + pointer(error.instance_path),
        "msg": error.message,
        "keyword": keyword,
        "schemaPath": pointer(error.schema_path),
    }
    if keyword == "format":  # asserted only when asked for: reported under a rule of its own
        entry["rule"] = "format"
    return entry


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolIO:
    """A tool's compiled input and output validators (shared by fingerprint)."""

    tool_id: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None
    input: Validator
    output: Validator | None


def _meta_check(schema: Any, name: str) -> None:
    if not isinstance(schema, (dict, bool)):
        raise SchemaError(f"{name}: a schema must be an object or a boolean")
    try:
        jsonschema_rs.meta.validate(schema)
    except jsonschema_rs.ValidationError as exc:
        where = pointer(exc.instance_path) or "/"
        raise SchemaError(f"{name}: invalid against its meta-schema at {where}: {exc.message}") from None
    except jsonschema_rs.ReferencingError as exc:
        raise SchemaError(f"{name}: unknown meta-schema: {exc}") from None


def _compile(schema: Any, name: str, **options: Any) -> Validator:
    """``schema`` compiled, with the guard of exact numbers beside its numeric keywords."""
    try:
        guard = dict(KEYWORDS)
        return jsonschema_rs.validator_for(guarded(schema), retriever=_refuse_remote, keywords=guard, **options)
    except jsonschema_rs.ReferencingError as exc:
        raise SchemaError(f"{name}: unresolvable $ref: {exc}") from None
    except ValueError as exc:  # jsonschema-rs reports resolution and schema faults as ValueError
        raise SchemaError(f"{name}: cannot compile: {exc}") from None


def _refs(document: Any) -> Iterator[str]:
    """Every ``$ref`` value in a schema document."""
    if isinstance(document, dict):
        for key, value in document.items():
            if key == "$ref" and isinstance(value, str):
                yield value.split("#", 1)[0] or value
            else:
                yield from _refs(value)
    elif isinstance(document, list):
        for item in document:
            yield from _refs(item)


CLASSIFIED_RESPONSE: Mapping[str, Any] = MappingProxyType(
    {
        "type": "object",
        "required": ["id", "jsonrpc", "result"],
        "properties": {"id": {"type": ["string", "integer"]}, "jsonrpc": {"const": "2.0", "type": "string"}},
    }
)
"""What ``classify`` has established of a result response before the schema check sees it (-32600
otherwise): the registry does not judge it twice (see ``_result_validator``)."""


class ProtocolSchema:
    """One MCP protocol version: its definitions, methods and compiled validators.

    Method tables come from the schema itself (the ``ClientRequest``/``ServerRequest``/…
    unions and each definition's ``method`` const), never from a hand-written list. A frame is
    checked against every definition the specification assigns to it, in one validator: the
    JSON-RPC message definition (``JSONRPCRequest``, …, whose ``_meta`` and ``id`` rules the method
    definitions of the older versions do not repeat) and the method's own definition, or for a
    response the result type of the request it answers.
    """

    def __init__(self, version: str, document: Mapping[str, Any], path: Path, *, assert_formats: bool = False) -> None:
        self.version = version
        self.path = path
        self.document = document
        self.assert_formats = assert_formats
        self.defs_key = "$defs" if "$defs" in document else "definitions"
        self.definitions: Mapping[str, Any] = document[self.defs_key]
        self.uri = f"urn:mcp:schema:{version}"
        self.stateless = "InitializeRequest" not in self.definitions
        # Tools may declare an outputSchema and answer with structuredContent (from 2025-06-18).
        call_result = self.definitions.get("CallToolResult", {})
        self.structured_tool_results = "structuredContent" in call_result.get("properties", {})
        self._registry: Any = None  # the definitions indexed for ``$ref``: made with the first validator
        requests: dict[tuple[Direction, str], str] = {}
        notifications: dict[tuple[Direction, str], str] = {}
        sides = {
            "ClientRequest": (Direction.CLIENT_TO_SERVER, requests),
            "ServerRequest": (Direction.SERVER_TO_CLIENT, requests),
            "ClientNotification": (Direction.CLIENT_TO_SERVER, notifications),
            "ServerNotification": (Direction.SERVER_TO_CLIENT, notifications),
        }
        for union, (direction, table) in sides.items():
            for name in self._members(union):
                method = self._method_const(name)
                if method is not None:
                    table[(direction, method)] = name
        self.requests: Mapping[tuple[Direction, str], str] = MappingProxyType(requests)
        self.notifications: Mapping[tuple[Direction, str], str] = MappingProxyType(notifications)
        self.request_methods = frozenset(m for _, m in requests)
        self.notification_methods = frozenset(m for _, m in notifications)
        self.error_response_def = (
            "JSONRPCErrorResponse" if "JSONRPCErrorResponse" in self.definitions else "JSONRPCError"
        )
        self.result_response_def = (
            "JSONRPCResultResponse" if "JSONRPCResultResponse" in self.definitions else "JSONRPCResponse"
        )
        # An error answering a frame whose id could not be read: from 2025-11-25 it leaves ``id`` out
        # (the schema allows no ``null``); before, every form is refused and JSON-RPC 2.0's null stands.
        self.error_id_optional = "id" not in self.definitions[self.error_response_def].get("required", ())
        # Compiled on first use, each a whole-frame validator: one per request and notification
        # definition (with its envelope), one per result keyed by the method it answers, and the
        # envelopes. A session uses one version and a few methods: the rest is never compiled
        # (``compile_all`` compiles every one, for a server that answers every version at once).
        self._by_ref: dict[str, Validator] = {}
        self._validators: dict[str, Validator] = {}
        self._frames: dict[str, Validator] = {}
        self._results: dict[str, Validator] = {}
        self._result_required: dict[str, frozenset[str]] = {}
        self._request_of: dict[str, str] = {}  # a method → its request definition's name
        for name in set(requests.values()):
            method = self._method_const(name) or name
            self._request_of[method] = name
            self._result_required[method] = frozenset(self._result_definition(name).get("required", ()))
        self._envelope_of = {name: "JSONRPCRequest" for name in requests.values()}
        self._envelope_of.update({name: "JSONRPCNotification" for name in notifications.values()})

    @property
    def compiled(self) -> int:
        """How many of this version's validators are compiled so far."""
        return len({id(v) for table in (self._by_ref, self._frames, self._results) for v in table.values()})

    def compile_all(self) -> ProtocolSchema:
        """Every validator of this version compiled now (a start-up that must answer any frame at once)."""
        for name in self._envelope_of:
            self._frame(name)
        for method in self._request_of:
            self.result_validator(method)
        for name in ("JSONRPCRequest", "JSONRPCNotification", self.result_response_def, self.error_response_def):
            self.definition_validator(name)
        return self

    def _def(self, name: str) -> str:
        return f"#/{self.defs_key}/{name}"

    def _members(self, union: str) -> list[str]:
        definition = self.definitions.get(union)
        if definition is None:
            return []
        refs = [item["$ref"] for item in definition.get("anyOf", ()) if "$ref" in item]
        if not refs:
            return [union] if self._method_const(union) else []
        return [ref.rsplit("/", 1)[-1] for ref in refs]

    def _method_const(self, name: str) -> str | None:
        method = self.definitions.get(name, {}).get("properties", {}).get("method", {})
        const = method.get("const")
        return const if isinstance(const, str) else None

    def _result_name(self, request_name: str) -> str:
        """The result type of ``request_name``: ``XResult``, else the empty result (ping, subscribe…)."""
        stem = request_name.removesuffix("Request")
        for candidate in (f"{stem}Result", "EmptyResult", "Result"):
            if candidate in self.definitions:
                return candidate
        raise SchemaError(f"{self.path}: no result definition for {request_name}")

    def _result_validator(self, request_name: str) -> Validator:
        """The validator of a whole response to ``request_name``: the result-response envelope and
        the result type at ``/result`` (2026-07-28: the ``XResultResponse`` frame, whose result may be
        an ``InputRequiredResult``). Where classify's checks and the result type together imply both,
        only ``/result`` is read: the envelope is not judged twice."""
        stem, envelope = request_name.removesuffix("Request"), self.result_response_def
        frame = f"{stem}ResultResponse" if f"{stem}ResultResponse" in self.definitions else None
        result = self._def(frame) + "/properties/result" if frame else self._def(self._result_name(request_name))
        known = {**CLASSIFIED_RESPONSE, "properties": {**CLASSIFIED_RESPONSE["properties"], "result": {"$ref": result}}}
        name = f"{self.path}: {envelope} with {result} at /result"
        if all(self._implies(known, definition) for definition in (envelope, frame or envelope)):
            return self._compile({"properties": {"result": {"$ref": self.uri + result}}}, name)
        own = (
            {"$ref": self.uri + self._def(frame)} if frame else {"properties": {"result": {"$ref": self.uri + result}}}
        )
        return self._compile({"allOf": [{"$ref": self.uri + self._def(envelope)}, own]}, name)

    def _implies(self, own: str | Mapping[str, Any], other: str | Mapping[str, Any]) -> bool:
        """Whether a definition (by name) or schema implies another (``implication.implies``)."""
        prefix = f"#/{self.defs_key}/"
        own = {"$ref": prefix + own} if isinstance(own, str) else own
        other = {"$ref": prefix + other} if isinstance(other, str) else other
        return implies(own, other, self.definitions, prefix)

    def _result_definition(self, request_name: str) -> Mapping[str, Any]:
        definition: Mapping[str, Any] = self.definitions.get(self._result_name(request_name), {})
        while "$ref" in definition and "properties" not in definition:  # EmptyResult → Result
            definition = self.definitions.get(definition["$ref"].rsplit("/", 1)[-1], {})
        return definition

    def result_required(self, method: str) -> frozenset[str]:
        """Fields the version requires in the result of ``method`` (``resultType``, ``ttlMs``, …)."""
        return self._result_required.get(method, frozenset())

    def _compile(self, schema: Mapping[str, Any], name: str) -> Validator:
        if self._registry is None:
            document = guarded(dict(self.document))  # (the guard of exact numbers: ``exact_numbers``)
            self._registry = jsonschema_rs.Registry([(self.uri, document)], retriever=_refuse_remote)
        wrapper = {"$schema": self.document.get("$schema"), **schema}
        return _compile(wrapper, name, registry=self._registry, validate_formats=self.assert_formats)

    def _ref_validator(self, ref: str) -> Validator:
        validator = self._by_ref.get(ref)
        if validator is None:
            validator = self._by_ref[ref] = self._compile({"$ref": self.uri + ref}, f"{self.path}{ref}")
        return validator

    def _frame_validator(self, envelope: str, own: str) -> Validator:
        """One validator for a frame: its JSON-RPC message definition and its own (``allOf``), or its
        own alone where it already implies the envelope (2025-11-25 on: the envelope is not read twice)."""
        if self._implies(own, envelope):
            return self.definition_validator(own)
        name = f"{self.path}: {envelope} and {own}"
        return self._compile(
            {"allOf": [{"$ref": self.uri + self._def(envelope)}, {"$ref": self.uri + self._def(own)}]}, name
        )

    def definition_validator(self, name: str) -> Validator:
        """A validator for any definition (compiled on demand for the rarer ones)."""
        validator = self._validators.get(name)
        if validator is None:
            if name not in self.definitions:
                raise KeyError(name)
            validator = self._validators[name] = self._ref_validator(self._def(name))
        return validator

    def _frame(self, name: str) -> Validator:
        validator = self._frames.get(name)
        if validator is None:
            validator = self._frames[name] = self._frame_validator(self._envelope_of[name], name)
        return validator

    def request_validator(self, direction: Direction, method: str) -> Validator | None:
        """The whole-frame validator of a request of ``method`` sent in ``direction`` (envelope included)."""
        name = self.requests.get((direction, method))
        return None if name is None else self._frame(name)

    def notification_validator(self, direction: Direction, method: str) -> Validator | None:
        """The whole-frame validator of a notification of ``method`` sent in ``direction`` (envelope included)."""
        name = self.notifications.get((direction, method))
        return None if name is None else self._frame(name)

    def result_validator(self, method: str) -> Validator | None:
        """The whole-frame validator of a result response to ``method`` (envelope included)."""
        validator = self._results.get(method)
        if validator is None:
            name = self._request_of.get(method)
            if name is None:
                return None
            validator = self._results[method] = self._result_validator(name)
        return validator

    def envelope_validator(self, name: str) -> Validator:
        return self.definition_validator(name)


class SchemaRegistry:
    """The start-up registry: bundled MCP versions, the project's schemas and configured roots."""

    def __init__(
        self,
        *,
        mcp_dir: Path | None = None,
        roots: Sequence[Path] = (),
        assert_formats: bool = False,
        compile_all: bool = False,
    ) -> None:
        mcp_dir = BUNDLED_SCHEMAS / "mcp" if mcp_dir is None else mcp_dir
        self.mcp_dir = mcp_dir
        # ``format`` is an annotation in draft-07 and 2020-12 alike unless asserting it is asked for;
        # every schema compiled here follows the one setting (ADR 0014).
        self.assert_formats = assert_formats
        protocols: dict[str, ProtocolSchema] = {}
        for path in sorted(mcp_dir.glob("*/schema.json")):
            version = path.parent.name
            document = corrected(self._read(path), version, mcp_dir, SchemaError)  # where schema.ts wins (ADR 41)
            protocols[version] = ProtocolSchema(version, document, path, assert_formats=assert_formats)
            if compile_all:  # else each validator is compiled on its first use (``ProtocolSchema``)
                protocols[version].compile_all()
        if not protocols:
            raise SchemaError(f"{mcp_dir}: no MCP schemas (expected <version>/schema.json)")
        self.protocols: Mapping[str, ProtocolSchema] = MappingProxyType(protocols)
        self.versions: tuple[str, ...] = tuple(protocols)
        self.handshake_versions = tuple(v for v, p in protocols.items() if not p.stateless)
        self.stateless_versions = tuple(v for v, p in protocols.items() if p.stateless)
        self.latest: str = self.versions[-1]
        self.latest_handshake: str = self.handshake_versions[-1]
        # Every request method some version defines: a name none defines can be a server's own tool.
        self.request_methods: frozenset[str] = frozenset().union(*(p.request_methods for p in protocols.values()))
        self._compiled: dict[str, Validator] = {}
        self._tool_io: dict[str, ToolIO] = {}
        # Configured roots: every $id is indexed and every schema compiled now, so a ref that
        # does not resolve locally fails start-up instead of a request.
        self.roots = tuple(roots)
        self._documents: dict[str, Any] = {}
        self._files: dict[Path, tuple[str, Any]] = {}
        resources: list[tuple[str, Any]] = []
        for root in self.roots:
            for path in self._schema_files(root):
                document = self._read(path)
                uri = path.resolve().as_uri()
                resources.append((uri, document))
                self._files[path.resolve()] = (uri, document)
                if isinstance(document, dict) and isinstance(document.get("$id"), str):
                    resources.append((document["$id"], document))
                    self._documents[document["$id"]] = document
        self._root_registry = self._index(resources) if resources else None
        for path, (uri, document) in self._files.items():
            _meta_check(document, str(path))
            self.compile(document, base_uri=uri, name=str(path))

    def _index(self, resources: list[tuple[str, Any]]) -> Any:
        try:
            guarded_resources = [(uri, guarded(document)) for uri, document in resources]
            return jsonschema_rs.Registry(guarded_resources, retriever=_refuse_remote)
        except (ValueError, jsonschema_rs.ReferencingError) as exc:
            # Name the schema whose $ref failed: the resolver's message names only the ref.
            detail = str(exc)
            culprits = [
                str(path)
                for path, (_, document) in self._files.items()
                if any(ref in detail for ref in _refs(document))
            ]
            raise SchemaError(f"{', '.join(culprits) or 'a schema root'}: unresolvable $ref: {detail}") from None

    @staticmethod
    def _schema_files(root: Path) -> Iterator[Path]:
        if not root.is_dir():
            raise SchemaError(f"{root}: schema root is not a directory")
        for path in files_within(root):
            relative = path.relative_to(root).parts
            if "examples" in relative[:-1] or relative[0] == "mcp":
                continue  # instances, and the MCP versions loaded above
            yield path

    @staticmethod
    def _read(path: Path) -> Any:
        try:
            return jsonio.loads(path.read_bytes())
        except OSError as exc:
            raise SchemaError(f"{path}: cannot read: {exc.strerror}") from None
        except jsonio.JSONSyntaxError as exc:
            raise SchemaError(f"{path}: not JSON: {exc}") from None

    @property
    def provenance(self) -> list[dict[str, str | None]]:
        """Where each MCP schema in use comes from: version, SHA-256, repository and commit."""
        return [dict(entry) for entry in schema_provenance(self.mcp_dir)]

    def protocol(self, version: str) -> ProtocolSchema:
        """The schema of ``version``; ``KeyError`` for a version not bundled."""
        return self.protocols[version]

    def compile(self, schema: Any, *, base_uri: str | None = None, name: str = "schema") -> Validator:
        """The compiled validator for ``schema``, shared by every schema of equal content.

        The schema is checked against its meta-schema first (draft 2020-12 unless it says
        otherwise) and refused whole with :class:`SchemaError` when invalid.
        """
        key = jsonio.fingerprint(schema if base_uri is None else [base_uri, schema])
        validator = self._compiled.get(key)
        if validator is None:
            _meta_check(schema, name)
            options: dict[str, Any] = {}
            if self._root_registry is not None:
                options["registry"] = self._root_registry
            if base_uri is not None:
                options["base_uri"] = base_uri
            validator = self._compiled[key] = _compile(schema, name, validate_formats=self.assert_formats, **options)
        return validator

    def schema_file(self, path: Path) -> tuple[Any, Validator]:
        """A schema indexed from a configured root, with its compiled validator."""
        uri, document = self._files[path.resolve()]
        return document, self.compile(document, base_uri=uri, name=str(path))

    def bundled(self, name: str) -> Validator:
        """The compiled validator of ``schemas/<name>``, a schema of this project's own (its files)."""
        return self.compile(self._read(BUNDLED_SCHEMAS / name), name=name)

    def load_tool_io(self, tool_id: str) -> ToolIO:
        """The compiled I/O validators of one of the project's own tools.

        Reads ``schemas/tools/<tool_id>.input.json`` and, when present, ``.output.json``.
        """
        tool_io = self._tool_io.get(tool_id)
        if tool_io is None:
            folder = BUNDLED_SCHEMAS / "tools"
            input_path = folder / f"{tool_id}.input.json"
            if not input_path.is_file():
                raise KeyError(tool_id)
            input_schema = self._read(input_path)
            output_path = folder / f"{tool_id}.output.json"
            output_schema = self._read(output_path) if output_path.is_file() else None
            tool_io = self._tool_io[tool_id] = ToolIO(
                tool_id=tool_id,
                input_schema=input_schema,
                output_schema=output_schema,
                input=self.compile(input_schema, name=str(input_path)),
                output=None if output_schema is None else self.compile(output_schema, name=str(output_path)),
            )
        return tool_io
