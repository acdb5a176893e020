"""ADR 41: no schema.json definition is narrower than its schema.ts. Every member of every declaration
of every version (and inside them array elements, index-signature values, inline members) compared
by the JSON types each side allows, after the errata: the next gap is found here, not by a user."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from mcp_server.registry.schemas import BUNDLED_SCHEMAS, SchemaRegistry

from .narrowing import Comparison, Gap
from .schema_ts import parse

MCP = BUNDLED_SCHEMAS / "mcp"
VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
COMPARED_AT_LEAST = {"2024-11-05": 200, "2025-03-26": 220, "2025-06-18": 280, "2025-11-25": 420, "2026-07-28": 420}
"""How many places the comparison must reach per version (it reaches 215, 237, 297, 442, 438): a
parser that stops reading the file fails here instead of comparing nothing."""

# Where the JSON says `integer` and schema.ts `number`, and integer is what is meant: the generator
# types every `number` as integer (`--defaultNumberType integer`) unless the member says
# `@TJS-type number`, and these are whole by the specification's text or by what they count.
# Not errata: the JSON is right. Each applies in every version that has the place.
ID_OR_TOKEN = "the specification (basic): 'a string or integer ID'; progress: 'a string or integer value'"
WHOLE_BY_ALIAS = {"RequestId": ID_OR_TOKEN, "ProgressToken": ID_OR_TOKEN}
"""Type aliases: the alias's own definition and every member declared with it."""
ERROR_CODE = "JSON-RPC 2.0 §5.1 and the specification (basic): error codes MUST be integers"
COUNT = "a count (of bytes, tokens, values): whole, as the generator typed it"
JSON_SCHEMA_LENGTH = "JSON Schema Validation §6.3, §6.4: the value MUST be a non-negative integer"
MILLISECONDS = "a duration in milliseconds, whole as the generator typed it (the official SDKs read an int)"
WHOLE_BY_MEMBER = {
    ("Error", "code"): ERROR_CODE,
    ("JSONRPCError", "error.code"): ERROR_CODE,
    ("Resource", "size"): COUNT,
    ("CreateMessageRequest", "params.maxTokens"): COUNT,
    ("CreateMessageRequestParams", "maxTokens"): COUNT,
    ("CompleteResult", "completion.total"): COUNT,
    ("StringSchema", "minLength"): JSON_SCHEMA_LENGTH,
    ("StringSchema", "maxLength"): JSON_SCHEMA_LENGTH,
    ("UntitledMultiSelectEnumSchema", "minItems"): JSON_SCHEMA_LENGTH,
    ("UntitledMultiSelectEnumSchema", "maxItems"): JSON_SCHEMA_LENGTH,
    ("TitledMultiSelectEnumSchema", "minItems"): JSON_SCHEMA_LENGTH,
    ("TitledMultiSelectEnumSchema", "maxItems"): JSON_SCHEMA_LENGTH,
    ("TaskMetadata", "ttl"): MILLISECONDS,
    ("Task", "ttl"): MILLISECONDS,
    ("Task", "pollInterval"): MILLISECONDS,
    ("CacheableResult", "ttlMs"): MILLISECONDS,
}
"""Members, by definition and path."""


def _excluded(gap: Gap) -> bool:
    """Whether ``gap`` is one of the documented integers: `integer` missing nothing but `number`."""
    only_fractions = gap.ts - gap.json == {"number"}
    known = gap.alias in WHOLE_BY_ALIAS or (gap.definition, gap.path) in WHOLE_BY_MEMBER
    return only_fractions and known


def _comparison(version: str, document: Any) -> tuple[Comparison, list[Gap]]:
    comparison = Comparison(version, parse(MCP / version / "schema.ts"), document)
    return comparison, list(comparison.gaps())


def _published(version: str) -> Any:
    return json.loads((MCP / version / "schema.json").read_text())


def _listed(gaps: Iterable[Gap]) -> str:
    return "\n".join(str(gap) for gap in gaps)


