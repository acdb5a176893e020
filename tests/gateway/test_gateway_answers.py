"""What real clients hit (issue 18): pipelined frames, replies in order, every request answered.

Real processes: the gateway as a subprocess, real upstreams (the SDK's, and the raw broken one),
raw NDJSON and HTTP clients and the official `mcp` SDK client in front.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from mcp_server.core.errors import CanonicalError

from ..conftest import ROOT, initialize_frame, server_env
from .gateways import (
    BROKEN_UPSTREAM,
    HEADERS,
    SDK_UPSTREAM,
    WAIT,
    Peer,
    body_of,
    gateway_command,
    handshake,
    http_gateway,
    initialize,
    report_of,
    rpc,
)

ELICIT_UPSTREAM = [sys.executable, str(ROOT / "tests" / "upstreams" / "elicit_server.py")]
PAGED_UPSTREAM = [*BROKEN_UPSTREAM, "--pages"]


def call(request_id: int, name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def one_write(*frames: dict[str, Any]) -> bytes:
    """Frames as one write of NDJSON (the last newline is the peer's)."""
    return b"\n".join(json.dumps(frame).encode() for frame in frames)


def receive_all(peer: Peer, count: int) -> list[dict[str, Any]]:
    return [peer.receive() for _ in range(count)]


def refused_arguments(reply: dict[str, Any]) -> list[str]:
    """The paths of the gateway's own INVALID_TOOL_INPUT answer (2025-11-25: a tool result; its text,
    as structured content only where the tool's outputSchema takes it: issue 29)."""
    assert reply["result"]["isError"] is True, reply
    structured = reply["result"].get("structuredContent") or json.loads(reply["result"]["content"][0]["text"])
    return [error["path"] for error in structured["errors"]]


def test_calls_pipelined_behind_their_tools_list_are_checked_after_it_and_each_answered_when_it_exists(
    tmp_path: Path,
) -> None:
    """Issue 18: a tools/call sent in the same write as the tools/list that describes its tool waits
    for that list and is checked; issue 29: the gateway's refusal then waits for no other reply."""
    peer = Peer(tmp_path)
    handshake(peer, "2025-11-25")
    peer.send(
        one_write(
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            call(3, "add", a=1, b=2),
            call(4, "echo", text="x"),
            call(5, "add", a="one", b=2),
        )
    )
    replies = {reply["id"]: reply for reply in receive_all(peer, 4)}
    assert next(iter(replies)) == 2 and set(replies) == {2, 3, 4, 5}  # the calls depend on the list
    assert refused_arguments(replies[5]) == ["/a"]  # the gateway's answer: the call never went on
    assert peer.finish()[0] == 0
    report = report_of(tmp_path)
    assert report["violations"] == {"invalid_tool_input": 1}
    assert report["frames"]["server_to_client"]["tools/call"] == 2


def test_a_whole_session_sent_in_one_write_is_checked_in_order_and_each_answered_when_it_exists(
    tmp_path: Path,
) -> None:
    """Issue 18: initialize, initialized, tools/list and calls in one write: the frames behind the
    pending initialize wait for its reply (the version decides how they are checked), then go in
    order; issue 29: each answer leaves as soon as it exists."""
    peer = Peer(tmp_path)
    peer.send(
        one_write(
            initialize_frame("2025-11-25", 1),
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            call(3, "add", a=1, b=2),
            call(4, "echo", text="x"),
            call(5, "add", a="one", b=2),
        )
    )
    replies = {reply["id"]: reply for reply in receive_all(peer, 5)}
    assert list(replies)[:2] == [1, 2] and set(replies) == {1, 2, 3, 4, 5}
    assert replies[1]["result"]["protocolVersion"] == "2025-11-25"
    assert {tool["name"] for tool in replies[2]["result"]["tools"]} == {"add", "echo", "fail"}
    assert refused_arguments(replies[5]) == ["/a"]
    assert peer.finish()[0] == 0
    report = report_of(tmp_path)
    assert report["violations"] == {"invalid_tool_input": 1}
    assert report["frames"]["server_to_client"]["tools/call"] == 2


def test_a_call_before_any_tools_list_is_checked_against_the_list_the_gateway_fetched_itself(tmp_path: Path) -> None:
    """Issue 18: with no tools/list pending, the gateway asks the upstream itself (every page, under
    an id of its own, never shown to the client); issue 30 row 9: a tool the whole list does not name
    is refused (`tool_not_found`, enforce mode) and never forwarded, reported as the client's."""
    peer = Peer(tmp_path, upstream=PAGED_UPSTREAM)
    handshake(peer, "2025-11-25")
    bad = peer.call(call(2, "strict", n="seven"))  # `strict` is on the third page
    assert bad["id"] == 2 and refused_arguments(bad) == ["/n"]
    fine = peer.call(call(3, "strict", n=7))
    assert fine == {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "ok"}]}}
    unknown = peer.call(call(4, "nope"))
    assert unknown["id"] == 4 and unknown["error"]["code"] == CanonicalError.TOOL_NOT_FOUND.mcp_code
    assert peer.finish()[0] == 0
    report = report_of(tmp_path)
    assert report["frames"]["server_to_client"]["tools/list"] == 4  # one fetch, four pages; then the list is whole
    assert "tools/list" not in report["frames"]["client_to_server"]
    assert report["frames"]["server_to_client"]["tools/call"] == 1  # the valid call only went on
    assert report["violations"]["invalid_tool_input"] == 1 and report["violations"]["tool_not_found"] == 1
    assert report["violations_by_party"]["tool_not_found"] == {"client": 1}


