"""Issue 24: the project's verdicts are the official schema's, proven against an independent validator.

Every frame of ``tests/oracle.py`` (valid frames of every request, notification, result and error
type, the specification's examples, and a seeded corpus of 10,000 mutations per version) is judged
by python ``jsonschema`` and by the project; a frame one accepts and the other refuses is a false
accept or a false reject, counted per version and direction. The counts are printed.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from mcp_server import jsonio
from mcp_server.chain import build_chain
from mcp_server.errors import CanonicalError
from mcp_server.lifecycle import PROTOCOL_VERSION_META
from mcp_server.registry import SchemaRegistry
from mcp_server.types import Direction, Frame, Reply, Session

from .oracle import OPPOSITE, VERSIONS, Case, SpecSchema, corpus

SEED = 24
MUTANTS = 10_000


def _is_request_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _session(registry: SchemaRegistry, case: Case) -> Session:
    """A session in which ``case`` can be judged on its own: the version in force, its request pending.

    A 2026-07-28 request comes with no session at all: its ``_meta`` alone names the version.
    """
    session = Session()
    frame = case.frame
    stateless = case.version in registry.stateless_versions
    request = isinstance(frame, dict) and "method" in frame and "id" in frame
    if not (stateless and request):
        session.protocol_version = case.version
        session.initialized = True
    if case.answers is not None and isinstance(frame, dict) and _is_request_id(frame.get("id")):
        requester = Direction(OPPOSITE[case.direction])
        session.expect_reply(requester, frame["id"], case.answers, version=case.version if stateless else None)
    return session


def chain_verdicts(registry: SchemaRegistry, cases: Sequence[Case]) -> list[tuple[bool, Any]]:
    """Each case through the serve chain's checks: (passed every check, the reply when refused)."""
    reached: list[Frame] = []

    async def accept(frame: Frame) -> Reply | None:
        reached.append(frame)
        return None

    chain = build_chain(accept, registry=registry)

    async def run() -> list[tuple[bool, Any]]:
        verdicts = []
        for case in cases:
            before = len(reached)
            frame = Frame(
                raw=case.raw, transport="oracle", session=_session(registry, case), direction=Direction(case.direction)
            )
            reply = await chain(frame)
            document = None if reply is None else jsonio.loads(reply.to_bytes())
            verdicts.append((len(reached) > before, document))
        return verdicts

    return asyncio.run(run())


def expected_cause(spec: SpecSchema, case: Case) -> set[CanonicalError]:
    """The refusal a request the schema refuses must get (issue 24, "What valid means")."""
    frame = case.frame
    if (
        frame.get("jsonrpc") != "2.0"
        or not _is_request_id(frame.get("id"))
        or not isinstance(frame.get("method"), str)
        or ("params" in frame and not isinstance(frame["params"], dict))
        or "result" in frame
        or "error" in frame
    ):
        return {CanonicalError.INVALID_ENVELOPE}
    if (case.direction, frame["method"]) not in spec.requests:
        return {CanonicalError.METHOD_NOT_FOUND}
    return {CanonicalError.INVALID_PARAMS}


def protocol_refusal(spec: SpecSchema, case: Case) -> CanonicalError | None:
    """The refusal the specification requires of a frame its schema accepts: a 2026-07-28 request
    stating a version the server does not speak gets UnsupportedProtocolVersionError (-32022)."""
    frame = case.frame
    if spec.version != VERSIONS[-1] or not isinstance(frame, dict) or "id" not in frame:
        return None
    meta = frame.get("params", {}).get("_meta") if isinstance(frame.get("params"), dict) else None
    stated = meta.get(PROTOCOL_VERSION_META) if isinstance(meta, dict) else None
    if isinstance(stated, str) and stated != spec.version:
        return CanonicalError.UNSUPPORTED_PROTOCOL_VERSION
    return None


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