@pytest.mark.parametrize("version", VERSIONS)
def test_no_definition_is_narrower_than_its_schema_ts_once_the_errata_are_applied(
    registry: SchemaRegistry, version: str
) -> None:
    """ADR 41 / DESIGN (schema.ts is normative): every place the comparison reaches allows at least the
    JSON types schema.ts allows, but the documented integers; nothing left unread or unmatched."""
    comparison, gaps = _comparison(version, registry.protocol(version).document)
    narrower = [gap for gap in gaps if not _excluded(gap)]
    assert narrower == [], (
        f"schema.json narrower than schema.ts (an erratum, or a documented integer):\n{_listed(narrower)}"
    )
    assert comparison.compared >= COMPARED_AT_LEAST[version], (version, comparison.compared)
    assert comparison.skipped == 0 and comparison.absent == [], (comparison.skipped, comparison.absent)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_definition_of_the_json_is_a_declaration_of_schema_ts(version: str) -> None:
    """ADR 41: the comparison covers every definition: schema.json's are exactly schema.ts's
    declarations (each generated from one), so none escapes it."""
    document = _published(version)
    declared = parse(MCP / version / "schema.ts").declarations
    assert set(document.get("$defs") or document["definitions"]) == set(declared)


def test_on_the_published_json_the_comparison_finds_exactly_the_places_the_errata_correct() -> None:
    """ADR 41: the guard can fail: on the schema.json files as published, the gaps beyond the
    documented integers are the errata's places (ElicitResult.content's values in three versions,
    and 2026-07-28's JSONValue, with the JSONObject and JSONArray it reaches), each at the line the
    erratum cites; and every documented integer is still met somewhere."""
    found: set[tuple[str, str, int]] = set()
    used: set[Any] = set()
    for version in VERSIONS:
        _, gaps = _comparison(version, _published(version))
        found |= {(gap.version, gap.definition, gap.line) for gap in gaps if not _excluded(gap)}
        used |= {gap.alias for gap in gaps if _excluded(gap)} | {(g.definition, g.path) for g in gaps if _excluded(g)}
    errata = json.loads((MCP / "errata.json").read_text())["errata"]
    cited = {
        (version, erratum["definition"], place["source"]["line"])
        for erratum in errata
        for version, place in erratum["versions"].items()
    }
    assert found - {("2026-07-28", "JSONObject", 12), ("2026-07-28", "JSONArray", 17)} == cited
    assert set(WHOLE_BY_ALIAS) | set(WHOLE_BY_MEMBER) <= used, "a documented integer no version has any more"


def test_a_json_type_missing_from_an_array_or_an_index_signature_is_found() -> None:
    """ADR 41: an index signature's values whose JSON lost `array` (schema.ts: `string[]`) and
    `boolean` are reported with the definition, the place, the line and the types missing."""
    document = copy.deepcopy(_published("2025-11-25"))
    content = document["$defs"]["ElicitResult"]["properties"]["content"]["additionalProperties"]
    content["anyOf"] = [{"type": ["string", "number"]}]
    _, gaps = _comparison("2025-11-25", document)
    [gap] = [gap for gap in gaps if gap.definition == "ElicitResult"]
    assert (gap.path, gap.line, gap.ts - gap.json) == ("content.{}", 2485, {"array", "boolean"})
    assert "content?: { [key: string]: string | number | boolean | string[] };" in str(gap)


def test_the_reader_of_schema_ts_reads_unions_arrays_index_signatures_literals_and_annotations(
    tmp_path: Path,
) -> None:
    """ADR 41: the TypeScript subset the files use, read on a small file of it."""
    source = tmp_path / "schema.ts"
    source.write_text(
        'export const V = "2.0";\n'
        "/** doc */\n"
        'export interface A extends B<C>, Omit<D, "x"> {\n'
        "  /**\n   * @TJS-type number\n   */\n"
        "  ratio: number;\n"
        '  "io.x/key"?: string | null;\n'
        "  v: typeof V;\n"
        "  list: (E | F)[];\n"
        "  map: { [key: string]: string[] };\n"
        "}\n"
        'export type G =\n  | "a"\n  | -1;\n'
    )
    module = parse(source)
    members = {m.name: m for m in module.declarations["A"].body.members}
    assert set(members) == {"ratio", "io.x/key", "v", "list", "map"}
    assert members["ratio"].line == 7 and "@TJS-type number" in members["ratio"].doc
    assert members["io.x/key"].optional and module.declarations["G"].line == 14
    comparison = Comparison("test", module, {"definitions": {}})
    assert comparison.ts_types(members["v"].type) == {"string"}
    assert comparison.ts_types(module.declarations["G"].body) == {"string", "integer"}
    assert comparison.ts_types(members["io.x/key"].type) == {"string", "null"}