def test_observe_mode_forwards_a_call_of_a_tool_it_could_not_learn_and_reports_it(tmp_path: Path) -> None:
    """Issue 18: in observe mode a call the gateway could not check (the list never came within the
    wait) is forwarded, and reported."""
    (tmp_path / "gateway.json").write_text(json.dumps({"check_wait_seconds": 0.2}))
    peer = Peer(
        tmp_path,
        "--mode",
        "observe",
        "--config",
        str(tmp_path / "gateway.json"),
        upstream=[*BROKEN_UPSTREAM, "--mute-list"],
    )
    handshake(peer, "2025-11-25")
    forwarded = peer.call(call(2, "nope"))
    assert forwarded["result"]["content"][0]["text"] == "ok"  # the upstream's own answer
    peer.finish()
    report = report_of(tmp_path)
    assert report["violations"]["tool_not_found"] == 1
    assert report["violations_by_party"]["tool_not_found"] == {"client": 1}


def test_a_call_waits_no_longer_than_the_check_wait_for_a_list_that_never_comes(tmp_path: Path) -> None:
    """Issue 18: the wait for a tool's schema is bounded (`check_wait_seconds`); then the call is a
    tool the gateway cannot check: refused, never passed on unchecked."""
    (tmp_path / "gateway.json").write_text(json.dumps({"check_wait_seconds": 0.5}))
    peer = Peer(tmp_path, "--config", str(tmp_path / "gateway.json"), upstream=[*BROKEN_UPSTREAM, "--mute-list"])
    handshake(peer, "2025-11-25")
    began = time.monotonic()
    refused = peer.call(call(2, "strict", n=1))
    assert 0.5 <= time.monotonic() - began < WAIT
    assert refused["error"]["code"] == CanonicalError.TOOL_NOT_FOUND.mcp_code
    peer.finish()
    assert "tools/call" not in report_of(tmp_path)["frames"].get("server_to_client", {})


def test_a_gateway_refusal_does_not_wait_for_the_upstreams_reply_to_an_earlier_request(tmp_path: Path) -> None:
    """Issue 29 (no head-of-line blocking; issue 18 held it back): an answer the gateway makes itself
    leaves at once, before the upstream's reply to an earlier request (`deferred` is answered only
    when the upstream reads on, here the ping after it)."""
    peer = Peer(tmp_path, upstream=BROKEN_UPSTREAM)
    handshake(peer, "2025-11-25")
    assert peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["id"] == 2
    peer.send(one_write(call(3, "deferred"), call(4, "strict", n="x"), {"jsonrpc": "2.0", "id": 5, "method": "ping"}))
    replies = receive_all(peer, 3)
    assert [reply["id"] for reply in replies] == [4, 3, 5]
    assert replies[0]["result"]["isError"] is True
    assert peer.finish()[0] == 0


