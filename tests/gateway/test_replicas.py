"""Gateway replicas behind a real load balancer (issue 21): HAProxy from the distribution's packages
with the repository's `deploy/haproxy/haproxy.cfg`, three `gateway --listen http://…` replicas on
loopback, each with STDIO upstreams of its own, and the official `mcp` SDK client in front.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
from mcp import types
from mcp.client.client import Client
from mcp.shared.exceptions import MCPError

from mcp_server.core.errors import CanonicalError

from ..conftest import server_env
from ..node_tools import CONFORMANCE, CONFORMANCE_NEXT, node_command
from ..processes import UPSTREAMS, children_of, forked_server, free_port
from .authorization import authorization_server
from .clients import oauth_provider, official_client, sdk_session
from .conformance import SuiteRun, results_file, run_suite
from .gateways import (
    APPROVAL_POLICY,
    HEADERS,
    SDK_UPSTREAM,
    STATELESS_HEADERS,
    body_of,
    http_gateway,
    report_of,
    rpc,
    stateless_call,
)
from .replicas import KEY, REPLICAS, all_gone, balanced

WAIT = 60.0
VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")


async def _calls(session: Any, tag: str, rounds: range) -> list[str]:
    """Calls whose answers carry this session's own tag (echoed text, sums): another's answer shows."""
    seen = []
    for step in rounds:
        echoed = await session.call_tool("echo", {"text": f"{tag}-{step}"})
        added = await session.call_tool("add", {"a": step, "b": len(tag)})
        seen.append(f"{echoed.content[0].text}|{added.structured_content['total']}")
    return seen


def _expected(tag: str, rounds: range) -> list[str]:
    return [f"{tag}-{step}|{step + len(tag)}" for step in rounds]


async def _sessions(url: str, count: int, opened: asyncio.Event, resume: asyncio.Event) -> list[list[str]]:
    """``count`` SDK client sessions at the versions in turn; each makes its calls, tells ``opened``
    when all are open, waits for ``resume``, then makes more, all at once."""
    ready: list[int] = []
    # A few handshakes at a time: each stateful one starts an upstream on its replica, and two loaded
    # cores start 30 of them slower than a request's timeout.
    opening = asyncio.Semaphore(4)

    async def one(index: int) -> list[str]:
        version = VERSIONS[index % len(VERSIONS)]
        tag = f"s{index}-{version}"
        async with AsyncExitStack() as stack:
            async with opening:
                session = await stack.enter_async_context(sdk_session(url, version, []))
                first = await _calls(session, tag, range(2))
            ready.append(index)
            if len(ready) == count:
                opened.set()
            await resume.wait()
            return first + await _calls(session, tag, range(2, 4))

    return list(await asyncio.gather(*(one(index) for index in range(count))))


def test_thirty_sdk_sessions_at_five_versions_through_the_load_balancer_are_all_answered(
    tmp_path: Path, sdk_forks: list[str]
) -> None:
    """Issue 21: 30 concurrent sessions of the official client (2024-11-05 … 2026-07-28) through HAProxy
    spread over three replicas, each stateful session on the replica that owns its upstream: every
    call is answered with what only its own session's calls could give."""
    with balanced(tmp_path, upstream=sdk_forks) as pool:
        spread: list[int] = []

        async def run() -> list[list[str]]:
            opened, resume = asyncio.Event(), asyncio.Event()
            sessions = asyncio.ensure_future(_sessions(pool.url, 30, opened, resume))
            await asyncio.wait_for(opened.wait(), 3 * WAIT)  # 24 Python upstreams to start on two cores
            spread.extend(len(upstreams) for upstreams in pool.upstreams())
            resume.set()
            return await asyncio.wait_for(sessions, WAIT)

        answers = asyncio.run(run())
    for index, seen in enumerate(answers):
        assert seen == _expected(f"s{index}-{VERSIONS[index % len(VERSIONS)]}", range(4))
    # 24 stateful sessions (an upstream each, on the replica that opened it) and the shared stateless
    # upstream of each replica (the 2026-07-28 requests went round-robin over all three).
    assert sum(spread) == 24 + REPLICAS and min(spread) >= 2, spread


