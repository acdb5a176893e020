"""The protocol validator as a library (mcp_server.validation): rules per version, spec examples, properties."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

import mcp_server.offline.library as validation
from mcp_server.chain.compose import build_chain
from mcp_server.core import jsonio
from mcp_server.core.errors import CanonicalError, Rejection
from mcp_server.core.session import Session
from mcp_server.core.types import Direction, Frame
from mcp_server.offline.library import (
    ValidationResult,
    default_registry,
    format_validation_error,
    validate_definition,
    validate_error_code,
    validate_field_type,
    validate_jsonrpc,
    validate_message,
    validate_method_name,
    validate_notification,
    validate_notification_name,
    validate_request,
    validate_required_fields,
    validate_response,
)
from mcp_server.registry.schemas import SchemaRegistry

from ..conftest import ROOT, initialize_frame
from ..frames import (
    STATELESS,
    VERSIONS,
    definitions_of,
    frames_for,
    methods_in,
    mutated_frame,
    params,
    schema_of,
    sound_frames,
)
from ..generate import from_schema

EXAMPLES = ROOT / "schemas" / "mcp" / STATELESS / "examples"


def paths(result: ValidationResult) -> list[str]:
    return [entry["path"] for entry in result.details.get("errors", [])]


# --- The result value ---------------------------------------------------------------------------


def test_a_result_is_truthy_exactly_when_ok_and_is_frozen() -> None:
    """Issue: a frozen ValidationResult(ok, reason, details) whose truthiness is ok."""
    good, bad = validate_method_name("tools/list"), validate_method_name("bad")
    assert bool(good) is True and good.ok and good.reason is None
    assert bool(bad) is False and not bad.ok and bad.reason == "invalid_method"
    with pytest.raises(AttributeError):
        bad.ok = True  # type: ignore[misc]


def test_the_default_registry_is_built_once_and_a_given_one_is_used() -> None:
    """Issue: the registry is created lazily, cached at module level, and may be passed in."""
    assert default_registry() is default_registry()
    registry = SchemaRegistry()
    assert validate_method_name("tools/list", registry=registry)
    assert registry is not default_registry()


def test_the_default_version_is_the_newest_bundled() -> None:
    """Issue: version defaults to registry.latest (2026-07-28 has no initialize)."""
    assert default_registry().latest == STATELESS
    assert not validate_method_name("initialize")
    assert validate_method_name("initialize", version="2025-11-25")


def test_an_unknown_version_is_a_result_not_an_exception() -> None:
    """Issue: never raises on bad input; an unknown version is reported as a reason."""
    for result in (
        validate_request("tools/list", {}, version="1999-01-01"),
        validate_notification("notifications/cancelled", {}, version="1999-01-01"),
        validate_response(1, {}, method="ping", version="1999-01-01"),
        validate_method_name("ping", version="latest"),
        validate_notification_name("x", version="latest"),
        validate_error_code(-32600, version="nope"),
        validate_jsonrpc({"jsonrpc": "2.0", "method": "x"}, version="nope"),
        validate_definition("Tool", {}, version="nope"),
        validate_message({}, version="nope"),
    ):
        assert result.reason == "unknown_version"
        assert result.details["supported"] == VERSIONS


def test_the_public_names_are_all_listed() -> None:
    """STYLE (httpx): `__all__` checked by a test."""
    assert sorted(validation.__all__) == validation.__all__
    for name in validation.__all__:
        assert hasattr(validation, name), name


# --- The negative corpus: one failing and one passing message per rule, per version -------------


def corpus(version: str) -> list[tuple[str, Any, str | None, list[str]]]:
    """(check, call, expected reason or None for a pass, expected error paths)."""
    tool_result = {"content": [], **({"resultType": "complete"} if version == STATELESS else {})}
    result_path = "/result" if version == STATELESS else "/result/content"
    newest_method = sorted(methods_in(version, "ClientRequest"))[0]
    return [
        # JSON-RPC 2.0 §4: jsonrpc MUST be exactly "2.0".
        (
            "jsonrpc",
            lambda: validate_jsonrpc({"jsonrpc": "1.0", "id": 1, "method": "ping"}, version=version),
            "invalid_jsonrpc_version",
            ["/jsonrpc"],
        ),
        ("jsonrpc", lambda: validate_jsonrpc({"jsonrpc": "2.0", "id": 1, "method": "ping"}, version=version), None, []),
        # MCP basic: a request id is a string or an integer (not null, not a float, not a bool).
        (
            "request id",
            lambda: validate_jsonrpc({"jsonrpc": "2.0", "id": 1.5, "method": "x"}, version=version),
            "invalid_request_id",
            ["/id"],
        ),
        (
            "request id",
            lambda: validate_jsonrpc({"jsonrpc": "2.0", "id": None, "method": "x"}, version=version),
            "invalid_request_id",
            ["/id"],
        ),
        (
            "request id",
            lambda: validate_jsonrpc({"jsonrpc": "2.0", "id": True, "method": "x"}, version=version),
            "invalid_request_id",
            ["/id"],
        ),
        (
            "request id",
            lambda: validate_jsonrpc({"jsonrpc": "2.0", "id": "a-1", "method": "x"}, version=version),
            None,
            [],
        ),
        # JSON-RPC 2.0 §5: a response has exactly one of result and error.
        (
            "response",
            lambda: validate_jsonrpc(
                {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "m"}}, version=version
            ),
            "result_and_error",
            [""],
        ),
        ("response", lambda: validate_jsonrpc({"jsonrpc": "2.0", "id": 1, "result": {}}, version=version), None, []),
        (
            "response",
            lambda: validate_jsonrpc({"jsonrpc": "2.0", "id": 1}, version=version),
            "unknown_message_kind",
            ["/method"],
        ),
        (
            "object",
            lambda: validate_jsonrpc([{"jsonrpc": "2.0", "method": "x"}], version=version),
            "batch_not_supported",
            [""],
        ),
        ("object", lambda: validate_jsonrpc(b"{not json", version=version), "parse_error", [""]),
        ("object", lambda: validate_jsonrpc(b'{"jsonrpc":"2.0","method":"x"}', version=version), None, []),
        # The schema of the version: unknown methods, and every violation of params listed.
        ("request", lambda: validate_request("no/such", {}, version=version), "unknown_method", ["/method"]),
        (
            "request",
            lambda: validate_request("tools/call", params(version, name=7, arguments=[]), version=version),
            "invalid_params",
            ["/params/arguments", "/params/name"],
        ),
        (
            "request",
            lambda: validate_request("tools/call", params(version, name="add", arguments={"a": 1}), version=version),
            None,
            [],
        ),
        (
            "notification",
            lambda: validate_notification("notifications/nope", version=version),
            "unknown_notification",
            ["/method"],
        ),
        (
            "notification",
            lambda: validate_notification("notifications/cancelled", {"requestId": [1]}, version=version),
            "invalid_params",
            ["/params/requestId"],
        ),
        (
            "notification",
            lambda: validate_notification("notifications/cancelled", {"requestId": 1}, version=version),
            None,
            [],
        ),
        (
            "response",
            lambda: validate_response(1, {"content": 5}, method="tools/call", version=version),
            "invalid_params",
            [result_path],
        ),
        ("response", lambda: validate_response(1, tool_result, method="tools/call", version=version), None, []),
        (
            "response",
            lambda: validate_response(1, {}, method="no/such", version=version),
            "unknown_method",
            ["/method"],
        ),
        (
            "response",
            lambda: validate_response(1.5, {}, method="tools/list", version=version),
            "invalid_request_id",
            ["/id"],
        ),
        (
            "response",
            lambda: validate_response(1, {"code": 1, "message": "m"}, method="tools/call", version=version),
            "invalid_error_code",
            ["/error/code"],
        ),
        (
            "response",
            lambda: validate_response(
                1,
                {"code": CanonicalError.INVALID_PARAMS.jsonrpc_code, "message": "m"},
                method="tools/call",
                version=version,
            ),
            None,
            [],
        ),
        # Method and notification names: the lists of the version's own schema.
        ("method name", lambda: validate_method_name("bad", version=version), "invalid_method", []),
        ("method name", lambda: validate_method_name(newest_method, version=version), None, []),
        ("method name", lambda: validate_method_name("notifications/cancelled", version=version), "invalid_method", []),
        (
            "notification name",
            lambda: validate_notification_name("tools/list", version=version),
            "invalid_notification",
            [],
        ),
        ("notification name", lambda: validate_notification_name("notifications/cancelled", version=version), None, []),
        # Error codes: JSON-RPC's, the server range, and the spec's own.
        ("error code", lambda: validate_error_code(-32100, version=version), "invalid_error_code", ["/error/code"]),
        ("error code", lambda: validate_error_code(CanonicalError.PARSE_ERROR.jsonrpc_code, version=version), None, []),
        ("error code", lambda: validate_error_code(7, version=version), "invalid_error_code", ["/error/code"]),
        ("error code", lambda: validate_error_code(7, version=version, allow=[(1, 10)]), None, []),
        # Field types and required fields.
        (
            "field type",
            lambda: validate_field_type("limit", "many", "integer", version=version),
            "type_mismatch",
            ["/limit"],
        ),
        ("field type", lambda: validate_field_type("limit", 3, ["integer", "null"], version=version), None, []),
        (
            "required",
            lambda: validate_required_fields({"a": 1}, ["a", "b"], version=version),
            "missing_required_fields",
            ["/b"],
        ),
        ("required", lambda: validate_required_fields({"a": 1, "b": None}, ["a", "b"], version=version), None, []),
    ]


CASES = [(version, index) for version in VERSIONS for index in range(len(corpus(version)))]


@pytest.mark.parametrize(("version", "index"), CASES, ids=[f"{v}-{i}-{corpus(v)[i][0]}" for v, i in CASES])
def test_every_rule_fails_its_bad_message_and_passes_its_good_one(version: str, index: int) -> None:
    """Issue: a negative corpus, for every rule a failing and a passing message, for each version."""
    _, call, reason, expected_paths = corpus(version)[index]
    result = call()
    assert result.reason == reason, format_validation_error(result)
    assert result.ok is (reason is None)
    assert sorted(set(paths(result))) == sorted(expected_paths)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_rule_of_the_corpus_has_a_failing_and_a_passing_case(version: str) -> None:
    """Issue: for every rule at least one message that must fail and one that must pass."""
    passing = {check for check, _, reason, _ in corpus(version) if reason is None}
    failing = {check for check, _, reason, _ in corpus(version) if reason is not None}
    assert passing == failing


@pytest.mark.parametrize("version", VERSIONS)
def test_method_names_are_exactly_those_of_the_versions_schema(version: str) -> None:
    """Issue: the method lists come from the bundled schema of that version, never a hand-written list."""
    requests = methods_in(version, "ClientRequest", "ServerRequest")
    notifications = methods_in(version, "ClientNotification", "ServerNotification")
    assert requests and notifications
    assert all(validate_method_name(name, version=version) for name in requests)
    assert all(validate_notification_name(name, version=version) for name in notifications)
    assert not any(validate_method_name(name, version=version) for name in notifications - requests)
    assert not any(validate_notification_name(name, version=version) for name in requests - notifications)
    for name in methods_in(version, "ClientRequest") - methods_in(version, "ServerRequest"):
        assert validate_method_name(name, version=version, direction=Direction.CLIENT_TO_SERVER)
        assert not validate_method_name(name, version=version, direction=Direction.SERVER_TO_CLIENT)


def test_a_method_exists_only_in_the_versions_that_define_it() -> None:
    """MCP changelogs: initialize is gone in 2026-07-28; tasks/get arrives in 2025-11-25."""
    assert [validate_method_name("initialize", version=v).ok for v in VERSIONS] == [True, True, True, True, False]
    assert [validate_method_name("tasks/get", version=v).ok for v in VERSIONS] == [False, False, False, True, False]
    assert [validate_request("initialize", initialize_frame(v)["params"], version=v).reason for v in VERSIONS] == [
        None,
        None,
        None,
        None,
        "unknown_method",
    ]


def test_a_server_method_is_checked_against_its_own_definition() -> None:
    """MCP client/sampling: sampling/createMessage is a server request; its params are its schema's."""
    result = validate_request("sampling/createMessage", {}, version="2025-11-25")
    assert result.reason == "invalid_params" and paths(result) == ["/params", "/params"]
    assert not validate_request(
        "sampling/createMessage", {}, version="2025-11-25", direction=Direction.CLIENT_TO_SERVER
    )
    assert (
        validate_request(
            "sampling/createMessage", {}, version="2025-11-25", direction=Direction.CLIENT_TO_SERVER
        ).reason
        == "unknown_method"
    )