def test_a_request_the_client_cancels_is_settled_and_the_late_reply_is_dropped(tmp_path: Path) -> None:
    """Issue 18 / spec basic/utilities/cancellation: a cancelled request is no violation, and a reply
    that crosses the cancellation is not delivered."""
    peer = Peer(tmp_path, upstream=BROKEN_UPSTREAM)
    handshake(peer, "2025-11-25")
    peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    peer.send(call(3, "late"))
    peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3, "reason": "no"}})
    assert peer.call({"jsonrpc": "2.0", "id": 4, "method": "ping"})["id"] == 4  # not the late reply to 3
    assert peer.finish()[0] == 0
    report = report_of(tmp_path)
    assert report["violations"].get("unknown_response_id") is None
    assert [(entry["id"], entry["reason"]) for entry in report["unanswered"]] == [(3, "client_cancelled")]


def test_a_client_that_closes_its_input_with_a_call_pending_cancels_it_upstream_without_a_violation(
    tmp_path: Path,
) -> None:
    """Issue 18: a STDIO client's end of input ends its pending requests: the upstream gets
    notifications/cancelled, the client no error, the report a cancellation and no violation."""
    (tmp_path / "gateway.json").write_text(json.dumps({"grace_seconds": 0.5}))
    peer = Peer(tmp_path, "--config", str(tmp_path / "gateway.json"), upstream=BROKEN_UPSTREAM)
    handshake(peer, "2025-11-25")
    peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    peer.send(call(3, "hang"))
    status, stderr = peer.finish()
    assert status == 0, stderr
    assert 'cancelled {"requestId": 3, "reason": "client closed"}' in stderr
    report = report_of(tmp_path)
    assert report["violations"] == {"invalid_tool_schema": 1}  # the broken upstream's list, nothing more
    assert [(entry["id"], entry["reason"]) for entry in report["unanswered"]] == [(3, "client_closed")]


def _echo_defaults(properties: dict[str, Any]) -> dict[str, Any]:
    return {key: value["default"] for key, value in properties.items()}


def _label_left_empty(properties: dict[str, Any]) -> dict[str, Any]:
    """The defaults, the label sent as `null` (the SDK's types allow it; ElicitResult does not)."""
    return {**_echo_defaults(properties), "label": None}


@pytest.mark.parametrize("front", ["stdio", "http"])
def test_an_invalid_elicitation_reply_is_answered_to_the_upstream_in_enforce_mode(tmp_path: Path, front: str) -> None:
    """Issue 18: the SDK client answers a field left empty with `null`, which ElicitResult's content
    does not allow; the upstream gets CLIENT_INVALID_REPLY for its request instead of waiting forever."""
    outcome, report = _configure_through_the_gateway(tmp_path, "enforce", front, _label_left_empty)
    assert outcome["error_code"] == CanonicalError.CLIENT_INVALID_REPLY.mcp_code
    assert outcome["rule"] == CanonicalError.INVALID_PARAMS.slug
    assert report["violations"] == {"invalid_params": 1}
    assert report["violations_by_party"] == {"invalid_params": {"client": 1}}
    assert report["violations_by_method"] == {"invalid_params": {"elicitation/create (response)": 1}}
    [example] = report["examples"]["invalid_params"]
    assert example["party"] == "client" and example["direction"] == "client_to_server"
    assert example["errors"][0]["path"] == "/result/content/label"


def test_an_invalid_elicitation_reply_is_forwarded_and_reported_in_observe_mode(tmp_path: Path) -> None:
    """Issue 18: observe mode forwards the client's reply and reports it as the client's fault."""
    outcome, report = _configure_through_the_gateway(tmp_path, "observe", "stdio", _label_left_empty)
    assert outcome["ratio"] == 3.14 and outcome["error_code"] is None
    assert report["violations_by_party"] == {"invalid_params": {"client": 1}}


