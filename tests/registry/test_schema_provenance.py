"""Issue 24: which official schema bytes the verdicts come from, and the published schemas' known errata."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

from mcp_server.observe.events import read_events
from mcp_server.observe.report import ConformanceReport
from mcp_server.offline.library import validate_definition
from mcp_server.registry.schemas import BUNDLED_SCHEMAS, PROVENANCE_FILE, SchemaRegistry, schema_provenance

from ..conftest import initialize_frame, server_command, server_env
from ..servers import replay_stdio

MCP = BUNDLED_SCHEMAS / "mcp"
MANIFEST = json.loads((MCP / PROVENANCE_FILE).read_text())


def test_every_bundled_schema_file_matches_the_sha256_recorded_with_its_source_commit() -> None:
    """Issue 24, provenance: the official schemas are rewritten after release; each bundled file is
    the one recorded (repository, commit, sha256), and every bundled file is recorded: each version's
    schema.json and the schema.ts it was generated from (ADR 41: the errata cite its lines)."""
    bundled = {
        path.relative_to(MCP).as_posix() for name in ("schema.json", "schema.ts") for path in MCP.glob(f"*/{name}")
    }
    assert bundled == set(MANIFEST["files"]) and len(bundled) == 10
    for name, entry in MANIFEST["files"].items():
        assert hashlib.sha256((MCP / name).read_bytes()).hexdigest() == entry["sha256"], name
        assert len(entry["commit"]) == 40 and entry["source_path"] == f"schema/{name}"
    readme = (MCP / "README.md").read_text()
    assert all(entry["commit"] in readme for entry in MANIFEST["files"].values())


def test_a_schema_file_whose_bytes_were_not_recorded_claims_no_commit(tmp_path: Path) -> None:
    """Issue 24, provenance: a commit is claimed only for the bytes recorded for it."""
    copy = tmp_path / "mcp"
    shutil.copytree(MCP, copy)
    edited = copy / "2025-06-18" / "schema.json"
    edited.write_bytes(edited.read_bytes() + b"\n")
    found = {entry["version"]: entry for entry in schema_provenance(copy)}
    assert found["2025-06-18"]["commit"] is None and found["2025-06-18"]["repository"] is None
    assert found["2025-06-18"]["sha256"] == hashlib.sha256(edited.read_bytes()).hexdigest()
    assert found["2025-11-25"]["commit"] == MANIFEST["files"]["2025-11-25/schema.json"]["commit"]


def test_version_names_every_bundled_schema_with_its_commit_and_sha256_and_each_erratum(tmp_path: Path) -> None:
    """Issue 24, provenance: `mcp-server --version` prints each schema's source commit and sha256,
    then (ADR 41) each erratum applied to it with its schema.ts line: the verdicts come from both."""
    command = [*server_command()[:3], "--version"]
    run = subprocess.run(command, capture_output=True, timeout=30, env=server_env(tmp_path))
    assert run.returncode == 0
    lines = run.stdout.decode().splitlines()[1:]
    expected = [
        f"schema {name.split('/')[0]} {MANIFEST['repository']}@{entry['commit']} sha256={entry['sha256']}"
        for name, entry in sorted(MANIFEST["files"].items())
        if name.endswith("/schema.json")
    ]
    errata = json.loads((MCP / "errata.json").read_text())["errata"]
    expected += [
        f"erratum {version} {erratum['name']} schema.ts:{place['source']['line']}"
        for erratum in errata
        for version, place in erratum["versions"].items()
    ]
    assert lines == expected and any(line.startswith("erratum 2025-11-25 ") for line in lines)


def test_the_log_header_and_the_conformance_report_carry_the_schemas_provenance(
    tmp_path: Path, registry: SchemaRegistry
) -> None:
    """Issue 24, provenance: the event log's ``start`` event and the gateway's report name the schemas."""
    runs = tmp_path / "runs"
    replay_stdio(tmp_path, [json.dumps(initialize_frame("2025-11-25")).encode()], MCP_RUNS_DIR=str(runs))
    [log] = list(runs.rglob("*.jsonl"))
    start = next(event for event in read_events(log) if event["event"] == "start")
    assert start["detail"]["schemas"] == registry.provenance
    assert {entry["commit"] for entry in registry.provenance} == {
        entry["commit"] for entry in MANIFEST["files"].values()
    }
    report = ConformanceReport(upstream="upstream", mode="enforce").to_document()
    assert report["schemas"] == registry.provenance


def test_the_number_schema_defect_the_conformance_suite_patches_is_absent_from_the_bundled_schemas(
    registry: SchemaRegistry,
) -> None:
    """Issue 24, errata (ADR 0014): the official conformance suite's wire-schema validator retypes
    NumberSchema's ``minimum``/``maximum``/``default`` from integer to number in 2025-06-18 and
    2025-11-25 as published; the bundled files carry that correction already, so a number schema
    with fractional bounds (an elicitation form field) is valid in every version that has one."""
    field = {"type": "number", "minimum": 0.5, "maximum": 9.5, "default": 1.25}
    versions = [v for v in registry.versions if "NumberSchema" in registry.protocol(v).definitions]
    assert versions == ["2025-06-18", "2025-11-25", "2026-07-28"]
    for version in versions:
        assert validate_definition("NumberSchema", field, version=version, registry=registry), version
