"""The compiled chain: its fast path gives exactly the diagnostic path's verdict (issue 19)."""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from mcp_server.chain.compose import Chain, build_chain
from mcp_server.core import jsonio
from mcp_server.core.errors import CanonicalError, Rejection
from mcp_server.core.session import Session
from mcp_server.core.types import CLIENT_TO_SERVER, SERVER_TO_CLIENT, Direction, Frame, Message
from mcp_server.registry.schemas import SchemaRegistry
from mcp_server.registry.versions import CLIENT_CAPABILITIES_META, PROTOCOL_VERSION_META

from ..conftest import ROOT
from ..frames import VERSIONS, frames_for


def _bench_corpus() -> Any:
    spec = importlib.util.spec_from_file_location("bench_corpus", ROOT / "bench" / "corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_corpus"] = module
    spec.loader.exec_module(module)
    return module


def both_paths(chain: Chain, raw: bytes, prepare: Any) -> tuple[Message | None, Message | Rejection]:
    """The fast path's verdict and the diagnostic path's outcome of one frame, each on a session of
    its own prepared alike; the sessions must be left alike too."""
    fast_session, slow_session = prepare(Session()), prepare(Session())
    assert chain.fast is not None
    fast = chain.fast(Frame(raw=raw, transport="test", session=fast_session, direction=chain.direction))
    try:
        slow: Message | Rejection = chain.inspect(
            Frame(raw=raw, transport="test", session=slow_session, direction=chain.direction)
        )
    except Rejection as rejection:
        slow = rejection
    if fast is not None:
        assert list(fast_session.waiting()) == list(slow_session.waiting())
    return fast, slow


def agree(fast: Message | None, slow: Message | Rejection, raw: bytes) -> None:
    """Where the fast path decides, it decides as the stages do (the same message, field by field)."""
    if fast is not None:
        assert isinstance(slow, Message), (raw, fast, slow.error, slow.errors)
        assert fast == slow, (raw, fast, slow)


def negotiated(version: str) -> Any:
    def prepare(session: Session) -> Session:
        session.negotiate(version)
        session.initialized = True
        return session

    return prepare


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("direction", [CLIENT_TO_SERVER, SERVER_TO_CLIENT])
def test_the_fast_path_and_the_stages_agree_on_generated_frames(
    registry: SchemaRegistry, version: str, direction: Direction
) -> None:
    """Issue 19, proven equal: sound, mutated and arbitrary requests and notifications, both sides."""
    chain = build_chain(registry, direction)

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(document=frames_for(version))
    def check(document: Any) -> None:
        raw = document if isinstance(document, bytes) else jsonio.dumps(document)
        agree(*both_paths(chain, raw, negotiated(version)), raw)

    check()