def test_a_fractional_elicitation_reply_passes_the_gateway_in_enforce_mode(tmp_path: Path) -> None:
    """ADR 41 (schema.ts's ElicitResult content is `string | number | …`; the published JSON said
    integer): the SDK client echoing the fractional default reaches the upstream, no violation."""
    outcome, report = _configure_through_the_gateway(tmp_path, "enforce", "stdio", _echo_defaults)
    assert outcome["ratio"] == 3.14 and outcome["error_code"] is None
    assert report["violations"] == {}


def _configure_through_the_gateway(
    tmp_path: Path, mode: str, front: str, answer: Callable[[dict[str, Any]], dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The SDK client calls `configure` through the gateway (its STDIO or its HTTP front), its
    elicitation callback accepting with ``answer(properties)`` as the content."""

    async def accept(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content=answer(params.requested_schema["properties"]))

    async def session(server: StdioServerParameters | str) -> dict[str, Any]:
        async with Client(server, mode="legacy", read_timeout_seconds=WAIT, elicitation_callback=accept) as client:
            result = await client.call_tool("configure", {})
            assert result.is_error is False
            return dict(result.structured_content or {})

    if front == "http":
        with http_gateway(tmp_path, "--mode", mode, upstream=ELICIT_UPSTREAM) as gateway:
            outcome = asyncio.run(asyncio.wait_for(session(gateway.url), WAIT))
    else:
        command = gateway_command("--mode", mode, upstream=ELICIT_UPSTREAM)
        env = server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"))
        parameters = StdioServerParameters(command=command[0], args=command[1:], env=env)
        outcome = asyncio.run(asyncio.wait_for(session(parameters), WAIT))
    return outcome, report_of(tmp_path)


def test_a_bad_params_ping_is_filed_under_ping(tmp_path: Path) -> None:
    """Issue 18: a refused client request is filed under its own method, not under `(response)`."""
    peer = Peer(tmp_path)
    handshake(peer, "2025-11-25")
    refused = peer.call({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": "x"})
    assert refused["error"]["code"] == CanonicalError.INVALID_ENVELOPE.mcp_code
    peer.finish()
    report = report_of(tmp_path)
    assert report["violations_by_method"] == {"invalid_envelope": {"ping": 1}}
    assert report["frames"]["client_to_server"]["ping"] == 1


# -- the HTTP front -----------------------------------------------------------------------------


def test_a_call_over_http_before_any_tools_list_is_checked(tmp_path: Path) -> None:
    """Issue 18: on the HTTP front a call of a tool not yet listed waits for the gateway's own
    tools/list and is checked; the invalid one never reaches the upstream."""
    with http_gateway(tmp_path, upstream=SDK_UPSTREAM) as gateway, httpx.Client(timeout=WAIT) as client:
        headers = {**HEADERS, "Mcp-Session-Id": initialize(client, gateway.url)}
        bad = body_of(
            client.post(
                gateway.url,
                json=rpc(1, "tools/call", {"name": "add", "arguments": {"a": "x", "b": 1}}),
                headers=headers,
            )
        )
        assert bad["id"] == 1 and refused_arguments(bad) == ["/a"]
        good = body_of(
            client.post(
                gateway.url, json=rpc(2, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 1}}), headers=headers
            )
        )
        assert good["result"]["structuredContent"] == {"total": 3}
    report = report_of(tmp_path)
    assert report["violations"] == {"invalid_tool_input": 1}
    assert report["frames"]["server_to_client"]["tools/call"] == 1


def test_the_official_client_closing_its_http_session_after_a_cancelled_call_does_not_raise(tmp_path: Path) -> None:
    """Issue 18: a call the SDK client gave up on (it sends notifications/cancelled) is settled; the
    client's close (DELETE) is clean and no violation is counted."""

    async def session(url: str) -> None:
        async with Client(url, mode="legacy", read_timeout_seconds=WAIT) as client:
            await client.list_tools()
            with contextlib.suppress(TimeoutError):  # the SDK cancels the call it gave up on
                await asyncio.wait_for(client.call_tool("hang", {}), 0.5)
            assert (await client.call_tool("strict", {"n": 1})).content[0].text == "ok"

    with http_gateway(tmp_path, upstream=BROKEN_UPSTREAM) as gateway:
        asyncio.run(asyncio.wait_for(session(gateway.url), WAIT))
    report = report_of(tmp_path)
    assert report["violations"] == {"invalid_tool_schema": 1}  # the broken upstream's list, nothing more
    assert [entry["reason"] for entry in report["unanswered"]] == ["client_cancelled"]


class _Lines:
    """A process's stderr lines, read in a thread, awaited with a bound."""

    def __init__(self, stream: Any) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.stream = stream
        self.reader = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.reader.start()

    def _read(self, stream: Any) -> None:
        try:
            for line in stream:
                self.lines.put(line.decode("utf-8", "replace"))
        except ValueError:  # closed under the reader when the gateway is stopped
            return

    def wait_for(self, fragment: str) -> None:
        deadline = time.monotonic() + WAIT
        while not any(fragment in line for line in self.seen):
            self.seen.append(self.lines.get(timeout=max(0.0, deadline - time.monotonic())))

    def next(self) -> str:
        """The next line, within the bound."""
        return self.lines.get(timeout=WAIT)


def test_an_http_client_that_ends_its_session_with_a_call_pending_cancels_it_upstream(tmp_path: Path) -> None:
    """Issue 18: DELETE with a request pending: the upstream gets notifications/cancelled, the report
    counts a cancellation, not `upstream_unavailable`."""
    with http_gateway(tmp_path, upstream=BROKEN_UPSTREAM) as gateway, httpx.Client(timeout=WAIT) as client:
        assert gateway.process.stderr is not None
        stderr = _Lines(gateway.process.stderr)
        session_id = initialize(client, gateway.url)
        headers = {**HEADERS, "Mcp-Session-Id": session_id}
        client.post(gateway.url, json=rpc(1, "tools/list"), headers=headers)
        outcome: list[httpx.Response] = []
        hung = threading.Thread(
            target=lambda: outcome.append(
                client.post(gateway.url, json=rpc(2, "tools/call", {"name": "hang", "arguments": {}}), headers=headers)
            )
        )
        hung.start()
        stderr.wait_for("hanging 2")
        assert client.delete(gateway.url, headers={"Mcp-Session-Id": session_id}).status_code == 204
        hung.join(WAIT)
        assert outcome and outcome[0].status_code == 202 and not outcome[0].content  # no error for the closer
        stderr.wait_for('cancelled {"requestId": 2, "reason": "client closed"}')
    report = report_of(tmp_path)
    assert "upstream_unavailable" not in report["violations"]
    assert [(entry["id"], entry["reason"]) for entry in report["unanswered"]] == [(2, "client_closed")]


def test_the_report_breaks_http_sessions_down_and_names_the_party_at_fault(tmp_path: Path) -> None:
    """Issue 18: one entry per HTTP session with its own counts (the totals kept), each violation
    naming the party at fault; `mcp-server report` prints them."""
    with http_gateway(tmp_path, upstream=BROKEN_UPSTREAM) as gateway, httpx.Client(timeout=WAIT) as client:
        first = {**HEADERS, "Mcp-Session-Id": initialize(client, gateway.url)}
        second = {**HEADERS, "Mcp-Session-Id": initialize(client, gateway.url)}
        client.post(gateway.url, json=rpc(1, "tools/call", {"name": "strict", "arguments": {"n": "x"}}), headers=first)
        client.post(gateway.url, json=rpc(1, "tools/call", {"name": "bad_result", "arguments": {}}), headers=second)
    report = report_of(tmp_path)
    sessions = report["sessions"]
    assert len(sessions) == 2 and all(entry["transport"] == "http" for entry in sessions)
    by_id = {entry["id"]: entry for entry in sessions}
    mine = by_id[first["Mcp-Session-Id"]]
    theirs = by_id[second["Mcp-Session-Id"]]
    assert mine["violations_by_party"] == {"invalid_tool_input": {"client": 1}, "invalid_tool_schema": {"upstream": 1}}
    assert theirs["violations_by_party"] == {"invalid_params": {"upstream": 1}, "invalid_tool_schema": {"upstream": 1}}
    assert report["violations"] == {"invalid_params": 1, "invalid_tool_input": 1, "invalid_tool_schema": 2}
    [path] = sorted((tmp_path / "runs").rglob("*-report.json"))
    printed = subprocess.run(
        [sys.executable, "-m", "mcp_server", "report", str(path)],
        capture_output=True,
        timeout=WAIT,
        env=server_env(tmp_path),
    ).stdout.decode()
    assert f"session {first['Mcp-Session-Id']} (http)" in printed
    assert "invalid_tool_input: 1 (client)" in printed


def test_a_gateway_stopped_with_a_call_pending_answers_it_without_blaming_the_upstream(tmp_path: Path) -> None:
    """Issue 18: SIGTERM with a request pending: the client still gets an answer (retryable
    UPSTREAM_UNAVAILABLE), the upstream a cancellation, and the report no violation for it."""
    peer = Peer(tmp_path, upstream=BROKEN_UPSTREAM)
    handshake(peer, "2025-11-25")
    peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    peer.send(call(3, "hang"))
    assert peer.process.stderr is not None
    stderr = _Lines(peer.process.stderr)
    stderr.wait_for("hanging 3")
    peer.process.send_signal(signal.SIGTERM)
    answer = peer.receive()
    assert answer["id"] == 3 and answer["error"]["code"] == CanonicalError.UPSTREAM_UNAVAILABLE.mcp_code
    assert peer.process.wait(WAIT) == 0
    stderr.wait_for('cancelled {"requestId": 3, "reason": "gateway stopped"}')
    stderr.reader.join(WAIT)  # the gateway exited: its stderr is at its end
    for stream in (peer.process.stdin, peer.process.stdout, stderr.stream):
        assert stream is not None
        stream.close()
    report = report_of(tmp_path)
    assert "upstream_unavailable" not in report["violations"]
    assert [(entry["id"], entry["reason"]) for entry in report["unanswered"]] == [(3, "gateway_stopped")]


def test_a_request_the_upstream_never_answers_gets_a_retryable_error_and_is_cancelled_upstream(tmp_path: Path) -> None:
    """Issue 20: the gateway's default per-request timeout (`request_timeout_seconds`): a request the
    upstream never answers gets the client UPSTREAM_TIMEOUT (retryable) and the upstream
    notifications/cancelled, and the requests behind it are not held."""
    (tmp_path / "gateway.json").write_text(json.dumps({"request_timeout_seconds": 0.5}))
    peer = Peer(tmp_path, "--config", str(tmp_path / "gateway.json"), upstream=BROKEN_UPSTREAM)
    handshake(peer, "2025-11-25")
    peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert peer.process.stdout is not None and peer.process.stderr is not None and peer.process.stdin is not None
    replies, stderr = _Lines(peer.process.stdout), _Lines(peer.process.stderr)
    peer.send(call(3, "hang"))
    stderr.wait_for("hanging 3")
    peer.send(call(4, "strict", n=1))
    behind = json.loads(replies.next())
    assert behind["id"] == 4 and behind["result"]["content"][0]["text"] == "ok"  # not held behind the hung call
    timed_out = json.loads(replies.next())
    assert timed_out["id"] == 3 and timed_out["error"]["code"] == CanonicalError.UPSTREAM_TIMEOUT.mcp_code
    assert timed_out["error"]["data"]["retryable"] is True and CanonicalError.UPSTREAM_TIMEOUT.retryable
    stderr.wait_for('cancelled {"requestId": 3, "reason": "timeout"}')
    peer.process.stdin.close()
    assert peer.process.wait(WAIT) == 0
    for lines in (replies, stderr):
        lines.reader.join(WAIT)  # the pipe's end: read to the last line
        lines.stream.close()
    report = report_of(tmp_path)
    assert report["violations"]["upstream_timeout"] == 1
    assert report["violations_by_party"]["upstream_timeout"] == {"upstream": 1}
