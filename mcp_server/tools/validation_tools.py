"""The validation tools: validate_asset (and its deprecated alias validate), validate_many, diff_assets."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from .. import jsonio
from ..corpus import Corpus, check_instance, failed, too_deep, unsafe_name
from ..diff import diff_documents
from . import Tool, ToolContext

__all__ = ["validate_against", "validation_tools"]

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
    if jsonio.too_deep(asset):
        return too_deep("")  # a pointer into the asset, as every error of validate_asset
    if isinstance(asset, Mapping) and "$schemaRef" in asset:
        asset = {key: value for key, value in asset.items() if key != "$schemaRef"}
    errors = check_instance(entry, asset)
    return {"ok": False, "reason": "validation_failed", "errors": errors} if errors else {"ok": True, "errors": []}


def validation_tools(corpus: Corpus, max_batch: int) -> list[Tool]:
    async def validate_asset(arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        return validate_against(corpus, arguments.get("asset"), arguments.get("schema"))

    async def validate(arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        sys.stderr.write("mcp:warning reason=deprecated_alias method=validate\n")
        return validate_against(corpus, arguments.get("asset"), arguments.get("schema"))

    async def validate_many(arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        assets = arguments["assets"]
        if len(assets) > max_batch:
            return {"ok": False, "reason": "unsupported", "detail": "batch_too_large", "limit": max_batch}
        schema = arguments.get("schema")
        if not isinstance(schema, str) or not schema:
            return SCHEMA_REQUIRED
        results = []
        for asset in assets:
            outcome = validate_against(corpus, asset, schema)
            results.append({"ok": True} if outcome["ok"] else {"ok": False, "errors": outcome["errors"]})
        return {"ok": True, "results": results}

    async def diff_assets(arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        for name in ("base", "new"):
            if jsonio.too_deep(arguments[name]):  # the patch could hold it, and could not be written back
                return too_deep(f"/{name}")
        return {"ok": True, "patch": diff_documents(arguments["base"], arguments["new"])}

    description = "Validate an asset against a named schema of the corpus; errors carry RFC 6901 paths."
    return [
        Tool(name="validate_asset", title="Validate an asset", run=validate_asset, description=description),
        Tool(
            name="validate",
            title="Validate an asset (deprecated alias)",
            run=validate,
            description="Deprecated alias of validate_asset.",
        ),
        Tool(
            name="validate_many",
            title="Validate many assets",
            run=validate_many,
            description=f"Validate up to MCP_MAX_BATCH assets (now {max_batch}) against one schema.",
        ),
        Tool(
            name="diff_assets",
            title="Diff two assets",
            run=diff_assets,
            description="RFC 6902 patch (add/remove/replace) that turns base into new.",
        ),
    ]
