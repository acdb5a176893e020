"""The server's own tools (issue 3), over real files on disk and the bundled MCP corpus."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_server.core.session import Session
from mcp_server.core.settings import Settings, SetupError
from mcp_server.core.types import Handler
from mcp_server.registry.corpus import load_corpus
from mcp_server.registry.schemas import SchemaRegistry
from mcp_server.serve.app import build_server
from mcp_server.serve.tools import ToolSet
from mcp_server.serve.tools.catalog import builtin_tools

from ..conftest import exchange, initialize_frame, server_env

WAIT = 20.0


def write(root: Path, name: str, document: Any) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path]:
    """A schema root whose schemas $ref each other by absolute $id, relative file and #/$defs."""
    schemas, examples = tmp_path / "schemas", tmp_path / "examples"
    write(
        schemas,
        "colour.schema.json",
        {"$id": "https://schemas.example.test/colour.json", "type": "string", "pattern": "^#[0-9a-f]{6}$"},
    )
    write(
        schemas,
        "parts/shape.schema.json",
        {"type": "object", "required": ["kind"], "properties": {"kind": {"enum": ["circle", "square"]}}},
    )
    write(
        schemas,
        "synesthetic-asset.schema.json",
        {
            "version": "0.7.3",
            "$defs": {"name": {"type": "string", "minLength": 1}},
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"$ref": "#/$defs/name"},
                "colour": {"$ref": "https://schemas.example.test/colour.json"},
                "shape": {"$ref": "parts/shape.schema.json"},
                "a/b~c": {"type": "integer"},
            },
        },
    )
    write(schemas, "legacy.json", {"x-schema-version": "1", "type": "object"})
    write(examples, "synesthetic-asset_basic.json", {"name": "dawn", "colour": "#ff8800"})
    write(examples, "synesthetic-asset.broken.json", {"name": "", "colour": "red"})
    write(examples, "named.json", {"schema": "legacy", "anything": 1})
    return schemas, examples


def handler_for(env: dict[str, str]) -> Handler:
    registry = SchemaRegistry()
    return build_server(registry, ToolSet(builtin_tools(env, registry), registry), Settings.from_env(env))