def test_a_replica_killed_mid_run_costs_only_its_own_sessions_a_reinitialise(tmp_path: Path) -> None:
    """Issue 21 / spec (transports: session management): after `kill -9` of one replica its sessions
    get 404 (UNKNOWN_SESSION) from a surviving replica, and a client that re-initialises carries on;
    the other replicas' sessions lose nothing; the killed replica's upstreams do not outlive it."""
    with balanced(tmp_path) as pool:
        outcomes: list[str] = []

        async def one(index: int, opened: asyncio.Event, resume: asyncio.Event, ready: list[int]) -> None:
            version = VERSIONS[index % 4]  # the stateful versions: a session on one replica
            tag = f"k{index}"
            async with sdk_session(pool.url, version, []) as session:
                assert await _calls(session, tag, range(1)) == _expected(tag, range(1))
                ready.append(index)
                if len(ready) == 12:
                    opened.set()
                await resume.wait()
                try:
                    seen = await _calls(session, tag, range(1, 3))
                except MCPError as lost:
                    assert lost.error.code == CanonicalError.UNKNOWN_SESSION.mcp_code
                    outcomes.append("reinitialised")
                    async with sdk_session(pool.url, version, []) as again:
                        assert await _calls(again, tag, range(1, 3)) == _expected(tag, range(1, 3))
                    return
            assert seen == _expected(tag, range(1, 3))
            outcomes.append("kept")

        async def run() -> tuple[int, list[str]]:
            opened, resume, ready = asyncio.Event(), asyncio.Event(), []
            sessions = asyncio.gather(*(one(index, opened, resume, ready) for index in range(12)))
            await asyncio.wait_for(opened.wait(), WAIT)
            victim = pool.replicas[0]
            sessions_there = len(victim.children())  # one upstream per stateful session
            orphans = children_of(victim.process.pid)  # its upstreams, and its event log's writer
            victim.process.send_signal(signal.SIGKILL)
            victim.process.wait(WAIT)
            resume.set()
            await asyncio.wait_for(sessions, WAIT)
            return sessions_there, orphans

        lost, orphans = asyncio.run(run())
        assert all_gone(orphans), "a process outlived its killed replica"
    assert lost == 4  # 12 stateful sessions round-robin over three replicas
    assert outcomes.count("reinitialised") == lost and outcomes.count("kept") == 12 - lost


def _post(client: httpx.Client, url: str, frame: dict[str, Any]) -> dict[str, Any]:
    return body_of(client.post(url, json=frame, headers=STATELESS_HEADERS))


def _error_of(answer: dict[str, Any]) -> CanonicalError:
    return next(member for member in CanonicalError if member.mcp_code == answer["error"]["code"])


def test_a_stateless_call_held_on_one_replica_is_carried_out_once_when_approved_through_another(
    tmp_path: Path,
) -> None:
    """Issue 21: a held call's approval is a grant signed with the key the replicas share, bound to
    the call's arguments, the policy version and an expiry: asked on replica A, the retry carrying
    the user's yes is carried out by replica B, once; other arguments, a no, or the same grant again
    are refused with the catalogue's errors; the official client's own retry through HAProxy works."""
    policy = tmp_path / "policy.toml"
    policy.write_text(APPROVAL_POLICY)
    with balanced(tmp_path, "--policy", str(policy), MCP_APPROVAL_KEY=KEY) as pool, httpx.Client(timeout=WAIT) as raw:
        a, b, c = (replica.url for replica in pool.replicas)
        asked = _post(raw, a, stateless_call({"text": "approved once"}))["result"]
        assert asked["resultType"] == "input_required"
        [(key, question)] = asked["inputRequests"].items()
        assert question["method"] == "elicitation/create"
        yes = {"inputResponses": {key: {"action": "accept", "content": {"approve": True}}}}
        no = {"inputResponses": {key: {"action": "accept", "content": {"approve": False}}}}
        grant = {"requestState": asked["requestState"]}
        changed = _post(raw, c, stateless_call({"text": "something else"}, {**grant, **yes}))
        declined = _post(raw, c, stateless_call({"text": "approved once"}, {**grant, **no}))
        carried = _post(raw, b, stateless_call({"text": "approved once"}, {**grant, **yes}))
        again = _post(raw, b, stateless_call({"text": "approved once"}, {**grant, **yes}))
        forgery = {"requestState": "mcp-approval.1.e30.AA", **yes}  # shaped like a grant, signed by nobody
        forged = _post(raw, b, stateless_call({"text": "approved once"}, forgery))
        assert carried["result"]["content"][0]["text"] == "approved once"
        assert [_error_of(answer) for answer in (changed, declined, again, forged)] == [
            CanonicalError.APPROVAL_MISMATCH,
            CanonicalError.APPROVAL_DENIED,
            CanonicalError.APPROVAL_NOT_FOUND,
            CanonicalError.APPROVAL_NOT_FOUND,
        ]
        assert _sdk_call_approved(pool.url) == "through the balancer"
    executed = [report_of(d)["frames"]["server_to_client"].get("tools/call", 0) for d in pool.dirs]
    assert sum(executed) == 2  # the raw call once (on B), the SDK client's once


