"""ADR 41: the errata list. Where an official schema.json is narrower than the schema.ts it was
generated from, the registry (and the independent oracle) judge by schema.ts: each erratum cites its
schema.ts line, replaces exactly what the published JSON holds, and changes verdicts where it should."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from mcp_server.chain.compose import build_chain
from mcp_server.core import jsonio
from mcp_server.core.errors import Rejection
from mcp_server.core.session import Session
from mcp_server.core.types import CLIENT_TO_SERVER, SERVER_TO_CLIENT, Frame, Message
from mcp_server.registry.errata import ERRATA_FILE
from mcp_server.registry.schemas import BUNDLED_SCHEMAS, SchemaError, SchemaRegistry, violations

from ..conftest import meta_2026
from ..oracle import C2S, Case, SpecSchema

MCP = BUNDLED_SCHEMAS / "mcp"
ERRATA = json.loads((MCP / ERRATA_FILE).read_text())["errata"]
PLACES = [(erratum, version, place) for erratum in ERRATA for version, place in erratum["versions"].items()]
SCORE = {"action": "accept", "content": {"score": 95.5}}
"""The reply of the official conformance scenario elicitation-sep1034-client-defaults (a number default)."""


def _at(document: Any, pointer: str) -> Any:
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        document = document[int(token)] if isinstance(document, list) else document[token]
    return document


def _place_id(case: tuple[dict[str, Any], str, dict[str, Any]]) -> str:
    return f"{case[0]['name']}@{case[1]}"


@pytest.mark.parametrize("case", PLACES, ids=_place_id)
def test_each_erratum_cites_its_schema_ts_line_and_replaces_what_the_published_json_holds(
    case: tuple[dict[str, Any], str, dict[str, Any]],
) -> None:
    """ADR 41: an erratum is data that can be checked: the schema.ts line it names says what it
    records (in the bundled file of the recorded commit), its pointer is inside its definition, and
    the published schema.json holds there exactly the value it replaces."""
    erratum, version, place = case
    source = place["source"]
    assert source["file"] == f"{version}/schema.ts"
    lines = (MCP / source["file"]).read_text(encoding="utf-8").splitlines()
    assert lines[source["line"] - 1].strip() == source["text"]
    published = json.loads((MCP / version / "schema.json").read_text())
    defs_key = "$defs" if "$defs" in published else "definitions"
    assert place["pointer"].startswith(f"/{defs_key}/{erratum['definition']}/")
    assert _at(published, place["pointer"]) == place["replaces"] != place["with"]
    assert erratum["why"] and erratum["name"] == erratum["name"].lower()


@pytest.mark.parametrize("case", PLACES, ids=_place_id)
def test_the_registry_and_the_oracle_both_read_each_version_with_its_errata(
    registry: SchemaRegistry, case: tuple[dict[str, Any], str, dict[str, Any]]
) -> None:
    """ADR 41 / ADR 14 (the oracle stays independent): the registry applies the errata when it loads a
    version, and tests/oracle.py applies the same data file itself; both read the corrected value."""
    _, version, place = case
    assert _at(registry.protocol(version).document, place["pointer"]) == place["with"]
    assert _at(SpecSchema(version).document, place["pointer"]) == place["with"]


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", "2026-07-28"])
def test_a_fractional_elicitation_answer_is_a_valid_elicit_result(registry: SchemaRegistry, version: str) -> None:
    """schema.ts (ElicitResult.content: `string | number | boolean | string[]`), the conformance
    scenario elicitation-sep1034-client-defaults: {"score": 95.5} is valid; a null or an object is
    not, as schema.ts says; the oracle agrees."""
    validator = registry.protocol(version).definition_validator("ElicitResult")
    assert violations(validator, SCORE) == []
    for wrong in (None, {"nested": 1}):
        [violation] = violations(validator, {"action": "accept", "content": {"score": wrong}})
        assert violation["path"] == "/content/score"
    assert SpecSchema(version).valid("ElicitResult", SCORE)


def _checked(direction: Any, frame: dict[str, Any], registry: SchemaRegistry, session: Session) -> Any:
    """The chain's verdict on ``frame``: the fast path's and the stages', which must agree."""
    chain = build_chain(registry, direction)
    raw = jsonio.dumps(frame)
    assert chain.fast is not None
    fast = chain.fast(Frame(raw=raw, transport="test", session=session, direction=direction))
    try:
        slow: Any = chain.inspect(Frame(raw=raw, transport="test", session=session, direction=direction))
    except Rejection as rejection:
        slow = rejection
    assert fast is None or fast == slow
    return slow


