"""SchemaRegistry: bundled versions, local-only $ref, fingerprint-shared validators, meta-validation."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_server.core import jsonio
from mcp_server.registry.schemas import BUNDLED_SCHEMAS, SchemaError, SchemaRegistry, violations

EXAMPLES = BUNDLED_SCHEMAS / "mcp" / "2026-07-28" / "examples"
EXAMPLE_FILES = sorted(EXAMPLES.glob("*/*.json"))


def test_every_bundled_version_loads_with_its_method_tables(registry: SchemaRegistry) -> None:
    """Issue 2 §3 / DESIGN: five versions; stateless only 2026-07-28; methods from the schema."""
    assert registry.versions == ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
    assert registry.stateless_versions == ("2026-07-28",)
    assert "initialize" in registry.protocol("2024-11-05").request_methods
    assert "initialize" not in registry.protocol("2026-07-28").request_methods
    assert "server/discover" in registry.protocol("2026-07-28").request_methods
    assert "elicitation/create" not in registry.protocol("2025-03-26").request_methods


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_spec_example_validates_against_its_type(registry: SchemaRegistry, path: Path) -> None:
    """schemas/mcp/README: each example validates against #/$defs/<TypeName>."""
    validator = registry.protocol("2026-07-28").definition_validator(path.parent.name)
    assert violations(validator, jsonio.loads(path.read_bytes())) == []


def _mutation_cases() -> list[tuple[str, str, Any]]:
    """(type, expected path, mutated example): a required field removed, a string field made a number."""
    definitions = jsonio.loads((BUNDLED_SCHEMAS / "mcp" / "2026-07-28" / "schema.json").read_bytes())["$defs"]
    cases = []
    for path in EXAMPLE_FILES:
        type_name, document = path.parent.name, jsonio.loads(path.read_bytes())
        schema = definitions[type_name]
        if not isinstance(document, dict):
            continue
        for name in schema.get("required", []):
            if name in document:
                mutated = copy.deepcopy(document)
                del mutated[name]
                cases.append((type_name, "", mutated))
                break
        for name, value in document.items():
            if schema.get("properties", {}).get(name, {}).get("type") == "string" and isinstance(value, str):
                mutated = copy.deepcopy(document)
                mutated[name] = 12345
                cases.append((type_name, "/" + name, mutated))
                break
    return cases


MUTATIONS = _mutation_cases()


def test_the_mutation_corpus_covers_most_spec_examples() -> None:
    """Issue 2 §7: mutated copies of the spec examples exist for most types."""
    assert len({type_name for type_name, _, _ in MUTATIONS}) >= 60


@pytest.mark.parametrize(
    ("type_name", "expected", "mutated"), MUTATIONS, ids=[f"{t}{p or '/-required'}" for t, p, _ in MUTATIONS]
)
def test_a_mutated_spec_example_fails_at_the_mutated_path(
    registry: SchemaRegistry, type_name: str, expected: str, mutated: Any
) -> None:
    """Issue 2 §7: a required field removed or a type changed fails at the right path."""
    validator = registry.protocol("2026-07-28").definition_validator(type_name)
    assert expected in [v["path"] for v in violations(validator, mutated)]


def test_identical_schemas_share_one_validator_object(registry: SchemaRegistry) -> None:
    """Issue 2 §3: cached by fingerprint; identical schemas share one validator (is)."""
    a = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    b = json.loads('{"required":["x"],  "properties": {"x": {"type": "integer"}}, "type":"object"}')
    assert registry.compile(a) is registry.compile(b)
    assert registry.compile(a) is not registry.compile({"type": "object"})


@given(st.dictionaries(st.text(max_size=5), st.integers(-(2**63), 2**63 - 1) | st.text(max_size=5), max_size=6))
def test_fingerprint_ignores_key_order_and_whitespace(value: dict[str, Any]) -> None:
    """STYLE: the fingerprint is SHA-256 of canonical JSON (sorted keys, compact)."""
    reordered = dict(reversed(list(value.items())))
    spaced = json.loads(json.dumps(value, indent=3))
    assert jsonio.fingerprint(value) == jsonio.fingerprint(reordered) == jsonio.fingerprint(spaced)


def test_a_schema_invalid_against_its_meta_schema_is_refused_whole(registry: SchemaRegistry) -> None:
    """Issue 2 §3: refused with a clear error, never half-compiled."""
    with pytest.raises(SchemaError, match="meta-schema"):
        registry.compile({"type": "objekt"})
    with pytest.raises(SchemaError):
        registry.compile({"properties": {"x": {"minimum": "three"}}})


def write(root: Path, name: str, document: Any) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


def test_refs_resolve_by_absolute_id_relative_file_and_local_pointer(tmp_path: Path) -> None:
    """Issue 2 §3: every $id in every configured root is indexed; $ref resolves locally."""
    write(
        tmp_path,
        "colour.schema.json",
        {"$id": "https://schemas.example.test/colour.json", "type": "string", "pattern": "^#[0-9a-f]{6}$"},
    )
    write(tmp_path, "sub/size.schema.json", {"type": "integer", "minimum": 1})
    main = write(
        tmp_path,
        "asset.schema.json",
        {
            "$defs": {"name": {"type": "string", "minLength": 1}},
            "type": "object",
            "properties": {
                "colour": {"$ref": "https://schemas.example.test/colour.json"},
                "size": {"$ref": "sub/size.schema.json"},
                "name": {"$ref": "#/$defs/name"},
            },
        },
    )
    registry = SchemaRegistry(roots=[tmp_path])
    _, validator = registry.schema_file(main)
    assert validator.is_valid({"colour": "#00ff00", "size": 2, "name": "a"})
    paths = [v["path"] for v in violations(validator, {"colour": "red", "size": 0, "name": ""})]
    assert paths == ["/colour", "/name", "/size"]


def test_a_ref_to_an_unreachable_url_fails_start_up_naming_schema_and_ref(tmp_path: Path) -> None:
    """Issue 2 §3: a $ref not found locally is a start-up error; no network access is attempted."""
    write(tmp_path, "remote.schema.json", {"properties": {"x": {"$ref": "https://unreachable.invalid/x.json"}}})
    with pytest.raises(SchemaError) as caught:
        SchemaRegistry(roots=[tmp_path])
    assert "remote.schema.json" in str(caught.value)
    assert "unreachable.invalid/x.json" in str(caught.value)


def test_an_unreadable_schema_file_fails_start_up_with_its_path(tmp_path: Path) -> None:
    """Bad input gets a clear error: a schema root file that is not JSON."""
    (tmp_path / "broken.json").write_text("{nope")
    with pytest.raises(SchemaError, match=r"broken\.json"):
        SchemaRegistry(roots=[tmp_path])


def test_a_missing_schema_root_fails_start_up(tmp_path: Path) -> None:
    """Bad input gets a clear error: a configured root that does not exist."""
    with pytest.raises(SchemaError, match="not a directory"):
        SchemaRegistry(roots=[tmp_path / "missing"])


def test_tool_io_is_compiled_once_and_shared(registry: SchemaRegistry) -> None:
    """Issue 2 §3: load_tool_io returns validators cached by fingerprint."""
    first = registry.load_tool_io("validate_asset")
    assert registry.load_tool_io("validate_asset") is first
    assert registry.compile(dict(first.input_schema)) is first.input
    with pytest.raises(KeyError):
        registry.load_tool_io("no_such_tool")