def _sdk_call_approved(url: str) -> str:
    """The official client at 2026-07-28 through the load balancer: its user approves the held call
    when asked, and the client's own retry (to whichever replica) brings the grant back."""

    async def approve(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"approve": True})

    async def call() -> str:
        async with Client(url, mode="2026-07-28", read_timeout_seconds=WAIT, elicitation_callback=approve) as client:
            result = await client.call_tool("echo", {"text": "through the balancer"})
            return str(result.content[0].text)

    return asyncio.run(asyncio.wait_for(call(), WAIT))


def test_a_weak_or_missing_approval_key_stops_the_gateway_with_exit_2(tmp_path: Path) -> None:
    """Issue 21: a key the replicas cannot safely share (under 32 bytes, an unreadable file) is a
    setup error: exit 2 and one clear line, before anything listens."""
    policy = tmp_path / "policy.toml"
    policy.write_text(APPROVAL_POLICY)
    command = ["-m", "mcp_server", "gateway", "--listen", "http://127.0.0.1:0/mcp", "--policy", str(policy)]
    for variables in ({"MCP_APPROVAL_KEY": "short"}, {"MCP_APPROVAL_KEY_FILE": str(tmp_path / "missing.key")}):
        done = subprocess.run(
            [sys.executable, *command, "--", *SDK_UPSTREAM],
            capture_output=True,
            timeout=WAIT,
            env=server_env(tmp_path, **variables),
        )
        assert done.returncode == 2
        assert b"reason=setup_failed" in done.stderr and b"MCP_APPROVAL_KEY" in done.stderr
        assert b"Traceback" not in done.stderr and done.stdout == b""


def scored(run: SuiteRun) -> dict[str, str]:
    return {scenario: result for scenario, result in run.results.items() if scenario not in run.not_scored}


# What one gateway passes and a pool of replicas may only warn about (a SHOULD of the spec): a tool
# or prompt list changed through one replica's upstream is announced on the listen streams of that
# replica only, each replica having upstreams of its own (ADR 23).
REPLICA_WARNINGS = ("server-stateless",)


