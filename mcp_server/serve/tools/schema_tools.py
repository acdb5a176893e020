"""The corpus tools: list_schemas, get_schema, list_examples, get_example.

Deterministic: the same corpus and arguments give byte-identical results. No writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core import jsonio
from ...registry.corpus import Corpus, failed, safe_path, too_deep, unsafe_name, validate_against
from . import Tool, ToolContext

__all__ = ["corpus_tools"]

NOT_FOUND: dict[str, Any] = {"ok": False, "reason": "not_found"}


def example_of(corpus: Corpus, relative: str) -> dict[str, Any]:
    """``get_example``: the example at ``relative``, validated now against the schema it names."""
    path = safe_path(corpus.examples_root, relative)
    if path is None:
        return failed("/path", "invalid_path")
    if not path.is_file():
        return NOT_FOUND
    try:
        example = jsonio.loads(path.read_bytes())
    except jsonio.TooDeepError:
        return too_deep("")
    except (OSError, jsonio.JSONSyntaxError):
        return failed("", "not_json")
    name = corpus.schema_for_example(example, relative)
    verdict = validate_against(corpus, example, name)  # as validate_asset: without its $schemaRef
    if not verdict["ok"]:
        return verdict
    return {"ok": True, "example": example, "schema": name, "validated": True}


def corpus_tools(corpus: Corpus) -> list[Tool]:
    def list_schemas(arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        return {"ok": True, "schemas": [{"name": e.name, "version": e.version, "path": e.path} for e in corpus.entries]}

    def get_schema(arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        name = arguments["name"]
        if unsafe_name(name):
            return failed("/name", "invalid_path")
        entry = corpus.schema(name)
        if entry is None:
            return NOT_FOUND
        return {"ok": True, "schema": entry.document, "version": entry.version}

    def list_examples(arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        component = arguments.get("component") or "all"
        chosen = [(c, p) for c, p in corpus.examples if component in ("all", "*") or c == component]
        return {"ok": True, "examples": [{"component": c, "path": p} for c, p in chosen]}

    def get_example(arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        return example_of(corpus, arguments["path"])

    return [
        Tool(
            name="list_schemas",
            title="List schemas",
            run=list_schemas,
            description="List every schema of the corpus: name, version and path, sorted.",
        ),
        Tool(
            name="get_schema",
            title="Get a schema",
            run=get_schema,
            description="Return one schema of the corpus by name (e.g. CallToolRequest@2025-11-25).",
        ),
        Tool(
            name="list_examples",
            title="List examples",
            run=list_examples,
            description="List the corpus's examples, optionally of one component.",
        ),
        Tool(
            name="get_example",
            title="Get an example",
            run=get_example,
            description="Return one example, validated now against the schema it names.",
        ),
    ]