def both_ways(handler: Handler, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call a tool through tools/call and as a direct method; assert equal objects; return it."""
    session = Session()
    _, via_mcp = exchange(
        handler,
        [
            initialize_frame("2025-11-25"),
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}},
        ],
        session,
    )
    [direct] = exchange(handler, [{"jsonrpc": "2.0", "id": 2, "method": tool, "params": arguments}])
    structured = via_mcp["result"]["structuredContent"]
    assert structured == direct["result"]
    assert json.loads(via_mcp["result"]["content"][0]["text"]) == structured
    assert via_mcp["result"]["isError"] is (structured.get("ok") is not True)
    return dict(direct["result"])


def test_list_schemas_names_versions_and_paths_sorted(roots: tuple[Path, Path]) -> None:
    """Issue 3: sorted by name, version, path; path relative and /-separated; version from the file."""
    schemas, examples = roots
    handler = handler_for({"SYN_SCHEMAS_DIR": str(schemas), "SYN_EXAMPLES_DIR": str(examples)})
    result = both_ways(handler, "list_schemas", {})
    assert result["schemas"] == [
        {"name": "colour", "version": "", "path": "colour.schema.json"},
        {"name": "legacy", "version": "1", "path": "legacy.json"},
        {"name": "shape", "version": "", "path": "parts/shape.schema.json"},
        {"name": "synesthetic-asset", "version": "0.7.3", "path": "synesthetic-asset.schema.json"},
    ]


def test_validate_asset_follows_every_kind_of_ref_and_escapes_pointers(roots: tuple[Path, Path]) -> None:
    """Issue 3: $ref by absolute $id, relative file and #/$defs; RFC 6901 paths, sorted."""
    schemas, examples = roots
    handler = handler_for({"SYN_SCHEMAS_DIR": str(schemas), "SYN_EXAMPLES_DIR": str(examples)})
    good = both_ways(
        handler,
        "validate_asset",
        {"schema": "synesthetic-asset", "asset": {"name": "a", "colour": "#00aa11", "shape": {"kind": "circle"}}},
    )
    assert good == {"ok": True, "errors": []}
    bad = both_ways(
        handler,
        "validate_asset",
        {
            "schema": "synesthetic-asset",
            "asset": {
                "name": "",
                "colour": "blue",
                "shape": {"kind": "hexagon"},
                "a/b~c": "x",
                "$schemaRef": "nowhere.json",
            },
        },
    )
    assert bad["reason"] == "validation_failed"
    assert [e["path"] for e in bad["errors"]] == ["/a~1b~0c", "/colour", "/name", "/shape/kind"]
    assert all(set(e) == {"path", "msg"} for e in bad["errors"])


def test_validate_asset_without_a_schema_fails_at_once(roots: tuple[Path, Path]) -> None:
    """Issue 3: a missing or empty schema → the one fixed error."""
    handler = handler_for({"SYN_SCHEMAS_DIR": str(roots[0])})
    expected = {
        "ok": False,
        "reason": "validation_failed",
        "errors": [{"path": "/schema", "msg": "schema param is required"}],
    }
    assert both_ways(handler, "validate_asset", {"asset": {}}) == expected
    assert both_ways(handler, "validate_asset", {"asset": {}, "schema": ""}) == expected


def test_the_validate_alias_answers_identically_and_warns(roots: tuple[Path, Path]) -> None:
    """Issue 3: `validate` is an alias of validate_asset, with a deprecation line on stderr."""
    schemas = roots[0]
    frames = [
        {"jsonrpc": "2.0", "id": i, "method": m, "params": {"schema": "nested-synesthetic-asset", "asset": {"name": 1}}}
        for i, m in ((1, "validate_asset"), (2, "validate"))
    ]
    process = subprocess.run(
        [sys.executable, "-m", "mcp_server", "serve"],
        capture_output=True,
        timeout=WAIT,
        input=b"".join(json.dumps(f).encode() + b"\n" for f in frames),
        env=server_env(schemas.parent, SYN_SCHEMAS_DIR=str(schemas)),
    )
    first, second = (json.loads(line) for line in process.stdout.splitlines())
    assert first["result"] == second["result"]
    assert first["result"]["errors"] == [{"path": "/name", "msg": '1 is not of type "string"'}]
    assert process.stderr.decode().count("mcp:warning reason=deprecated_alias method=validate") == 1


def test_get_schema_and_examples_with_inference_and_validation(roots: tuple[Path, Path]) -> None:
    """Issue 3: get_schema, list_examples, get_example (schema field, file-name convention)."""
    schemas, examples = roots
    handler = handler_for({"SYN_SCHEMAS_DIR": str(schemas), "SYN_EXAMPLES_DIR": str(examples)})
    got = both_ways(handler, "get_schema", {"name": "synesthetic-asset"})
    assert got["version"] == "0.7.3" and got["schema"]["required"] == ["name"]
    assert both_ways(handler, "get_schema", {"name": "nope"}) == {"ok": False, "reason": "not_found"}
    listed = both_ways(handler, "list_examples", {"component": "all"})
    assert listed["examples"] == [
        {"component": "named", "path": "named.json"},
        {"component": "synesthetic-asset", "path": "synesthetic-asset.broken.json"},
        {"component": "synesthetic-asset", "path": "synesthetic-asset_basic.json"},
    ]
    assert both_ways(handler, "list_examples", {"component": "named"})["examples"] == [listed["examples"][0]]
    basic = both_ways(handler, "get_example", {"path": "synesthetic-asset_basic.json"})
    assert basic["schema"] == "synesthetic-asset" and basic["validated"] is True
    assert both_ways(handler, "get_example", {"path": "named.json"})["schema"] == "legacy"
    broken = both_ways(handler, "get_example", {"path": "synesthetic-asset.broken.json"})
    assert broken["reason"] == "validation_failed" and [e["path"] for e in broken["errors"]] == ["/colour", "/name"]
    assert both_ways(handler, "get_example", {"path": "missing.json"}) == {"ok": False, "reason": "not_found"}


def test_get_example_ignores_the_schema_ref_it_names_its_schema_by(tmp_path: Path) -> None:
    """Issue 18: an example that names its schema by ``$schemaRef`` validates without that key, as
    validate_asset and the CLI validate it (a closed schema must not refuse the reference itself)."""
    schemas, examples = tmp_path / "schemas", tmp_path / "examples"
    write(
        schemas,
        "closed.schema.json",
        {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string"}},
            "additionalProperties": False,
        },
    )
    write(examples, "one.json", {"$schemaRef": "closed.schema.json", "name": "a"})
    write(examples, "two.json", {"$schemaRef": "closed.schema.json", "name": "b", "extra": 1})
    handler = handler_for({"SYN_SCHEMAS_DIR": str(schemas), "SYN_EXAMPLES_DIR": str(examples)})
    one = both_ways(handler, "get_example", {"path": "one.json"})
    assert one["ok"] is True and one["schema"] == "closed" and one["validated"] is True
    assert one["example"] == {"$schemaRef": "closed.schema.json", "name": "a"}  # returned as stored
    two = both_ways(handler, "get_example", {"path": "two.json"})
    assert two["reason"] == "validation_failed" and [e["path"] for e in two["errors"]] == [""]
    assert "extra" in two["errors"][0]["msg"] and "$schemaRef" not in two["errors"][0]["msg"]


@pytest.mark.parametrize("path", ["../secret.json", "/etc/passwd", "a/../../b.json", "link/outside.json"])
def test_paths_that_leave_the_root_are_refused(roots: tuple[Path, Path], path: str) -> None:
    """Issue 3: .., absolute paths and symlinks out of the root → invalid_path."""
    schemas, examples = roots
    outside = examples.parent / "outside"
    outside.mkdir()
    write(outside, "outside.json", {"secret": True})
    (examples / "link").symlink_to(outside)
    handler = handler_for({"SYN_SCHEMAS_DIR": str(schemas), "SYN_EXAMPLES_DIR": str(examples)})
    assert both_ways(handler, "get_example", {"path": path}) == {
        "ok": False,
        "reason": "validation_failed",
        "errors": [{"path": "/path", "msg": "invalid_path"}],
    }
    assert both_ways(handler, "get_schema", {"name": "../colour"})["errors"] == [
        {"path": "/name", "msg": "invalid_path"}
    ]


def test_validate_many_reports_per_item_and_refuses_a_batch_over_the_limit(roots: tuple[Path, Path]) -> None:
    """Issue 3: per-item results; more than MCP_MAX_BATCH items → unsupported with the limit."""
    schemas = roots[0]
    handler = handler_for({"SYN_SCHEMAS_DIR": str(schemas), "MCP_MAX_BATCH": "3"})
    result = both_ways(handler, "validate_many", {"schema": "colour", "assets": ["#000000", "black"]})
    assert result == {
        "ok": True,
        "results": [
            {"ok": True},
            {"ok": False, "errors": [{"path": "", "msg": '"black" does not match "^#[0-9a-f]{6}$"'}]},
        ],
    }
    assert both_ways(handler, "validate_many", {"schema": "colour", "assets": ["#000000"] * 4}) == {
        "ok": False,
        "reason": "unsupported",
        "detail": "batch_too_large",
        "limit": 3,
    }


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(alphabet="ab~/", max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet="ab~/", max_size=3), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=json_values, new=json_values)
def test_diff_assets_patch_always_turns_base_into_new(handler: Handler, base: Any, new: Any) -> None:
    """Issue 3: RFC 6902, only add/remove/replace, sorted; applying it to base gives new (jsonpatch)."""
    [reply] = exchange(
        handler, [{"jsonrpc": "2.0", "id": 1, "method": "diff_assets", "params": {"base": base, "new": new}}]
    )
    patch = reply["result"]["patch"]
    assert jsonpatch.apply_patch(base, patch) == new
    assert all(op["op"] in ("add", "remove", "replace") for op in patch)
    order = {"remove": 0, "add": 1, "replace": 2}
    assert patch == sorted(patch, key=lambda op: (op["path"], order[op["op"]]))