@pytest.mark.parametrize(
    ("version", "accepted", "refused"),
    [
        # JSON-RPC 2.0 §5.1: -32099..-32000 is the implementation-defined server-error range.
        ("2024-11-05", [-32000, -32019, -32020, -32042, -32099], [-32100, -32768, -31999, 0, 1, -1]),
        ("2025-06-18", [-32000, -32042, -32099], [-32100, -32604, 404]),
        # 2025-11-25 schema: URLElicitationRequiredError is -32042.
        ("2025-11-25", [-32000, -32001, -32042, -32099], [-32100, -32604]),
        # 2026-07-28 reserves -32020..-32099 for the spec, which defines -32020, -32021, -32022.
        ("2026-07-28", [-32000, -32019, -32020, -32021, -32022], [-32023, -32042, -32099, -32100, -32604]),
    ],
)
def test_error_codes_follow_jsonrpc_and_the_versions_own_definitions(
    version: str, accepted: list[int], refused: list[int]
) -> None:
    """JSON-RPC 2.0 §5.1 and each version's schema.json error definitions."""
    standard = [-32700, -32600, -32601, -32602, -32603]
    for code in standard + accepted:
        assert validate_error_code(code, version=version), code
    for code in refused:
        result = validate_error_code(code, version=version)
        assert result.reason == "invalid_error_code", code
        assert result.details["code"] == code
    for bad in ("-32600", 1.5, True, None):
        assert validate_error_code(bad, version=version).reason == "invalid_error_code"


