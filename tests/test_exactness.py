"""Issue 24: the project's verdicts are the official schema's, proven against an independent validator.

Every frame of ``tests/oracle.py`` (valid frames of every request, notification, result and error
type, the specification's examples, and a seeded corpus of 10,000 mutations per version) is judged
by python ``jsonschema`` and by the project; a frame one accepts and the other refuses is a false
accept or a false reject, counted per version and direction. The counts are printed.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings

from mcp_server.chain.compose import build_chain
from mcp_server.chain.error_boundary import render_rejection
from mcp_server.core import jsonio
from mcp_server.core.diff import diff_documents
from mcp_server.core.errors import CanonicalError, Rejection
from mcp_server.core.types import Direction, Frame
from mcp_server.offline.library import validate_definition, validate_message, validate_request
from mcp_server.registry.schemas import SchemaRegistry

from .conftest import initialize_frame, server_command, server_env
from .exactness import MUTANTS, SEED, is_request_id, session_for
from .generate import from_schema
from .offline.captures import handshake
from .oracle import C2S, OPPOSITE, VERSION_KEY, VERSIONS, Case, SpecSchema, corpus
from .servers import replay_stdio


def chain_verdicts(registry: SchemaRegistry, cases: Sequence[Case]) -> list[tuple[bool, Any]]:
    """Each case through the compiled chain of its direction, as serve and the gateway run it:
    (passed every check, the reply its refusal renders to)."""
    chains = {direction: build_chain(registry, Direction(direction)) for direction in (C2S, OPPOSITE[C2S])}
    verdicts = []
    for case in cases:
        frame = Frame(
            raw=case.raw, transport="oracle", session=session_for(registry, case), direction=Direction(case.direction)
        )
        try:
            chains[case.direction].check(frame)
        except Rejection as rejection:
            reply = render_rejection(rejection, registry)
            verdicts.append((False, None if reply is None else jsonio.loads(reply.to_bytes())))
        else:
            verdicts.append((True, None))
    return verdicts


def expected_cause(spec: SpecSchema, case: Case) -> set[CanonicalError]:
    """The refusal a request the schema refuses must get (issue 24, "What valid means")."""
    frame = case.frame
    if (
        frame.get("jsonrpc") != "2.0"
        or not is_request_id(frame.get("id"))
        or not isinstance(frame.get("method"), str)
        or ("params" in frame and not isinstance(frame["params"], dict))
        or "result" in frame
        or "error" in frame
    ):
        return {CanonicalError.INVALID_ENVELOPE}
    if (case.direction, frame["method"]) not in spec.requests:
        return {CanonicalError.METHOD_NOT_FOUND}
    if spec.stateless and case.direction == C2S:
        # 2026-07-28: a request whose `_meta` envelope is missing or invalid is refused with HTTP 400.
        meta = frame.get("params", {}).get("_meta")
        if meta is None or not spec.valid("RequestMetaObject", meta):
            return {CanonicalError.INVALID_REQUEST_META}
    return {CanonicalError.INVALID_PARAMS}


def protocol_refusal(spec: SpecSchema, case: Case) -> CanonicalError | None:
    """The refusal the specification requires of a frame its schema accepts (see ``SpecSchema.unsupported``)."""
    return CanonicalError.UNSUPPORTED_PROTOCOL_VERSION if spec.unsupported(case) else None


def is_request(case: Case) -> bool:
    return isinstance(case.frame, dict) and "method" in case.frame and "id" in case.frame


def member_of(reply: Any) -> CanonicalError | None:
    if not isinstance(reply, dict) or "error" not in reply:
        return None
    error = reply["error"]
    return next(
        (m for m in CanonicalError if m.mcp_code == error["code"] and m.message == error["message"]),
        None,
    )


def differences(
    spec: SpecSchema, cases: Sequence[Case], verdicts: Sequence[tuple[bool, Any]]
) -> tuple[Counter[str], list[str]]:
    """Counts (``false_accept``/``false_reject``/``wrong_cause`` per direction) and a few examples."""
    counts: Counter[str] = Counter()
    examples: list[str] = []
    for case, (accepted, reply) in zip(cases, verdicts, strict=True):
        valid = spec.verdict(case)
        counts[f"frames {case.direction}"] += 1
        problem = None
        refusal = protocol_refusal(spec, case) if valid else None
        if refusal is not None:
            problem = None if member_of(reply) is refusal else "wrong_cause"
        elif valid and not accepted:
            problem = "false_reject"
        elif accepted and not valid:
            problem = "false_accept"
        elif not valid and is_request(case) and member_of(reply) not in expected_cause(spec, case):
            problem = "wrong_cause"
        if problem is not None:
            counts[f"{problem} {case.direction}"] += 1
            if len(examples) < 5:
                got = member_of(reply)
                examples.append(f"{problem} ({case.origin}, {got and got.slug}): {case.raw[:300].decode()}")
    return counts, examples


def report(capsys: pytest.CaptureFixture[str], version: str, where: str, counts: Counter[str]) -> None:
    with capsys.disabled():
        shown = " ".join(f"{key.replace(' ', ':')}={counts[key]}" for key in sorted(counts))
        print(f"\nexactness {version} {where}: {shown}")


@pytest.fixture(scope="module")
def specs() -> dict[str, SpecSchema]:
    return {version: SpecSchema(version) for version in VERSIONS}


@pytest.mark.parametrize("version", VERSIONS)
def test_the_chain_gives_the_official_schemas_verdict_on_every_frame_of_the_corpus(
    version: str, specs: dict[str, SpecSchema], registry: SchemaRegistry, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24: 0 false accepts, 0 false rejects, and the refusal's cause, on valid frames and 10,000 mutants."""
    spec = specs[version]
    cases = corpus(spec, seed=SEED, size=MUTANTS)
    assert len(cases) - len(spec.valid_cases) >= MUTANTS
    counts, examples = differences(spec, cases, chain_verdicts(registry, cases))
    report(capsys, version, "chain", counts)
    wrong = {key: n for key, n in counts.items() if not key.startswith("frames")}
    assert wrong == {}, "\n".join(examples)