def test_diff_assets_replaces_a_changed_array_whole_and_the_root_with_an_empty_path(handler: Handler) -> None:
    """Issue 3: arrays that differ → one replace; a whole-document change has path ""."""
    [reply] = exchange(
        handler,
        [
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "diff_assets",
                "params": {"base": {"a": [1, 2], "b": 1}, "new": {"a": [1], "c": 2}},
            }
        ],
    )
    assert reply["result"]["patch"] == [
        {"op": "replace", "path": "/a", "value": [1]},
        {"op": "remove", "path": "/b"},
        {"op": "add", "path": "/c", "value": 2},
    ]
    [whole] = exchange(
        handler, [{"jsonrpc": "2.0", "id": 2, "method": "diff_assets", "params": {"base": [1], "new": {}}}]
    )
    assert whole["result"]["patch"] == [{"op": "replace", "path": "", "value": {}}]


def test_every_spec_example_of_the_bundled_corpus_comes_back_validated(handler: Handler) -> None:
    """Issue 3: on a fresh machine, every spec example validates against its type."""
    [listed] = exchange(handler, [{"jsonrpc": "2.0", "id": 1, "method": "list_examples", "params": {}}])
    examples = listed["result"]["examples"]
    assert len(examples) >= 88
    replies = exchange(
        handler,
        [
            {"jsonrpc": "2.0", "id": i, "method": "get_example", "params": {"path": e["path"]}}
            for i, e in enumerate(examples)
        ],
    )
    assert [r["result"].get("validated") for r in replies] == [True] * len(examples)
    assert {r["result"]["schema"].split("@")[1] for r in replies} == {"2026-07-28"}