def test_the_clients_fractional_elicitation_reply_passes_the_chain_at_2025_11_25(registry: SchemaRegistry) -> None:
    """ADR 41, the conformance scenario elicitation-sep1034-client-defaults: the client's reply to the
    server's `elicitation/create` carrying {"score": 95.5} passes the client→server chain (it was
    refused invalid_params, answered -32603 to the server)."""
    session = Session()
    session.negotiate("2025-11-25")
    session.initialized = True
    session.expect(SERVER_TO_CLIENT, 7, "elicitation/create")
    verdict = _checked(CLIENT_TO_SERVER, {"jsonrpc": "2.0", "id": 7, "result": SCORE}, registry, session)
    assert isinstance(verdict, Message) and verdict.id == 7


def test_a_fractional_input_response_and_null_capability_values_pass_the_chain_at_2026_07_28(
    registry: SchemaRegistry,
) -> None:
    """ADR 41 (both errata of 2026-07-28): a retried `tools/call` whose `inputResponses` carries the
    elicitation answer {"score": 95.5}, from a client whose capabilities' `experimental` entry holds a
    null and a fraction (JSONValue: `string | number | boolean | null | …` in schema.ts)."""
    params = meta_2026(name="ask", arguments={}, inputResponses={"form": SCORE}, requestState="s")
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = {"experimental": {"x": {"a": None, "b": 0.5}}}
    frame = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}
    verdict = _checked(CLIENT_TO_SERVER, frame, registry, Session())
    assert isinstance(verdict, Message) and verdict.method == "tools/call"
    assert SpecSchema("2026-07-28").verdict(Case("2026-07-28", C2S, frame))


def test_an_erratum_whose_place_no_longer_holds_what_it_replaces_stops_the_registry(tmp_path: Path) -> None:
    """ADR 41: a schema.json copied again (fixed upstream, or moved) is not corrected blindly: the
    registry refuses to load, naming the erratum and its schema.ts line."""
    copy = tmp_path / "mcp"
    shutil.copytree(MCP, copy)
    document = json.loads((copy / ERRATA_FILE).read_text())
    document["errata"][0]["versions"]["2025-11-25"]["replaces"] = ["string"]
    (copy / ERRATA_FILE).write_text(json.dumps(document))
    with pytest.raises(SchemaError, match=r"elicit-result-content-number \(2025-11-25/schema\.ts:2485\)"):
        SchemaRegistry(mcp_dir=copy)


def test_a_schema_folder_without_an_errata_list_loads_the_published_json_as_it_is(tmp_path: Path) -> None:
    """ADR 41: the errata belong to the bundled copies; a folder of schemas without the list is read
    as published (the 2025-11-25 fractional answer refused there, as the generated JSON says)."""
    copy = tmp_path / "mcp"
    shutil.copytree(MCP, copy)
    (copy / ERRATA_FILE).unlink()
    validator = SchemaRegistry(mcp_dir=copy).protocol("2025-11-25").definition_validator("ElicitResult")
    assert [v["path"] for v in violations(validator, SCORE)] == ["/content/score"]


def test_an_errata_list_that_cannot_be_read_stops_the_registry_naming_the_file(tmp_path: Path) -> None:
    """ADR 41: a malformed list is a set-up failure (`SchemaError`), never a correction skipped."""
    copy = tmp_path / "mcp"
    shutil.copytree(MCP, copy)
    (copy / ERRATA_FILE).write_text(json.dumps({"errata": [{"name": "half-written"}]}))
    with pytest.raises(SchemaError, match=r"errata\.json: not an errata list"):
        SchemaRegistry(mcp_dir=copy)