def test_the_conformance_suite_through_the_load_balancer_passes_what_one_gateway_passes(tmp_path: Path) -> None:
    """Issue 21: the official conformance suite (release line, and the 2026-07-28 requirement set) run
    once through HAProxy before three replicas gives each scenario the result it has through one gateway
    (`fixtures/conformance/<suite>.json`)."""
    release = node_command(CONFORMANCE, "conformance")
    next_line = node_command(CONFORMANCE_NEXT, "conformance")
    # Replicas of a server share the key that seals its requestState (a retry may reach another one).
    # The target imported once and forked per session, as the conformance runs through one gateway do.
    shared = forked_server(
        UPSTREAMS / "conformance_target.py", "--state-key", "a key the three replicas of the target share"
    )
    with shared as upstream, balanced(tmp_path, "--idle-timeout", "5", upstream=upstream) as pool:
        stateful = run_suite(release, pool.url, tmp_path / "release")
        stateless = run_suite(next_line, pool.url, tmp_path / "2026", "--requirements", "2026-07-28")
    assert stateful.results == json.loads(results_file(CONFORMANCE).read_text())["runs"]["target/gateway"]
    expected = json.loads(results_file(CONFORMANCE_NEXT).read_text())["runs"]["2026-07-28/target/gateway"]
    # The scored scenarios: of those not scored, HAProxy's header normalisation changes a pending one.
    wanted = {s: r for s, r in expected.items() if s not in stateless.not_scored}
    got = scored(stateless)
    for scenario in REPLICA_WARNINGS:  # a warning when the listen and the change met different replicas
        if wanted.get(scenario) == "pass" and got.get(scenario) == "warning":
            got[scenario] = "pass"
    assert got == wanted
    # Every replica took part: sessions opened on each.
    assert all(report_of(d)["frames"]["client_to_server"].get("initialize", 0) > 0 for d in pool.dirs)


def test_a_gateway_holding_calls_without_a_shared_key_says_its_grants_are_its_own(tmp_path: Path) -> None:
    """Issue 21: without MCP_APPROVAL_KEY(_FILE) a replica signs with a key of its own, which its
    peers cannot verify: it says so at start when its policy holds calls."""
    policy = tmp_path / "policy.toml"
    policy.write_text(APPROVAL_POLICY)
    with http_gateway(tmp_path, "--policy", str(policy), upstream=SDK_UPSTREAM) as alone:
        alone.process.send_signal(signal.SIGTERM)
        assert alone.process.stderr is not None
        told = alone.process.stderr.read()
    assert b"MCP_APPROVAL_KEY" in told  # named in that warning only


def test_authentication_through_the_load_balancer_is_the_same_on_every_replica(
    tmp_path: Path, sdk_forks: list[str]
) -> None:
    """Issue 31: replicas checking JWTs of one issuer for the balancer's public URL (`--auth-resource`)
    refuse a request without a token alike (one challenge, whichever replica answers), publish one
    protected resource metadata, and the official client with its OAuth provider authorizes through
    HAProxy and makes calls spread over the replicas."""
    port = free_port()
    public = f"http://127.0.0.1:{port}/mcp"
    with authorization_server(tmp_path) as issuer:
        options = ("--auth", f"jwt:{issuer}", "--auth-resource", public)
        with balanced(tmp_path, *options, upstream=sdk_forks, port=port) as pool, httpx.Client(timeout=WAIT) as raw:
            refusals = [raw.post(pool.url, json=rpc(0, "ping"), headers=HEADERS) for _ in range(REPLICAS)]
            documents = [
                raw.get(public.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")).json()
                for _ in range(REPLICAS)
            ]
            answers = asyncio.run(asyncio.wait_for(_authorized_calls(public, 6), WAIT))
    assert {r.status_code for r in refusals} == {CanonicalError.UNAUTHORIZED.http_status}
    assert len({r.headers["www-authenticate"] for r in refusals}) == 1
    assert (
        documents
        == [{"resource": public, "bearer_methods_supported": ["header"], "authorization_servers": [issuer]}] * 3
    )
    assert answers == [f"call {n}" for n in range(6)]
    # Each session stays on the replica that opened it; the sessions went round-robin over all three.
    opened = [report_of(d)["frames"]["client_to_server"].get("initialize", 0) for d in pool.dirs]
    assert sum(opened) == 6 and min(opened) >= 1, opened


async def _authorized_calls(url: str, count: int) -> list[str]:
    """``count`` sessions of the official client, one OAuth provider (it authorizes once), a call each."""
    provider, _ = oauth_provider(url)
    answers = []
    for number in range(count):
        async with official_client(url, auth=provider) as client:
            result = await client.call_tool("echo", {"text": f"call {number}"})
            answers.append(str(result.content[0].text))  # type: ignore[union-attr]
    return answers