def test_the_codes_a_schema_defines_are_read_from_the_schema_file() -> None:
    """Issue: read each version's schema.json for defined error codes (e.g. -32042 in 2025-11-25)."""
    text = (ROOT / "schemas" / "mcp" / "2025-11-25" / "schema.json").read_text()
    assert '"const": -32042' in text
    assert validate_error_code(-32042, version="2025-11-25")
    assert not validate_error_code(-32042, version="2026-07-28")


def test_extra_error_code_ranges_can_be_allowed_in_either_order() -> None:
    """Issue: the caller may allow extra ranges (allow=[(lo, hi), ...])."""
    assert not validate_error_code(-1)
    assert validate_error_code(-1, allow=[(-5, -1)])
    assert validate_error_code(-1, allow=[(-1, -5)])
    assert validate_error_code(-32050, allow=[(-32059, -32050)])
    assert not validate_error_code(-32060, allow=[(-32059, -32050)])


def test_field_types_follow_json_schema_semantics() -> None:
    """JSON Schema 2020-12 §6.1.1: 1.0 is an integer, true is not a number, null is its own type."""
    assert validate_field_type("n", 1.0, "integer")
    assert not validate_field_type("n", True, "number")
    assert not validate_field_type("n", None, ["string", "integer"])
    assert validate_field_type("n", None, ["string", "null"])
    mismatch = validate_field_type("a/b", [], "object")
    assert mismatch.reason == "type_mismatch" and mismatch.details["actual"] == "array"
    assert paths(mismatch) == ["/a~1b"]  # RFC 6901 escaping
    with pytest.raises(ValueError):
        validate_field_type("n", 1, "int")


