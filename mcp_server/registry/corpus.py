"""The schema corpus the server's own tools answer from, read once at start-up.

Sources, first match wins: ``SYN_SCHEMAS_DIR``/``SYN_EXAMPLES_DIR``; else
``libs/synesthetic-schemas/{jsonschema,examples}`` under the working directory; else the bundled
official MCP schemas (every definition, as ``<Type>@<version>`` and as plain ``<Type>`` for the
newest version that has it) with the specification's examples. Never polled, never mutated.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any

from ..core.jsonio import MAX_READ_DEPTH
from ..core.settings import SetupError
from .schemas import SchemaError, SchemaRegistry, Validator, accepts, files_within, violations

__all__ = [
    "SCHEMA_REQUIRED",
    "Corpus",
    "SchemaEntry",
    "check_instance",
    "component_of",
    "failed",
    "load_corpus",
    "safe_path",
    "too_deep",
    "unsafe_name",
    "validate_against",
]

_DEFAULT_ALIASES = {"nested-synesthetic-asset": "synesthetic-asset"}
_BUNDLED_EXAMPLES_VERSION = "2026-07-28"


class SchemaEntry:
    """One schema of the corpus by name. Its validator is compiled on first use: the bundled corpus
    names every definition of every version, and a server start-up compiles none of them."""

    __slots__ = ("_compile", "_validator", "document", "name", "path", "version")

    def __init__(self, *, name: str, version: str, path: str, document: Any, compile: Callable[[], Validator]) -> None:
        self.name, self.version, self.path, self.document = name, version, path, document  # path: "/"-separated
        self._compile = compile
        self._validator: Validator | None = None

    @property
    def validator(self) -> Validator:
        if self._validator is None:
            self._validator = self._compile()
        return self._validator


def component_of(path: str) -> str:
    """An example's component: its file name up to the first ``.`` or ``_``."""
    name = PurePosixPath(path).name
    cut = min((i for i in (name.find("."), name.find("_")) if i > 0), default=len(name))
    return name[:cut]


def safe_path(root: Path, relative: str) -> Path | None:
    """``relative`` inside ``root``, or ``None``: no ``..`` segment, not absolute, and after
    resolving symlinks still inside the root."""
    if not relative or relative.startswith(("/", "\\")) or ".." in PurePosixPath(relative).parts:
        return None
    candidate = (root / relative).resolve()
    base = root.resolve()
    if candidate != base and base not in candidate.parents:
        return None
    return candidate


def unsafe_name(name: str) -> bool:
    """A schema name that would leave its root: absolute, or with a ``..`` segment."""
    return name.startswith(("/", "\\")) or ".." in name.replace("\\", "/").split("/")


def failed(path: str, msg: str, reason: str = "validation_failed") -> dict[str, Any]:
    """The tools' ``validation_failed`` result (or ``reason``) for one problem with one argument."""
    return {"ok": False, "reason": reason, "errors": [{"path": path, "msg": msg}]}


def too_deep(path: str) -> dict[str, Any]:
    """The tools' result for a document nested deeper than the reader goes (``jsonio.MAX_READ_DEPTH``)."""
    return failed(path, f"nested deeper than {MAX_READ_DEPTH} levels", "too_deep")


def _parse_aliases(raw: str | None) -> dict[str, str]:
    aliases = dict(_DEFAULT_ALIASES)
    for item in (raw or "").split(","):
        if not item.strip():
            continue
        alias, sep, target = item.partition("=")
        if not sep or not alias.strip() or not target.strip():
            raise SetupError(f"MCP_SCHEMA_ALIASES must look like 'alias=schema,alias2=schema2', got {raw!r}")
        aliases[alias.strip()] = target.strip()
    return aliases


class Corpus:
    def __init__(
        self,
        *,
        entries: list[SchemaEntry],
        examples_root: Path,
        examples: list[str],
        schemas_dir: str,
        aliases: Mapping[str, str],
        default_schema_of: Mapping[str, str] | None = None,
    ) -> None:
        self.entries = sorted(entries, key=lambda e: (e.name, e.version, e.path))
        self._by_name: Mapping[str, SchemaEntry] = MappingProxyType({e.name: e for e in self.entries})
        self.examples_root = examples_root
        self.examples = sorted((component_of(p), p) for p in examples)
        self.schemas_dir = schemas_dir
        self.examples_dir = str(examples_root)
        self.aliases: Mapping[str, str] = MappingProxyType(dict(aliases))
        self._default_schema_of = default_schema_of or {}

    def schema(self, name: str) -> SchemaEntry | None:
        return self._by_name.get(self.aliases.get(name, name))

    def schema_for_example(self, example: Any, path: str) -> str:
        """Which schema an example claims: its ``schema`` field, else a local ``$schemaRef`` or
        ``$schema`` file, else the file-name convention."""
        if isinstance(example, Mapping):
            named = example.get("schema")
            if isinstance(named, str) and named:
                return named
            for key in ("$schemaRef", "$schema"):
                ref = example.get(key)
                if isinstance(ref, str) and "://" not in ref:
                    stem = PurePosixPath(ref.split("#", 1)[0]).name
                    for suffix in (".schema.json", ".json"):
                        stem = stem.removesuffix(suffix)
                    if stem in self._by_name:
                        return stem
        folder = PurePosixPath(path).parent.name
        return self._default_schema_of.get(folder) or component_of(path)


