"""Issue 24: the oracle's verdicts against real processes: ``serve`` over STDIO, the gateway in both
directions (client frames towards a scripted upstream, the upstream's replies, requests and
notifications towards the client), and ``mcp-server check`` on a capture.

A seeded sample of the corpus of ``tests/oracle.py`` (valid frames and mutants of every kind) per
version; each process's verdict on a frame is read from its own records: the event log of
``serve`` and of the gateway (one ``frame`` event per frame, with the catalogue slug of its
refusal), and the violation counts of ``check``.
"""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from mcp_server.observe.events import read_events

from .conftest import ROOT, initialize_frame, server_command, server_env
from .oracle import C2S, ID, OPPOSITE, S2C, VERSIONS, Case, SpecSchema, edits, mutant
from .servers import replay_stdio

pytestmark = pytest.mark.slow

SEED = 24
PER_KIND = 40
"""Frames per version, direction and kind (half valid, half mutants) through each process."""

WAIT = 10.0
SCHEMA_REFUSALS = frozenset(
    {
        "parse_error",
        "invalid_envelope",
        "invalid_params",
        "invalid_request_meta",
        "invalid_format",
        "unsupported_protocol_version",
    }
)
"""The slugs of a refusal by the schema check (and -32601, for a method the version does not define)."""

SCRIPTED = [sys.executable, str(ROOT / "tests" / "upstreams" / "scripted_server.py")]


def fresh_id(case: Case, request_id: str) -> Case:
    """``case`` under ``request_id`` where it has an id of a valid type (one that is no id keeps it):
    each request its own id, as ADR 43 asks of a sender, whatever the mutation did to the rest."""
    frame = case.frame
    if not isinstance(frame, dict) or type(frame.get("id")) not in (str, int):
        return case
    return Case(case.version, case.direction, {**frame, "id": request_id}, case.answers, case.origin)


def kind_of(frame: Any) -> str:
    if "method" in frame:
        return "request" if "id" in frame else "notification"
    return "error" if "error" in frame else "response"


def disarm(case: Case, tag: str) -> Case:
    """The case with the tools of a ``tools/list`` result renamed ``tag-N``: a tool the process learns
    would check later ``tools/call`` frames against its own schemas, which the oracle does not model."""
    frame = case.frame
    result = frame.get("result") if isinstance(frame, dict) else None
    tools = result.get("tools") if isinstance(result, dict) else None
    if case.answers != "tools/list" or not isinstance(tools, list):
        return case
    renamed = [
        {**tool, "name": f"{tag}-{n}"} if isinstance(tool, dict) and isinstance(tool.get("name"), str) else tool
        for n, tool in enumerate(tools)
    ]
    frame = {**frame, "result": {**result, "tools": renamed}}
    return Case(case.version, case.direction, frame, case.answers, case.origin)