def test_the_fast_path_and_the_stages_agree_on_a_recorded_session_and_decide_most_of_it(
    registry: SchemaRegistry,
) -> None:
    """Issue 19: on the bench corpus (requests, notifications, results with tool output schemas, ~5 %
    invalid) both paths agree frame by frame, and the fast path decides nearly every valid frame."""
    corpus = _bench_corpus()
    frames, tools = corpus.build(400)
    schemas = corpus.CorpusTools(registry, tools)
    chains = {d: build_chain(registry, d, tools=schemas) for d in (CLIENT_TO_SERVER, SERVER_TO_CLIENT)}
    pending: dict[tuple[Direction, Any], tuple[str, str | None]] = {}
    decided = valid = 0
    for item in frames:
        direction = CLIENT_TO_SERVER if item.client else SERVER_TO_CLIENT

        def prepare(session: Session) -> Session:
            session.negotiate(corpus.VERSION)
            for (side, request_id), (method, tool) in pending.items():
                session.expect(side, request_id, method, tool)
            return session

        fast, slow = both_paths(chains[direction], item.raw, prepare)
        agree(fast, slow, item.raw)
        valid += item.valid
        decided += fast is not None
        if isinstance(slow, Message) and slow.kind.value == "request" and slow.id is not None:
            pending[(direction, slow.id)] = (str(slow.method), slow.tool)
        elif isinstance(slow, Message) and slow.id is not None:
            pending.pop((direction.opposite, slow.id), None)
    assert decided >= 0.95 * valid, (decided, valid)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_fast_path_and_the_stages_agree_on_the_exactness_corpus(registry: SchemaRegistry, version: str) -> None:
    """Issue 19, proven equal on the differential corpus of issue 24 (valid frames of every type and
    10,000 mutants per version, both directions): where the fast path decides, it decides as the
    stages do; and it decides most of the frames the official schema accepts."""
    from ..exactness import MUTANTS, SEED
    from ..oracle import SpecSchema, corpus

    spec = SpecSchema(version)
    chains = {d: build_chain(registry, d) for d in (CLIENT_TO_SERVER, SERVER_TO_CLIENT)}
    decided = accepted = 0
    for case in corpus(spec, seed=SEED, size=MUTANTS):
        chain = chains[Direction(case.direction)]
        fast, slow = both_paths(chain, case.raw, lambda session, case=case: _copy_into(session, registry, case))
        agree(fast, slow, case.raw)
        accepted += isinstance(slow, Message)
        decided += fast is not None
    assert decided >= 0.85 * accepted, (decided, accepted)  # 88 % (2026-07-28) to 99 % here


def _copy_into(session: Session, registry: SchemaRegistry, case: Any) -> Session:
    """``session`` prepared as the oracle prepares one for ``case`` (the version in force, the request
    a response answers)."""
    from ..exactness import session_for

    prepared = session_for(registry, case)
    session.negotiate(prepared.version)
    session.initialized = prepared.initialized
    for direction, request_id, pending in prepared.waiting():
        session.expect(direction, request_id, pending.method, pending.tool, pending.version)
    return session


@pytest.mark.parametrize("stated", [[None], {"version": "2026-07-28"}, 20260728])
def test_a_request_stating_a_version_that_is_no_string_is_refused_by_the_stages_never_an_internal_error(
    registry: SchemaRegistry, stated: Any
) -> None:
    """Issue 24 (the exactness oracle through the gateway): a 2026-07-28 `_meta` version that is a
    list or an object is no version (and no key of a table): the fast path leaves the frame to the
    stages, which refuse it as the schema does."""
    chain = build_chain(registry, CLIENT_TO_SERVER)
    params = {"_meta": {PROTOCOL_VERSION_META: stated, CLIENT_CAPABILITIES_META: {}}}
    raw = jsonio.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params})
    fast, slow = both_paths(chain, raw, lambda session: session)
    assert fast is None
    assert isinstance(slow, Rejection) and slow.error is not CanonicalError.INTERNAL_ERROR