def test_required_fields_on_something_that_is_not_an_object() -> None:
    """Issue: never raises on bad input."""
    assert validate_required_fields([1], ["a"]).reason == "not_an_object"
    assert validate_required_fields({}, ["a", "b"]).details["missing"] == ["a", "b"]


def test_bad_input_of_any_shape_never_raises() -> None:
    """Issue: every function returns a result on bad input, never an exception."""
    odd: list[Any] = [
        None,
        5,
        "x",
        b"\xff\xfe",
        [],
        {"jsonrpc": {1, 2}},
        {"jsonrpc": "2.0", "id": 1, "method": object()},
    ]
    for value in odd:
        for result in (validate_jsonrpc(value), validate_message(value)):
            assert isinstance(result, ValidationResult) and not result.ok
    assert not validate_request("tools/call", {"name": {1}})
    assert validate_request("tools/call", {"name": {1}}).reason == "not_json"
    assert not validate_request(7, {})  # type: ignore[arg-type]
    assert not validate_notification(None, {})  # type: ignore[arg-type]
    assert not validate_response(1, "not an object", method="ping", version="2025-11-25")
    assert not validate_definition("NoSuchDefinition", {})


def test_format_gives_one_line_with_the_reason_first() -> None:
    """Issue: format_validation_error(error) → a one-line string such as `invalid_method: method=bad`."""
    assert format_validation_error(validate_method_name("bad")) == f"invalid_method: method=bad version={STATELESS}"
    line = format_validation_error(
        validate_request("tools/call", {"name": 7, "arguments": "x\ny"}, version="2025-11-25")
    )
    assert line.startswith("invalid_params: /params/arguments ") and "\n" not in line
    assert "/params/name" in line
    assert format_validation_error(validate_method_name("ping", version="2025-11-25")) == "ok"
    many = validate_required_fields({}, [f"f{i}" for i in range(8)])
    assert format_validation_error(many).endswith("(+3 more)")