def test_the_bundled_corpus_names_types_with_and_without_a_version(handler: Handler) -> None:
    """Issue 3: `<Type>@<version>`, and plain `<Type>` for the newest version that has it."""
    [listed] = exchange(handler, [{"jsonrpc": "2.0", "id": 1, "method": "list_schemas", "params": {}}])
    names = {s["name"]: s for s in listed["result"]["schemas"]}
    assert names["CallToolRequest@2024-11-05"]["version"] == "2024-11-05"
    assert names["InitializeRequest"]["version"] == "2025-11-25"  # gone from 2026-07-28
    assert names["DiscoverRequest"]["version"] == "2026-07-28"
    schemas = listed["result"]["schemas"]
    assert schemas == sorted(schemas, key=lambda s: (s["name"], s["version"], s["path"]))


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"SYN_SCHEMAS_DIR": "/no/such/dir"}, "SYN_SCHEMAS_DIR"),
        ({"SYN_EXAMPLES_DIR": "/no/such/dir"}, "SYN_EXAMPLES_DIR"),
        ({"MCP_SCHEMA_ALIASES": "broken"}, "MCP_SCHEMA_ALIASES"),
        ({"SYN_BACKEND_TIMEOUT": "soon"}, "SYN_BACKEND_TIMEOUT"),
        ({"SYN_BACKEND_URL": "ftp://x"}, "SYN_BACKEND_URL"),
    ],
)
def test_bad_environment_values_are_setup_errors(env: dict[str, str], fragment: str, tmp_path: Path) -> None:
    """Issue 3: a set variable naming a missing directory (or a malformed value) → exit 2."""
    with pytest.raises(SetupError, match=fragment):
        registry = SchemaRegistry()
        builtin_tools(env, registry, load_corpus(env, registry))
    process = subprocess.run(
        [sys.executable, "-m", "mcp_server", "serve"],
        capture_output=True,
        timeout=WAIT,
        input=b"",
        env=server_env(tmp_path, **env),
    )
    assert process.returncode == 2
    [line] = [line for line in process.stderr.decode().splitlines() if line.startswith("mcp:error")]
    assert line.startswith("mcp:error reason=setup_failed detail=") and fragment in line


class Backend(BaseHTTPRequestHandler):
    status = 201
    delay = threading.Event()
    received: list[bytes] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).received.append(body)
        if self.path.startswith("/slow"):
            type(self).delay.wait(WAIT)
        payload = b'{"id":"created-7"}' if type(self).status < 300 else b'{"error":"boom"}'
        self.send_response(type(self).status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def backend() -> Iterator[str]:
    Backend.status, Backend.received = 201, []
    Backend.delay.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Backend)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    Backend.delay.set()
    server.shutdown()
    server.server_close()


def populate(env: dict[str, str], arguments: dict[str, Any]) -> dict[str, Any]:
    return both_ways(handler_for(env), "populate_backend", arguments)


def test_populate_backend_is_disabled_without_a_url(handler: Handler) -> None:
    """Issue 3: enabled only when SYN_BACKEND_URL is set."""
    [reply] = exchange(handler, [{"jsonrpc": "2.0", "id": 1, "method": "populate_backend", "params": {"asset": {}}}])
    assert reply["result"] == {"ok": False, "reason": "unsupported", "detail": "backend disabled"}