def _bundled(registry: SchemaRegistry, aliases: Mapping[str, str], examples_root: Path | None = None) -> Corpus:
    entries: list[SchemaEntry] = []
    newest: dict[str, SchemaEntry] = {}
    for version, protocol in registry.protocols.items():
        path = f"{version}/schema.json"
        for type_name, definition in protocol.definitions.items():
            entry = SchemaEntry(
                name=f"{type_name}@{version}",
                version=version,
                path=path,
                document=definition,
                compile=partial(protocol.definition_validator, type_name),
            )
            entries.append(entry)
            newest[type_name] = entry
    entries += [
        SchemaEntry(name=type_name, version=e.version, path=e.path, document=e.document, compile=e._compile)
        for type_name, e in newest.items()
    ]
    spec_examples = examples_root is None
    if examples_root is None:
        examples_root = registry.mcp_dir / _BUNDLED_EXAMPLES_VERSION / "examples"
    examples = [p.relative_to(examples_root).as_posix() for p in files_within(examples_root)]
    folders = {PurePosixPath(p).parent.name for p in examples} if spec_examples else set()
    return Corpus(
        entries=entries,
        examples_root=examples_root,
        examples=examples,
        schemas_dir=str(registry.mcp_dir),
        aliases=aliases,
        default_schema_of={folder: f"{folder}@{_BUNDLED_EXAMPLES_VERSION}" for folder in folders},
    )


def _given(validator: Validator) -> Callable[[], Validator]:
    """A validator compiled already (a configured root is compiled whole at start-up)."""
    return lambda: validator


def _from_dirs(schemas_dir: Path, examples_dir: Path, aliases: Mapping[str, str]) -> Corpus:
    try:
        registry = SchemaRegistry(roots=[schemas_dir])
    except SchemaError as exc:
        raise SetupError(str(exc)) from None
    entries = []
    for path in files_within(schemas_dir, quiet=True):  # what the registry indexed (and named)
        relative = path.relative_to(schemas_dir).as_posix()
        if "examples" in PurePosixPath(relative).parts[:-1]:
            continue
        document, validator = registry.schema_file(path)
        name = path.name.removesuffix(".schema.json").removesuffix(".json")
        version = ""
        if isinstance(document, Mapping):
            raw_version = document.get("version", document.get("x-schema-version", ""))
            version = raw_version if isinstance(raw_version, str) else str(raw_version)
        entry = SchemaEntry(name=name, version=version, path=relative, document=document, compile=_given(validator))
        entries.append(entry)
    quiet = examples_dir.resolve() == schemas_dir.resolve()  # named once, by the registry
    examples = [p.relative_to(examples_dir).as_posix() for p in files_within(examples_dir, quiet=quiet)]
    return Corpus(
        entries=entries, examples_root=examples_dir, examples=examples, schemas_dir=str(schemas_dir), aliases=aliases
    )


def load_corpus(environ: Mapping[str, str], registry: SchemaRegistry, cwd: Path | None = None) -> Corpus:
    aliases = _parse_aliases(environ.get("MCP_SCHEMA_ALIASES"))
    schemas_env, examples_env = environ.get("SYN_SCHEMAS_DIR"), environ.get("SYN_EXAMPLES_DIR")
    if schemas_env or examples_env:
        for variable, value in (("SYN_SCHEMAS_DIR", schemas_env), ("SYN_EXAMPLES_DIR", examples_env)):
            if value and not Path(value).is_dir():
                raise SetupError(f"{variable}={value} is not a directory")
        if not schemas_env:
            return _bundled(registry, aliases, Path(str(examples_env)))
        schemas_dir = Path(schemas_env)
        return _from_dirs(schemas_dir, Path(examples_env) if examples_env else schemas_dir, aliases)
    base = Path(cwd or os.getcwd()) / "libs" / "synesthetic-schemas"
    if (base / "jsonschema").is_dir():
        examples_dir = base / "examples" if (base / "examples").is_dir() else base / "jsonschema"
        return _from_dirs(base / "jsonschema", examples_dir, aliases)
    return _bundled(registry, aliases)


def check_instance(entry: SchemaEntry, instance: Any) -> list[dict[str, str]]:
    """Violations of ``instance`` against a corpus schema, as ``{path, msg}``, sorted."""
    return [{"path": v["path"], "msg": v["msg"]} for v in violations(entry.validator, instance)]


SCHEMA_REQUIRED = failed("/schema", "schema param is required")


def validate_against(corpus: Corpus, asset: Any, schema: Any) -> dict[str, Any]:
    """``validate_asset``'s result. A top-level ``$schemaRef`` of the asset is ignored."""
    if not isinstance(schema, str) or not schema:
        return SCHEMA_REQUIRED
    if unsafe_name(schema):
        return failed("/schema", "invalid_path")
    entry = corpus.schema(schema)
    if entry is None:
        return failed("/schema", f"unknown schema {schema!r}")
    if isinstance(asset, Mapping) and "$schemaRef" in asset:
        asset = {key: value for key, value in asset.items() if key != "$schemaRef"}
    if accepts(entry.validator, asset):
        return {"ok": True, "errors": []}
    return {"ok": False, "reason": "validation_failed", "errors": check_instance(entry, asset)}