def sample(spec: SpecSchema, directions: Sequence[str], kinds: Sequence[str]) -> list[tuple[Case, Case]]:
    """``(base, case)`` pairs: per direction and kind, valid frames and mutants of them, seeded.

    A response's mutants keep their id (the process must know the request a response answers: a
    response to another id is the in-process test's)."""
    rng = random.Random(f"{SEED}:{spec.version}")
    picked: list[tuple[Case, Case]] = []
    for direction in directions:
        for kind in kinds:
            bases = [c for c in spec.valid_cases if c.direction == direction and kind_of(c.frame) == kind]
            if not bases:
                continue
            respond = kind in ("response", "error")
            pool = [(b, e) for b in bases for e in edits(b.frame) if not (respond and e[0][:1] == ("id",))]
            picked += [(b, b) for b in rng.sample(bases, min(len(bases), PER_KIND // 2))]
            picked += [(b, mutant(b, e)) for b, e in rng.sample(pool, min(len(pool), PER_KIND // 2))]
    return picked


def expected_refusal(spec: SpecSchema, case: Case) -> bool:
    return not spec.verdict(case) or spec.unsupported(case)


def refused(spec: SpecSchema, case: Case, code: str | None) -> bool:
    """Whether ``code`` (the slug a process gave ``case``) is a refusal by the schema check."""
    if code in SCHEMA_REFUSALS:
        return True
    if code != "method_not_found" or not isinstance(case.frame, dict):
        return False
    table = spec.requests if "id" in case.frame else spec.notifications
    return (case.direction, case.frame.get("method")) not in table  # else: defined, and not served


def tally(spec: SpecSchema, verdicts: Sequence[tuple[Case, bool]]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for case, project_refused in verdicts:
        expected = expected_refusal(spec, case)
        counts[f"frames {case.direction}"] += 1
        if expected and not project_refused:
            counts[f"false_accept {case.direction}"] += 1
        elif project_refused and not expected:
            counts[f"false_reject {case.direction}"] += 1
    return counts


def report(capsys: pytest.CaptureFixture[str], version: str, where: str, counts: Counter[str]) -> None:
    shown = " ".join(f"{key.replace(' ', ':')}={counts[key]}" for key in sorted(counts))
    with capsys.disabled():
        print(f"\nexactness {version} {where}: {shown}")


def frame_events(log_dir: Path) -> list[dict[str, Any]]:
    [log] = list(log_dir.rglob("*.jsonl"))
    return [event for event in read_events(log) if event["event"] == "frame"]


def error_code(event: dict[str, Any]) -> str | None:
    return None if event["error"] is None else str(event["error"]["code"])


def handshake_frames(version: str) -> list[dict[str, Any]]:
    if version == VERSIONS[-1]:
        return []
    return [{**initialize_frame(version), "id": "init"}, {"jsonrpc": "2.0", "method": "notifications/initialized"}]


# --- serve over STDIO ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_serve_gives_the_official_verdict_on_a_sample_of_client_frames(
    version: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24: `mcp-server serve` over STDIO refuses exactly the client frames the schema refuses."""
    spec = SpecSchema(version)
    cases = [case for _, case in sample(spec, [C2S], ["request", "notification"])]
    opening = handshake_frames(version)
    frames = [json.dumps(f).encode() for f in opening] + [case.raw for case in cases]
    runs = tmp_path / "runs"
    replay_stdio(tmp_path, frames, MCP_RUNS_DIR=str(runs))
    events = [
        e for e in frame_events(runs) if e["direction"] == C2S and not str(e["request_id"]).startswith("replay-sync-")
    ]  # the log has an event per frame and direction: a reply is an event of its own
    assert len(events) == len(frames)
    judged = zip(cases, events[len(opening) :], strict=True)
    verdicts = [(case, refused(spec, case, error_code(event))) for case, event in judged]
    counts = tally(spec, verdicts)
    report(capsys, version, "serve", counts)
    assert {k: n for k, n in counts.items() if not k.startswith("frames")} == {}


# --- the gateway, both directions ------------------------------------------------------------------


class Steps:
    """What the test client sends through the gateway, and what the scripted upstream answers, per step."""

    def __init__(self, spec: SpecSchema) -> None:
        self.spec = spec
        self.sends: list[list[tuple[dict[str, Any] | bytes, Any]]] = []  # per step: (frame, id to await or None)
        self.script: list[tuple[Any, list[Any]]] = []
        self.judged: list[Case] = []
        self.valid = {(c.direction, kind_of(c.frame), c.frame.get("method") or c.answers): c for c in spec.valid_cases}

    def _valid(self, direction: str, kind: str, method: str, request_id: Any) -> dict[str, Any]:
        frame = dict(self.valid[(direction, kind, method)].frame)
        frame["id"] = request_id
        return frame

    def _trigger(self, i: int) -> dict[str, Any]:
        """A request of the client the upstream answers (2026-07-28: one that opens a stateless exchange)."""
        if self.spec.version == VERSIONS[-1]:
            return self._valid(C2S, "request", "tools/list", f"trigger-{i}")
        return {"jsonrpc": "2.0", "id": f"trigger-{i}", "method": "ping"}

    def _trigger_reply(self, i: int) -> dict[str, Any]:
        if self.spec.version == VERSIONS[-1]:
            return self._valid(S2C, "response", "tools/list", f"trigger-{i}")
        return {"jsonrpc": "2.0", "id": f"trigger-{i}", "result": {}}

    def add(self, base: Case, case: Case) -> None:
        i = len(self.sends)
        case = disarm(case, f"tool{i}")
        kind = kind_of(base.frame)
        steps: list[tuple[dict[str, Any] | bytes, Any]] = []
        if base.direction == C2S and kind in ("request", "notification"):
            case = fresh_id(case, f"client-{i}")
            frame = case.frame
            if isinstance(frame, dict) and isinstance(frame.get("method"), str) and "id" in frame:
                answered = self.valid.get((S2C, "response", frame["method"]))
                if answered is not None:
                    self.script.append((frame["id"], [{**answered.frame, "id": frame["id"]}]))
            steps.append((case.raw, None))
        elif base.direction == S2C and kind in ("response", "error"):
            steps.append((self._valid(C2S, "request", base.answers or "", f"asked-{i}"), None))
            self.script.append((f"asked-{i}", [{**case.frame, "id": f"asked-{i}"}]))
            case = Case(case.version, case.direction, {**case.frame, "id": f"asked-{i}"}, case.answers, case.origin)
        elif base.direction == S2C:
            case = fresh_id(case, f"server-{i}")  # (nobody answers it: an id of its own, not one in flight)
            self.script.append((f"trigger-{i}", [case.frame, self._trigger_reply(i)]))
            steps.append((self._trigger(i), f"trigger-{i}"))
        else:  # the client's response to a request of the upstream's
            server_request = self._valid(S2C, "request", base.answers or "", f"server-{i}")
            self.script.append((f"trigger-{i}", [server_request, self._trigger_reply(i)]))
            steps.append((self._trigger(i), f"trigger-{i}"))
            case = Case(case.version, case.direction, {**case.frame, "id": f"server-{i}"}, case.answers, case.origin)
            steps.append((case.raw, None))
        steps.append(({"jsonrpc": "2.0", "id": f"sync-{i}", "method": "ping"}, f"sync-{i}"))
        self.sends.append(steps)
        self.judged.append(case)


async def _drive(process: asyncio.subprocess.Process, opening: list[dict[str, Any]], steps: Steps) -> None:
    assert process.stdin is not None and process.stdout is not None
    reader, writer = process.stdout, process.stdin

    async def until(request_id: Any) -> None:
        while True:
            try:
                line = await asyncio.wait_for(reader.readline(), WAIT)
            except TimeoutError:
                raise AssertionError(f"no reply to {request_id!r} from the gateway in {WAIT} s") from None
            assert line, "the gateway closed its stdout"
            message = json.loads(line)
            if message.get("id") == request_id and ("result" in message or "error" in message):
                return

    for frame in opening:
        writer.write(json.dumps(frame).encode() + b"\n")
    if opening:
        await until("init")
    for step in steps.sends:
        for frame, awaited in step:
            writer.write((frame if isinstance(frame, bytes) else json.dumps(frame).encode()) + b"\n")
            await writer.drain()
            if awaited is not None:
                await until(awaited)
    writer.close()
    await asyncio.wait_for(process.wait(), WAIT)


def run_gateway(tmp_path: Path, spec: SpecSchema, steps: Steps) -> list[dict[str, Any]]:
    opening = handshake_frames(spec.version)
    script = list(steps.script)
    if opening:
        server = {"name": "scripted", "version": "1"}
        result = {"protocolVersion": spec.version, "capabilities": {}, "serverInfo": server}
        script.insert(0, ("init", [{"jsonrpc": "2.0", "id": "init", "result": result}]))
    # The upstream lists the tools the corpus calls (any arguments): the gateway refuses a call of a
    # tool its upstream does not list (issue 30 row 9), and the oracle models no tool schema.
    called = {c.frame["params"]["name"] for c in spec.valid_cases if c.direction == C2S and _calls_a_tool(c.frame)}
    tools = [{"name": name, "inputSchema": {"type": "object"}} for name in sorted(called)]
    script_file = tmp_path / "script.json"
    script_file.write_text(json.dumps({"script": script, "tools": tools}))
    runs = tmp_path / "runs"
    env = server_env(tmp_path, MCP_RUNS_DIR=str(runs))

    async def run() -> None:
        process = await asyncio.create_subprocess_exec(
            *server_command()[:-1], "gateway", "--", *SCRIPTED, str(script_file),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            env=env, limit=1 << 24,
        )  # fmt: skip
        await _drive(process, opening, steps)

    asyncio.run(run())
    return frame_events(runs)


def _calls_a_tool(frame: Any) -> bool:
    params = frame.get("params") if isinstance(frame, dict) else None
    return frame.get("method") == "tools/call" and isinstance(params, dict) and isinstance(params.get("name"), str)


def windows(events: list[dict[str, Any]], count: int) -> Iterator[list[dict[str, Any]]]:
    """The frame events of each step: from the previous step's sync ping reply to this one's."""
    start = 0
    for i in range(count):
        end = next(
            n for n, e in enumerate(events) if e["request_id"] == f"sync-{i}" and e["direction"] == S2C and n >= start
        )
        yield events[start:end]
        start = end + 1


@pytest.mark.parametrize("version", VERSIONS)
def test_the_gateway_gives_the_official_verdict_in_both_directions(
    version: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24: the gateway refuses exactly the frames the schema refuses, the client's towards the
    upstream and the upstream's (replies, requests, notifications) towards the client."""
    spec = SpecSchema(version)
    steps = Steps(spec)
    for base, case in sample(spec, [C2S, S2C], ["request", "notification", "response", "error"]):
        if "initialize" not in (base.frame.get("method"), base.answers):  # the session's own, done once
            steps.add(base, case)
    events = run_gateway(tmp_path, spec, steps)
    verdicts = []
    for case, window in zip(steps.judged, windows(events, len(steps.judged)), strict=True):
        codes = [error_code(e) for e in window if e["direction"] == case.direction]
        verdicts.append((case, any(refused(spec, case, code) for code in codes)))
    counts = tally(spec, verdicts)
    report(capsys, version, "gateway", counts)
    assert {k: n for k, n in counts.items() if not k.startswith("frames")} == {}
    assert counts[f"frames {OPPOSITE[C2S]}"] > 0 and counts[f"frames {C2S}"] > 0


# --- check on a capture ----------------------------------------------------------------------------


def capture_lines(spec: SpecSchema, pairs: Sequence[tuple[Case, Case]]) -> list[bytes]:
    """``{direction, frame}`` lines: each case, after the request it answers when it is a response."""
    requests = {(c.direction, c.frame["method"]): c for c in spec.valid_cases if kind_of(c.frame) == "request"}
    lines = []
    for i, (_, case) in enumerate(pairs):
        case = disarm(case, f"tool{i}")
        if case.answers is not None:
            asked = requests[(OPPOSITE[case.direction], case.answers)]
            # Each request its own id: an answer under the oracle's id answers its own request; one its
            # mutation left without an id, or gave another, answers none or that one, as before.
            if case.frame.get("id") == ID:
                case = fresh_id(case, f"asked-{i}")
            frame = {**asked.frame, "id": case.frame.get("id", f"asked-{i}")}
            lines.append(json.dumps({"direction": asked.direction, "frame": frame}).encode())
        else:
            case = fresh_id(case, f"case-{i}")  # (a request nobody answers: an id of its own)
        lines.append(json.dumps({"direction": case.direction, "frame": case.frame}).encode())
    return lines


def check_violations(tmp_path: Path, name: str, version: str, lines: list[bytes]) -> int:
    capture = tmp_path / f"{name}.ndjson"
    capture.write_bytes(b"\n".join(lines) + b"\n")
    run = subprocess.run(
        [*server_command()[:-1], "check", "--format", "json", "--version", version, str(capture)],
        capture_output=True,
        env=server_env(tmp_path),
        timeout=120,
    )
    assert run.returncode in (0, 1), run.stderr.decode()
    violations = json.loads(run.stdout)["violations"]
    # check has no router: its method_not_found is always the schema's (a method the version lacks).
    return sum(n for rule, n in violations.items() if rule in SCHEMA_REFUSALS or rule == "method_not_found")


@pytest.mark.parametrize("version", VERSIONS)
def test_check_gives_the_official_verdict_on_a_capture_of_both_directions(
    version: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24: `mcp-server check` counts a violation for exactly the frames the schema refuses."""
    spec = SpecSchema(version)
    pairs = [
        (base, case)
        for base, case in sample(spec, [C2S, S2C], ["request", "notification", "response", "error"])
        if not spec.unsupported(case)  # a version check of the live protocol, not of a capture's frames
    ]
    valid = [(b, c) for b, c in pairs if not expected_refusal(spec, c)]
    invalid = [(b, c) for b, c in pairs if expected_refusal(spec, c)]
    false_rejects = check_violations(tmp_path, "valid", version, capture_lines(spec, valid))
    caught = check_violations(tmp_path, "invalid", version, capture_lines(spec, invalid))
    counts = Counter({"frames": len(pairs), "false_reject": false_rejects, "false_accept": len(invalid) - caught})
    report(capsys, version, "check", counts)
    assert false_rejects == 0 and caught == len(invalid)