# --- Deep nesting: a catalogued answer at every depth, never -32603 ------------------------------------

DEPTH = 1_000
"""Far over what the reader takes (``jsonio.MAX_READ_DEPTH``) and what is written back (``jsonio.MAX_DEPTH``)."""


def nested(depth: int, leaf: Any = 1) -> bytes:
    """An array nested ``depth`` levels deep, as JSON text (the standard library cannot write one)."""
    return b"[" * depth + jsonio.dumps(leaf) + b"]" * depth


def nested_objects(depth: int, leaf: Any) -> Any:
    """``{"a": {"a": … leaf}}``, ``depth`` objects deep, built in Python."""
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def tool_call(request_id: int, name: str, arguments: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}' % (
        request_id,
        name.encode(),
        arguments,
    )


def nested_value(depth: int, leaf: Any = 1) -> Any:
    """The same, as a Python value built without reading it (what a library caller can hand over)."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def test_every_tool_answers_a_1000_deep_document_with_a_catalogued_result_never_an_internal_error(
    tmp_path: Path,
) -> None:
    """Issues 24 and 41: a frame nested 1,000 deep is answered ``nested_too_deep`` by its id (the
    reader's limit, with the limit in ``data``); an example file that deep is ``too_deep``; no
    -32603, no traceback."""
    examples = tmp_path / "examples"
    examples.mkdir()
    (examples / "TextContent.deep.json").write_bytes(nested(DEPTH))
    deep = nested(DEPTH)
    frames = [
        jsonio.dumps(initialize_frame("2025-06-18", 0)),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        tool_call(1, "validate_asset", b'{"schema":"TextContent","asset":%s}' % deep),
        tool_call(2, "validate_many", b'{"schema":"TextContent","assets":[%s]}' % nested(DEPTH - 2)),
        tool_call(3, "diff_assets", b'{"base":%s,"new":%s}' % (deep, nested(DEPTH, 2))),
        tool_call(4, "get_example", b'{"path":"TextContent.deep.json"}'),
        b'{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"cursor":%s}}' % nested(DEPTH - 3),
    ]
    stderr = tmp_path / "stderr"
    replayed = replay_stdio(tmp_path, frames, stderr_path=stderr, SYN_EXAMPLES_DIR=str(examples))
    replies = {r.reply["id"]: r.reply for r in replayed if r.reply is not None}
    for refused in (1, 2, 3, 5):
        assert member_of(replies[refused]) is CanonicalError.NESTED_TOO_DEEP, replies[refused]
        assert replies[refused]["error"]["data"]["limit"] == jsonio.MAX_READ_DEPTH
    assert replies[4]["result"]["structuredContent"]["reason"] == "too_deep"
    assert "Traceback" not in stderr.read_text()


def test_check_and_the_library_answer_a_1000_deep_frame_with_a_violation_not_a_crash(
    tmp_path: Path, registry: SchemaRegistry
) -> None:
    """Issues 24 and 41: ``mcp-server check`` names a frame nested deeper than the reader goes at its
    line; the validators given such a value built in Python list a ``too_deep`` violation, never -32603."""
    deep_frame = b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":%s}}' % nested(DEPTH)
    deep_tool = b'{"name":"t","inputSchema":{"type":"object","x-deep":%s}}' % nested(DEPTH - 5)
    listed = [
        b'{"jsonrpc":"2.0","id":3,"method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":3,"result":{"tools":[%s]}}' % deep_tool,
    ]
    capture = tmp_path / "capture.ndjson"
    capture.write_bytes(b"\n".join([*(jsonio.dumps(f) for f in handshake("2025-06-18")), deep_frame, *listed]) + b"\n")
    run = subprocess.run(
        [*server_command()[:-1], "check", "--format", "json", str(capture)],
        capture_output=True,
        env=server_env(tmp_path),
        timeout=60,
    )
    assert run.returncode == 1, run.stderr.decode()
    document = json.loads(run.stdout)
    assert document["violations"] == {"nested_too_deep": 2}
    assert "Traceback" not in run.stderr.decode()
    frame = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": nested_value(DEPTH)}}
    verdict = validate_message(frame, version="2025-06-18", registry=registry)
    assert verdict.reason == "invalid_params" and verdict.details["errors"][0]["rule"] == "too_deep"
    definition = validate_definition("TextContent", nested_value(DEPTH), registry=registry)
    assert definition.reason == "schema_violation" and definition.details["errors"][0]["rule"] == "too_deep"
    base, new = (nested_objects(DEPTH, leaf) for leaf in (1, 2))
    assert diff_documents(base, new) == [{"op": "replace", "path": "/a" * DEPTH, "value": 2}]


# --- format: an annotation by default, asserted on request under a rule of its own ---------------------


def test_a_uri_format_is_an_annotation_by_default_and_invalid_format_when_asserted(registry: SchemaRegistry) -> None:
    """Issue 24: ``format`` follows the draft (an annotation) in every version; asserting it is an
    option, reported as ``invalid_format`` (-32602) when the formats are a frame's only faults."""
    asserting = SchemaRegistry(assert_formats=True)
    for version in VERSIONS[:3]:
        for method in ("resources/read", "resources/subscribe", "resources/unsubscribe"):
            for uri in ("x", ""):
                assert validate_request(method, {"uri": uri}, version=version, registry=registry), (version, method)
                refused = validate_request(method, {"uri": uri}, version=version, registry=asserting)
                assert refused.reason == CanonicalError.INVALID_FORMAT.slug
                assert refused.details["errors"][0]["rule"] == "format"
    both = validate_request("resources/read", {"uri": "x", "_meta": 1}, version="2025-06-18", registry=asserting)
    assert both.reason == CanonicalError.INVALID_PARAMS.slug
    assert {e.get("rule") for e in both.details["errors"]} == {"format", None}


def test_serve_and_check_assert_formats_only_when_told(tmp_path: Path) -> None:
    """Issue 24: MCP_ASSERT_FORMATS=1 (serve) and --assert-formats (check) turn the assertion on."""
    frames = [
        jsonio.dumps(initialize_frame("2025-06-18", 0)),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        b'{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"x"}}',
    ]
    plain = replay_stdio(tmp_path, frames)[2].reply
    asserted = replay_stdio(tmp_path, frames, MCP_ASSERT_FORMATS="1")[2].reply
    assert member_of(plain) is CanonicalError.METHOD_NOT_FOUND  # valid, and not served
    assert member_of(asserted) is CanonicalError.INVALID_FORMAT
    capture = tmp_path / "capture.ndjson"
    capture.write_bytes(b"\n".join([*(jsonio.dumps(f) for f in handshake("2025-06-18")), frames[2]]) + b"\n")
    for flags, expected in (([], {}), (["--assert-formats"], {"invalid_format": 1})):
        run = subprocess.run(
            [*server_command()[:-1], "check", "--format", "json", *flags, str(capture)],
            capture_output=True,
            env=server_env(tmp_path),
            timeout=60,
        )
        assert json.loads(run.stdout)["violations"] == expected, run.stderr.decode()


# --- Frames generated from each definition (hypothesis-jsonschema): the project accepts them all --------

GENERATED_PER_TYPE = int(os.environ.get("MCP_ORACLE_GENERATED", "1"))
"""Frames drawn per frame type: one in the suite (a draw costs up to a second: the generator resolves
the larger definitions anew each time); ``MCP_ORACLE_GENERATED=20`` for a deeper run."""

INT64 = 2**63
"""The parser reads integers up to 64 bits (beyond, a float: ADR 0014); generated frames keep to it."""


def _within_int64(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_within_int64(v) for v in value.values())
    if isinstance(value, list):
        return all(_within_int64(v) for v in value)
    return not isinstance(value, int) or isinstance(value, bool) or -INT64 <= value < INT64


@functools.cache
def generated(version: str, direction: str, kind: str, method: str) -> Any:
    """Frames of one type, drawn from its own definition (for a response: its result type) and given
    the JSON-RPC members it leaves out; the oracle then judges each against every definition."""
    spec = SpecSchema(version)
    ref = f"#/{spec.defs_key}/"
    whole = True
    if kind == "response":
        name, whole = spec.result_of(spec.requests[(OPPOSITE[direction], method)])
    else:
        name = (spec.requests if kind == "request" else spec.notifications)[(direction, method)]
    schema = _inlined({"$ref": ref + name}, _unrolled(spec.defs, ref), ref)
    strategy = from_schema({"$schema": spec.document["$schema"], **schema}).filter(_within_int64)

    def framed(drawn: Any) -> Any:
        frame = dict(drawn) if whole else {"result": drawn}
        frame["jsonrpc"] = "2.0"
        if kind != "notification" and not is_request_id(frame.get("id")):
            frame["id"] = 1
        meta = frame["params"].get("_meta") if isinstance(frame.get("params"), dict) else None
        if isinstance(meta, dict) and isinstance(meta.get(VERSION_KEY), str):
            meta[VERSION_KEY] = version  # the version a request of this version states (2026-07-28)
        return frame

    return strategy.map(framed)


def _inlined(node: Any, defs: dict[str, Any], ref: str) -> Any:
    """``node`` with each ``$ref`` replaced by the definition it names (beside the ref's own annotations):
    drawing no longer resolves the references again for every member of every instance."""
    if isinstance(node, list):
        return [_inlined(item, defs, ref) for item in node]
    if not isinstance(node, dict):
        return node
    target = node.get("$ref", "").removeprefix(ref)
    if target in defs:
        siblings = {key: value for key, value in node.items() if key != "$ref"}
        resolved = _inlined(defs[target], defs, ref)
        return {**siblings, **resolved} if isinstance(resolved, dict) else resolved
    return {key: _inlined(value, defs, ref) for key, value in node.items()}


RECURSIVE = ("JSONObject", "JSONValue")
"""The definitions that refer to themselves (2026-07-28), which hypothesis-jsonschema cannot resolve."""


def _unrolled(defs: Any, ref: str, depth: int = 1) -> dict[str, Any]:
    """The definitions with each recursive one inlined ``depth`` levels deep (deeper: ``false``), a
    subset of what they allow: enough to generate from; the oracle still judges each frame."""

    def inline(node: Any, left: int) -> Any:
        if isinstance(node, dict):
            target = node.get("$ref", "").removeprefix(ref)
            if target in RECURSIVE:
                return inline(defs[target], left - 1) if left > 0 else False
            return {key: inline(value, left) for key, value in node.items()}
        if isinstance(node, list):
            return [inline(item, left) for item in node]
        return node

    return {name: inline(definition, depth) for name, definition in defs.items()}


def frame_types(spec: SpecSchema) -> list[tuple[str, str, str]]:
    types = [(d, "request", m) for d, m in spec.requests] + [(d, "notification", m) for d, m in spec.notifications]
    return sorted(types + [(OPPOSITE[d], "response", m) for d, m in spec.requests])


def judge_generated(
    spec: SpecSchema, registry: SchemaRegistry, frame_type: tuple[str, str, str], judged: Counter[Any]
) -> None:
    """Frames of ``frame_type`` the oracle calls valid all pass the chain (counted in ``judged``)."""
    direction, kind, method = frame_type

    @settings(
        max_examples=GENERATED_PER_TYPE,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(frame=generated(spec.version, direction, kind, method))
    def check(frame: Any) -> None:
        case = Case(spec.version, direction, frame, method if kind == "response" else None, "generated")
        assume(spec.verdict(case) and not spec.unsupported(case))
        judged[frame_type] += 1
        [(accepted, reply)] = chain_verdicts(registry, [case])
        assert accepted, (case.raw[:500], reply)

    check()


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_frames_generated_from_every_definition_are_accepted(
    version: str, specs: dict[str, SpecSchema], registry: SchemaRegistry
) -> None:
    """Issue 24: every frame hypothesis-jsonschema generates from a request, notification or result
    definition (with its JSON-RPC message definition) is valid to the oracle, and the project accepts it."""
    spec = specs[version]
    judged: Counter[tuple[str, str, str]] = Counter()
    for frame_type in frame_types(spec):
        judge_generated(spec, registry, frame_type, judged)
    assert set(judged) == set(frame_types(spec))  # not vacuous: every type was judged