@pytest.mark.parametrize(
    ("result", "verdict"),
    [
        ({"content": [], "isError": True}, None),
        ({"content": [], "isError": True, "structuredContent": {"sum": 2}}, None),
        ({"content": [], "isError": True, "structuredContent": {"ok": False}}, CanonicalError.INVALID_TOOL_OUTPUT),
        ({"content": [], "structuredContent": {"sum": "two"}}, CanonicalError.INVALID_TOOL_OUTPUT),
        ({"content": []}, CanonicalError.INVALID_TOOL_OUTPUT),
    ],
)
def test_a_tool_errors_structured_content_is_held_to_the_output_schema_when_present(
    registry: SchemaRegistry, result: dict[str, Any], verdict: CanonicalError | None
) -> None:
    """Issue 29 (tools spec, "Structured Content"; clients validate it, error or not): an `isError`
    result may leave `structuredContent` out, but what it carries must fit the outputSchema, on both
    paths alike."""
    from mcp_server.registry.tools import UpstreamTools

    tools = UpstreamTools(registry)
    output = {"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]}
    tools.learn([{"name": "add", "inputSchema": {"type": "object"}, "outputSchema": output}])
    chain = build_chain(registry, SERVER_TO_CLIENT, tools=tools)

    def prepare(session: Session) -> Session:
        negotiated("2025-11-25")(session).expect(CLIENT_TO_SERVER, 1, "tools/call", "add")
        return session

    fast, slow = both_paths(chain, jsonio.dumps({"jsonrpc": "2.0", "id": 1, "result": result}), prepare)
    agree(fast, slow, b"")
    if verdict is None:
        assert isinstance(slow, Message) and fast is not None
    else:
        assert isinstance(slow, Rejection) and slow.error is verdict and fast is None


# -- chains as serve and the gateway compose them: a policy, the server's own tools, a lockfile --------

POLICY = {
    "methods": {"deny": ["sampling/*", "logging/*"]},
    "tools": {"deny": ["get_example", "echo"]},
    "limits": {"client_to_server_bytes": 2000, "server_to_client_bytes": 3000},
    "tool": [
        {"match": "validate", "max_argument_bytes": 60},
        {"match": "diff_assets", "approval": True},
        {"match": "list_schemas", "max_result_bytes": 400},
    ],
}
UPSTREAM_TOOLS = [
    {
        "name": "add",
        "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
        "outputSchema": {"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]},
    },
    {"name": "echo", "inputSchema": {"type": "object"}},
    {"name": "drifted", "inputSchema": {"type": "object"}},
]
STATED = "io.modelcontextprotocol/protocolVersion"


def _with_meta(frame: Any, stated: Any) -> Any:
    """``frame`` stating ``stated`` as its own version in ``_meta`` (2026-07-28's envelope)."""
    if stated is None or not isinstance(frame, dict) or not isinstance(frame.get("params", {}), dict):
        return frame
    params = dict(frame.get("params") or {})
    meta = params.get("_meta")
    meta = meta if isinstance(meta, dict) else {}  # (a generated ``_meta`` that is no object is replaced)
    params["_meta"] = {**meta, STATED: stated, CLIENT_CAPABILITIES_META: {}}
    return {**frame, "params": params}


def _client_frames(version: str, tools: list[str]) -> Any:
    """Generated frames and calls of tools (listed, unlisted, locked or not), by name or by
    ``tools/call``, with arguments valid and not, some stating a version of their own."""
    from hypothesis import strategies as st

    from ..frames import json_values

    arguments = st.sampled_from([{}, {"a": 1}, {"a": "x"}, {"asset": {"type": "text", "text": "t"}}]) | json_values
    call = st.builds(
        lambda rid, name, args: {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {"name": name, "arguments": args},
        },
        st.integers(1, 3) | st.just("c") | st.booleans(),
        st.sampled_from([*tools, "not_listed"]),
        arguments,
    )
    direct = st.builds(
        lambda rid, name, args: {"jsonrpc": "2.0", "id": rid, "method": name, "params": args},
        st.integers(1, 3),
        st.sampled_from(tools),
        arguments,
    )
    stated = st.sampled_from([None, None, *VERSIONS, 7, ["x"]])
    framed = st.builds(_with_meta, st.one_of(frames_for(version), call, call, direct), stated)
    return st.one_of(framed, st.binary(max_size=8).map(lambda raw: b'{"jsonrpc":"2.0","id":1' + raw))


def _results() -> Any:
    """Results of a pending ``tools/call``: structured or not, valid or not, errors, input requests."""
    from hypothesis import strategies as st

    from ..frames import json_values

    structured = st.sampled_from([{"sum": 2}, {"sum": "two"}, {}]) | json_values
    text = st.lists(st.just({"type": "text", "text": "x" * 100}), max_size=40)
    return st.builds(
        lambda content, more, extra: {"content": content, **more, **extra},
        text,
        st.fixed_dictionaries({}, optional={"structuredContent": structured, "isError": st.booleans()}),
        st.sampled_from([{}, {"resultType": "input_required"}, {"resultType": "complete"}]),
    )


def _session_at(version: str, registry: SchemaRegistry, stateless: bool) -> Session:
    session = Session()
    if version not in registry.stateless_versions or not stateless:
        session.negotiate(version)
        session.initialized = True
    return session


@pytest.mark.parametrize("version", VERSIONS)
def test_the_fast_path_and_the_stages_agree_in_serves_chain_with_a_policy_and_its_own_tools(
    registry: SchemaRegistry, tools: Any, version: str
) -> None:
    """Issue 32 (one rule, one place): serve's chain with a policy (methods and tools denied, an
    argument limit, an approval) and its own tools, called by `tools/call` and by their own names,
    decides on the fast path exactly as its stages do, at every version."""
    from mcp_server.chain.policy_check import PolicyCheck
    from mcp_server.chain.schema_check import own_tool
    from mcp_server.execution.policy import Policy

    names = [tool.name for tool in tools]
    own = frozenset(name for name in names if own_tool(registry, tools, name) is not None)
    stage = PolicyCheck(Policy.from_document(POLICY), CLIENT_TO_SERVER, tool_methods=own)
    chain = build_chain(registry, CLIENT_TO_SERVER, tools=tools, policy=stage)
    decided = []

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(document=_client_frames(version, names), stateless=st_booleans())
    def check(document: Any, stateless: bool) -> None:
        raw = document if isinstance(document, bytes) else jsonio.dumps(document)
        fast, slow = both_paths(chain, raw, lambda session: _session_at(version, registry, stateless))
        agree(fast, slow, raw)
        decided.append(fast is not None)

    check()
    assert any(decided) and not all(decided)


def _gateway_tools(registry: SchemaRegistry) -> tuple[Any, Any]:
    """The upstream's tools as a gateway learnt them (waiting for its list: strict), and a lockfile
    check that holds `add` as listed, `drifted` otherwise and `echo` not at all."""
    from pathlib import Path

    from mcp_server.registry.lockfile import LockCheck, Lockfile, ServerLock
    from mcp_server.registry.tools import UpstreamTools

    upstream = UpstreamTools(registry, waits=True)
    upstream.learn(UPSTREAM_TOOLS)
    drifted = {**UPSTREAM_TOOLS[2], "description": "as it was locked"}
    locked = {t["name"]: (jsonio.fingerprint(t), t) for t in (UPSTREAM_TOOLS[0], drifted)}
    lock = LockCheck(Lockfile(Path("tools.lock.json"), {"u": ServerLock("u", locked)}), "u")
    lock.listed(UPSTREAM_TOOLS, last_page=True)
    assert lock.allows("add") and not lock.allows("drifted") and not lock.allows("echo")
    return upstream, lock


@pytest.mark.parametrize("version", VERSIONS)
def test_the_fast_path_and_the_stages_agree_in_the_gateways_client_chain_with_a_policy_and_a_lockfile(
    registry: SchemaRegistry, version: str
) -> None:
    """Issue 32: the gateway's client-to-server chain (a policy, the upstream's tools, one version per
    session, the tool lockfile, unlisted tools refused) decides on the fast path exactly as its
    stages do, at every version, stateless sessions included."""
    from mcp_server.chain.policy_check import PolicyCheck
    from mcp_server.execution.policy import Policy

    upstream, lock = _gateway_tools(registry)
    policy = PolicyCheck(Policy.from_document(POLICY), CLIENT_TO_SERVER, can_hold=lambda frame, message: False)
    chain = build_chain(registry, CLIENT_TO_SERVER, tools=upstream, policy=policy, one_version=True, lock=lock)
    names = [tool["name"] for tool in UPSTREAM_TOOLS]

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(document=_client_frames(version, names), stateless=st_booleans())
    def check(document: Any, stateless: bool) -> None:
        raw = document if isinstance(document, bytes) else jsonio.dumps(document)
        fast, slow = both_paths(chain, raw, lambda session: _session_at(version, registry, stateless))
        agree(fast, slow, raw)

    check()
    other = next(v for v in VERSIONS if v != version)
    mixed = CanonicalError.MIXED_PROTOCOL_VERSIONS
    if version in registry.stateless_versions:  # no session version: the other one is no stateless one
        mixed = CanonicalError.UNSUPPORTED_PROTOCOL_VERSION
    for name, stated, rule in (
        ("add", version, None),
        ("drifted", version, CanonicalError.TOOL_NOT_LOCKED),
        ("echo", version, CanonicalError.POLICY_DENIED),
        ("not_listed", version, CanonicalError.TOOL_NOT_LOCKED),
        ("add", other, mixed),
    ):
        frame = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": {"a": 1}}}
        raw = jsonio.dumps(_with_meta(frame, stated))
        fast, slow = both_paths(chain, raw, lambda session: _session_at(version, registry, True))
        agree(fast, slow, raw)
        assert (fast is not None) is (rule is None), (name, stated, slow)
        assert rule is None or (isinstance(slow, Rejection) and slow.error is rule), (name, stated, slow)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_fast_path_and_the_stages_agree_on_results_in_the_gateways_server_chain(
    registry: SchemaRegistry, version: str
) -> None:
    """Issue 32: the gateway's server-to-client chain with a policy (a result limit) decides on the
    results of tool calls (structured or not, valid or not, errors, input requests) exactly as its
    stages do, at every version; a result of a stateless request is read at the version it stated."""
    from mcp_server.chain.policy_check import PolicyCheck
    from mcp_server.execution.policy import Policy

    upstream, _ = _gateway_tools(registry)
    policy = PolicyCheck(Policy.from_document(POLICY), SERVER_TO_CLIENT)
    chains = {
        "policy": build_chain(registry, SERVER_TO_CLIENT, tools=upstream, policy=policy),
        "none": build_chain(registry, SERVER_TO_CLIENT, tools=upstream),
    }
    decided = []

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(result=_results(), tool=st_sampled(["add", "echo", "list_schemas", None]), stateless=st_booleans())
    def check(result: Any, tool: str | None, stateless: bool) -> None:
        def prepare(session: Session) -> Session:
            session = _session_at(version, registry, stateless)
            stated = version if session.version is None else None
            session.expect(CLIENT_TO_SERVER, 7, "tools/call" if tool else "ping", tool, stated)
            return session

        raw = jsonio.dumps({"jsonrpc": "2.0", "id": 7, "result": result})
        for chain in chains.values():
            fast, slow = both_paths(chain, raw, prepare)
            agree(fast, slow, raw)
            decided.append(fast is not None)

    check()
    assert any(decided) and not all(decided)


def st_booleans() -> Any:
    from hypothesis import strategies as st

    return st.booleans()


def st_sampled(values: list[Any]) -> Any:
    from hypothesis import strategies as st

    return st.sampled_from(values)


def test_a_stage_the_composer_does_not_know_runs_its_own_check_in_place_and_the_others_stay_fast(
    registry: SchemaRegistry,
) -> None:
    """Issue 32: a stage with no fast check of its own keeps the compiled path for the others; its
    diagnostic check runs in its place there, and what it refuses is named by the diagnostic path."""
    from mcp_server.chain.compose import Chain
    from mcp_server.chain.stage import Inspection

    class NoPings:
        def inspect(self, inspection: Inspection) -> None:
            message = inspection.message
            if message is not None and message.method == "ping" and message.version is None:
                raise Rejection(CanonicalError.POLICY_DENIED, message=message)

    stages = build_chain(registry, CLIENT_TO_SERVER).stages
    chain = Chain([*stages[:3], NoPings(), *stages[3:]], CLIENT_TO_SERVER)
    assert chain.fast is not None
    for raw, refused in (
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}', False),
        (b'{"jsonrpc":"2.0","id":2,"method":"ping"}', True),
    ):
        fast, slow = both_paths(chain, raw, negotiated("2025-11-25"))
        agree(fast, slow, raw)
        assert (fast is None) is refused
        assert isinstance(slow, Rejection) is refused


def test_the_stages_read_the_session_and_the_application_settles_what_a_reply_answers(
    registry: SchemaRegistry,
) -> None:
    """Issue 32 (stages are pure): checking a reply, on either path, leaves its request waiting; the
    session settles it when told the verdict (`Session.answered`), a refused reply's too."""
    chain = build_chain(registry, SERVER_TO_CLIENT)
    for raw in (b'{"jsonrpc":"2.0","id":1,"result":{}}', b'{"jsonrpc":"2.0","id":1,"result":{"x":"not_empty"}}'):
        for path in (chain.check, chain.inspect):
            session = negotiated("2025-11-25")(Session())
            session.expect(CLIENT_TO_SERVER, 1, "ping")
            try:
                message: Message | None = path(Frame(raw, "test", session, None, SERVER_TO_CLIENT))
            except Rejection as rejection:
                message = rejection.message
            assert session.peek(CLIENT_TO_SERVER, 1) is not None
            assert session.answered(SERVER_TO_CLIENT, message) is not None
            assert session.peek(CLIENT_TO_SERVER, 1) is None


def test_a_tool_named_as_a_method_of_some_version_is_read_as_that_method_on_both_paths(
    registry: SchemaRegistry,
) -> None:
    """Issue 32 (one own-tool notion): an upstream's tool named `ping` (a request of the versions
    before 2026-07-28) is never a tool called by its own name: `ping` is read as `ping`, on the fast
    path and on the diagnostic path alike, at every version."""
    from mcp_server.registry.tools import UpstreamTools

    upstream = UpstreamTools(registry, waits=True)
    strict_input = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    upstream.learn([{"name": "ping", "inputSchema": strict_input}])
    chain = build_chain(registry, CLIENT_TO_SERVER, tools=upstream)
    for version in VERSIONS:
        for params in ({}, {"a": 1}, {"a": "x"}):
            raw = jsonio.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": params})
            fast, slow = both_paths(chain, raw, negotiated(version))
            agree(fast, slow, raw)
            if isinstance(slow, Rejection):
                assert slow.error is CanonicalError.METHOD_NOT_FOUND and version == "2026-07-28", (version, slow)


def _outcome(run: Any, frame: Frame, *document: Any) -> Message | tuple[CanonicalError, Any]:
    try:
        return run(frame, *document)  # type: ignore[no-any-return]
    except Rejection as rejection:
        return rejection.error, rejection.errors


@pytest.mark.parametrize("limit", [1 << 20, sys.maxsize])
def test_a_frame_its_reader_parsed_gets_the_verdict_its_bytes_get(registry: SchemaRegistry, limit: int) -> None:
    """Issue 34: ``check_parsed`` (``mcp-server check``'s entry, the parse stage left out, and the size
    guard too where no frame can be over the limit) decides every frame of the bench corpus as
    ``check`` decides its bytes: the same message, or the same rejection."""
    corpus = _bench_corpus()
    frames, tools = corpus.build(200)
    schemas = corpus.CorpusTools(registry, tools)
    chains = {
        d: build_chain(registry, d, tools=schemas, max_frame_bytes=limit) for d in (CLIENT_TO_SERVER, SERVER_TO_CLIENT)
    }
    by_bytes, parsed = Session(), Session()
    compared = 0
    for item in frames:
        try:
            document = jsonio.loads(item.raw)
        except jsonio.JSONSyntaxError:
            continue
        if not isinstance(document, dict):
            continue
        chain = chains[CLIENT_TO_SERVER if item.client else SERVER_TO_CLIENT]
        outcomes = []
        for session, run, rest in ((by_bytes, chain.check, ()), (parsed, chain.check_parsed, (document,))):
            outcome = _outcome(run, Frame(item.raw, "test", session, None, chain.direction), *rest)
            if isinstance(outcome, Message):
                session.answered(chain.direction, outcome)
                session.follow(chain.direction, outcome)
            outcomes.append(outcome)
        assert outcomes[0] == outcomes[1], item.raw[:200]
        compared += 1
    assert compared > 300 and list(by_bytes.waiting()) == list(parsed.waiting())
