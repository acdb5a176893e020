"""The validation tools: validate_asset (and its deprecated alias validate), validate_many, diff_assets."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from ...core.diff import diff_documents
from ...registry.corpus import SCHEMA_REQUIRED, Corpus, validate_against
from . import Tool, ToolContext

__all__ = ["validation_tools"]


def validation_tools(corpus: Corpus, max_batch: int) -> list[Tool]:
    def validate_asset(arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        return validate_against(corpus, arguments.get("asset"), arguments.get("schema"))

    def validate(arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        sys.stderr.write("mcp:warning reason=deprecated_alias method=validate\n")
        return validate_against(corpus, arguments.get("asset"), arguments.get("schema"))

    def validate_many(arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
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

    def diff_assets(arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        # (any document read nests at most jsonio.MAX_READ_DEPTH levels: its patch can be written back)
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