# --- Every spec example of 2026-07-28, as is and mutated -----------------------------------------


def example_files() -> list[Path]:
    return sorted(EXAMPLES.glob("*/*.json"))


_WRONG = ["wrong", True, [1], {"x": 1}, 1.5]


def _json_type(value: Any) -> str:
    return {str: "string", bool: "boolean", list: "array", dict: "object", float: "number"}[type(value)]


def wrong_value(types: list[str]) -> Any:
    """A value of none of ``types`` (1.5 is a number but no integer)."""
    return next(value for value in _WRONG if _json_type(value) not in types)


def typed_property(definition: dict[str, Any], instance: dict[str, Any]) -> str | None:
    """A property present in ``instance`` whose schema declares a plain ``type`` (sorted, first)."""
    for key in sorted(instance):
        declared = definition.get("properties", {}).get(key, {})
        if "type" in declared and set(declared) <= {
            "type",
            "description",
            "items",
            "properties",
            "required",
            "additionalProperties",
            "minimum",
            "maximum",
            "format",
            "enum",
            "const",
            "minLength",
            "maxLength",
        }:
            return key
    return None


@pytest.mark.parametrize("path", example_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_spec_example_passes_and_its_mutations_fail_at_the_mutated_path(path: Path) -> None:
    """Issue: every spec example passes; with a required field removed, or a wrong type, it fails there."""
    name = path.parent.name
    instance = jsonio.loads(path.read_bytes())
    definition = definitions_of(STATELESS)[name]
    assert validate_definition(name, instance, version=STATELESS), path

    required = [key for key in definition.get("required", []) if key in instance]
    if required:
        removed = copy.deepcopy(instance)
        del removed[required[0]]
        result = validate_definition(name, removed, version=STATELESS)
        assert result.reason == "schema_violation"
        assert any(
            e["path"] == "" and e["keyword"] == "required" and repr(required[0]).strip("'") in e["msg"]
            for e in result.details["errors"]
        ), result

    key = typed_property(definition, instance)
    mutated = copy.deepcopy(instance)
    if key is None:
        mutated, expected = wrong_value(["object"]), ""
    else:
        declared = definition["properties"][key]["type"]
        mutated[key] = wrong_value(declared if isinstance(declared, list) else [declared])
        expected = "/" + key
    result = validate_definition(name, mutated, version=STATELESS)
    assert result.reason == "schema_violation"
    assert expected in paths(result), result


def message_examples() -> list[Path]:
    kinds = ("Request", "Notification", "ResultResponse", "Error")
    definitions = definitions_of(STATELESS)
    return [
        path
        for path in example_files()
        if path.parent.name.endswith(kinds) and "jsonrpc" in definitions[path.parent.name].get("required", [])
    ]


def request_method_for(result_response: str) -> str:
    definitions = definitions_of(STATELESS)
    stem = result_response.removesuffix("ResultResponse")
    candidates = [stem + "Request", stem.replace("Listen", "ListenRequest")]
    for name in candidates:
        if name in definitions:
            return str(definitions[name]["properties"]["method"]["const"])
    raise AssertionError(result_response)


@pytest.mark.parametrize("path", message_examples(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_spec_message_example_passes_as_a_message_and_fails_mutated(path: Path) -> None:
    """Issue: the spec's message examples, through the message functions (the chain's checks)."""
    name = path.parent.name
    message = jsonio.loads(path.read_bytes())
    if name.endswith("ResultResponse"):
        method = request_method_for(name)
        assert validate_response(message["id"], message["result"], method=method, version=STATELESS)
        result = dict(message["result"])
        del result["resultType"]  # required by every 2026-07-28 result
        broken = validate_response(message["id"], result, method=method, version=STATELESS)
        assert (
            broken.reason == "invalid_params" and paths(broken) and all(p.startswith("/result") for p in paths(broken))
        )
        wrong = validate_response(
            message["id"], {**message["result"], "resultType": 5}, method=method, version=STATELESS
        )
        assert wrong.reason == "invalid_params"
        return
    assert validate_message(message, version=STATELESS), path
    if name.endswith("Error"):
        assert validate_error_code(message["error"]["code"], version=STATELESS)
        wrong = {**message, "error": {**message["error"], "code": "x"}}
        assert validate_message(wrong, version=STATELESS).reason == "invalid_error_code"
        return
    if "params" not in message:
        wrong = {**message, "params": []}
        assert validate_message(wrong, version=STATELESS).reason == "invalid_params"
        assert paths(validate_message(wrong, version=STATELESS)) == ["/params"]
        return
    definitions = definitions_of(STATELESS)
    params_def = definitions[definitions[name]["properties"]["params"]["$ref"].rsplit("/", 1)[-1]]
    required = [key for key in params_def.get("required", []) if key in message["params"]]
    if required:
        removed = copy.deepcopy(message)
        del removed["params"][required[0]]
        result = validate_message(removed, version=STATELESS)
        # A request without its `_meta` envelope is refused as such (HTTP 400 in the stateless era).
        reason = "invalid_request_meta" if required[0] == "_meta" else "invalid_params"
        assert result.reason == reason and "/params" in paths(result)
    key = typed_property(params_def, message["params"])
    mutated = copy.deepcopy(message)
    if key is None:  # only $ref'd members (_meta): the params object itself gets the wrong type
        mutated["params"], expected = "wrong", "/params"
    else:
        declared = params_def["properties"][key]["type"]
        mutated["params"][key] = wrong_value(declared if isinstance(declared, list) else [declared])
        expected = f"/params/{key}"
    result = validate_message(mutated, version=STATELESS)
    assert result.reason == "invalid_params" and expected in paths(result), result


def test_there_are_spec_examples_of_every_message_kind() -> None:
    """Guard: the example tests above are not vacuous."""
    names = {path.parent.name for path in message_examples()}
    assert {"CallToolRequest", "CancelledNotification", "CallToolResultResponse", "HeaderMismatchError"} <= names
    assert len(example_files()) > 100


# --- Properties (hypothesis) -----------------------------------------------------------------------


def strategy_for(version: str, name: str) -> Any:
    """Instances of one definition; its $refs resolve because every definition is inlined beside it."""
    definitions = definitions_of(version)
    key = "$defs" if "$defs" in schema_of(version) else "definitions"
    return from_schema({**definitions[name], key: definitions})


@pytest.mark.parametrize(
    ("name", "method"),
    [
        ("PingRequest", None),
        ("InitializeRequest", None),
        ("InitializeRequestParams", "initialize"),
        ("CallToolRequestParams", "tools/call"),
        ("ProgressNotificationParams", "notifications/progress"),
    ],
)
def test_instances_generated_from_the_schemas_own_definitions_pass(name: str, method: str | None) -> None:
    """STYLE: instances generated from a schema (hypothesis-jsonschema) pass its validator."""
    version = "2025-11-25"

    # The generator filters heavily for the larger definitions (patterns, oneOf): not our concern.
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(instance=strategy_for(version, name))
    def check(instance: Any) -> None:
        assert validate_definition(name, instance, version=version)
        if method is None:
            assert validate_message(instance, version=version), instance
        elif method.startswith("notifications/"):
            assert validate_notification(method, instance, version=version), instance
        else:
            assert validate_request(method, instance, version=version), instance

    check()


def chain_verdict(registry: SchemaRegistry, version: str, frame: bytes) -> Rejection | None:
    """The real chain (size guard … schema check) on a session already running ``version``."""
    chain = build_chain(registry, Direction.CLIENT_TO_SERVER)
    session = Session()
    session.negotiate(version)
    session.initialized = True
    try:
        chain.check(Frame(raw=frame, transport="test", session=session, direction=Direction.CLIENT_TO_SERVER))
    except Rejection as rejection:
        return rejection
    return None


@pytest.mark.parametrize("version", VERSIONS)
def test_the_library_and_the_chain_give_the_same_verdict_on_the_same_frame(
    registry: SchemaRegistry, version: str
) -> None:
    """Issue: ONE implementation: the library's verdict is the chain's, paths included."""

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(document=frames_for(version))
    def check(document: Any) -> None:
        raw = document if isinstance(document, bytes) else jsonio.dumps(document)
        rejection = chain_verdict(registry, version, raw)
        result = validate_message(raw, version=version, direction=Direction.CLIENT_TO_SERVER, registry=registry)
        assert result.ok is (rejection is None), (raw, result, rejection)
        if rejection is not None:
            assert paths(result) == [entry["path"] for entry in rejection.errors]

    check()


@pytest.mark.parametrize("version", VERSIONS)
def test_the_property_sees_frames_the_chain_passes_and_frames_it_refuses(
    registry: SchemaRegistry, version: str
) -> None:
    """Guard: the parity property above is not vacuous (both verdicts occur)."""
    for frame in sound_frames(version):
        assert chain_verdict(registry, version, jsonio.dumps(frame)) is None, frame
    broken = mutated_frame(sound_frames(version)[0], "param", 7)
    rejection = chain_verdict(registry, version, jsonio.dumps(broken))
    assert rejection is not None and rejection.error is CanonicalError.INVALID_PARAMS