def test_populate_backend_posts_a_valid_asset_and_returns_the_id(backend: str) -> None:
    """Issue 3: 2xx → ok with the asset id and the backend URL; the asset is POSTed as JSON."""
    asset = {"schema": "TextContent", "type": "text", "text": "hi"}
    result = populate({"SYN_BACKEND_URL": backend}, {"asset": asset})
    assert result == {"ok": True, "asset_id": "created-7", "backend_url": backend + "/synesthetic-assets/"}
    assert [json.loads(body) for body in Backend.received] == [asset, asset]


def test_populate_backend_validates_first_and_posts_nothing_invalid(backend: str) -> None:
    """Issue 3: validates first (schema inferred like get_example) unless told not to."""
    result = populate({"SYN_BACKEND_URL": backend}, {"asset": {"schema": "TextContent", "type": "text"}})
    assert result["reason"] == "validation_failed" and Backend.received == []


def test_populate_backend_reports_a_backend_error_status(backend: str) -> None:
    """Issue 3: another status → backend_error with the status."""
    Backend.status = 500
    result = populate({"SYN_BACKEND_URL": backend}, {"asset": {"id": "x"}, "validate_first": False})
    assert result["reason"] == "backend_error" and result["status"] == 500


def test_populate_backend_unreachable_or_slow_is_503_network_unreachable(backend: str) -> None:
    """Issue 3: a closed port, or a backend past the timeout → 503 network_unreachable."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    expected = {"ok": False, "reason": "backend_error", "status": 503, "detail": "network_unreachable"}
    assert populate({"SYN_BACKEND_URL": closed}, {"asset": {}, "validate_first": False}) == expected
    slow = {"SYN_BACKEND_URL": backend, "SYN_BACKEND_ASSETS_PATH": "/slow/", "SYN_BACKEND_TIMEOUT": "0.3"}
    assert populate(slow, {"asset": {}, "validate_first": False}) == expected


@pytest.mark.parametrize(
    ("content", "args", "status", "reason"),
    [
        (b'{"type":"text","text":"hi"}', ["--schema", "TextContent"], 0, None),
        (b'{"type":"text"}', ["--schema", "TextContent"], 1, "validation_failed"),
        (b"{nope", [], 2, "parse_error"),
        (None, [], 2, "io_error"),
    ],
)
def test_the_validate_command_prints_one_line_and_exits_by_verdict(
    tmp_path: Path, content: bytes | None, args: list[str], status: int, reason: str | None
) -> None:
    """Issue 3: one JSON line; exit 0 valid, 1 invalid, 2 I/O or parse error."""
    path = tmp_path / "asset.json"
    if content is not None:
        path.write_bytes(content)
    for command in (["validate", str(path), *args], ["--validate", str(path), *args]):
        if command[0] == "--validate" and args:
            continue
        result = subprocess.run(
            [sys.executable, "-m", "mcp_server", *command], capture_output=True, timeout=WAIT, env=server_env(tmp_path)
        )
        [line] = result.stdout.decode().splitlines()
        output = json.loads(line)
        assert result.returncode == status
        assert output["ok"] is (status == 0)
        assert output.get("reason") == reason
        assert b"Traceback" not in result.stderr


def test_libs_synesthetic_schemas_under_the_working_directory_is_the_second_source(
    roots: tuple[Path, Path], tmp_path: Path
) -> None:
    """Issue 3: without SYN_* variables, libs/synesthetic-schemas/{jsonschema,examples} when present."""
    schemas, examples = roots
    base = tmp_path / "work" / "libs" / "synesthetic-schemas"
    base.mkdir(parents=True)
    (base / "jsonschema").symlink_to(schemas, target_is_directory=True)
    (base / "examples").symlink_to(examples, target_is_directory=True)
    corpus = load_corpus({}, SchemaRegistry(), cwd=tmp_path / "work")
    assert [entry.name for entry in corpus.entries] == ["colour", "legacy", "shape", "synesthetic-asset"]
    assert len(corpus.examples) == 3
    assert load_corpus({}, SchemaRegistry(), cwd=tmp_path / "elsewhere").schemas_dir.endswith("mcp")
