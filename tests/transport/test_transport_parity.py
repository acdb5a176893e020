"""One pipeline, three transports: a golden script gets equal replies over STDIO, a Unix socket and HTTP."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mcp_server.core import jsonio
from mcp_server.harness.replay import Replayed, load_script, replay_http, replay_socket

from ..servers import replay_stdio, serving

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden"
# The scripts whose expected replies are pinned too (every script's events are, in test_golden.py).
SCRIPTS = sorted(
    s for s in GOLDEN.glob("*.script.jsonl") if s.with_name(s.name.replace(".script.", ".replies.")).exists()
)


def expected_replies(script: Path) -> list[object]:
    replies = script.with_name(script.name.replace(".script.jsonl", ".replies.jsonl"))
    return [jsonio.loads(line) for line in replies.read_text().splitlines()]


def replies(outcomes: list[Replayed]) -> list[object]:
    return [outcome.reply for outcome in outcomes]


def test_there_is_a_golden_script_covering_tools_and_error_paths() -> None:
    """Issue 4: valid calls to every tool, invalid JSON, oversized, wrong params, unknown method, a notification."""
    [script] = [s for s in SCRIPTS if s.name == "serve_session.script.jsonl"]
    text = script.read_text()
    for tool in ("list_schemas", "get_schema", "list_examples", "get_example", "validate_asset", "validate_many"):
        assert f'"name":"{tool}"' in text
    for case in ('"raw":', '"oversized":', "no/such/method", "notifications/progress"):
        assert case in text


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name.split(".")[0])
def test_stdio_socket_and_http_give_the_golden_replies(tmp_path: Path, script: Path) -> None:
    frames = load_script(script)
    expected = expected_replies(script)
    assert len(expected) == len(frames)
    assert replies(replay_stdio(tmp_path, frames)) == expected
    with serving(tmp_path, ["--socket", str(tmp_path / "s" / "mcp.sock")]) as server:
        assert replies(asyncio.run(replay_socket(frames, Path(server.address)))) == expected
    with serving(tmp_path, ["--http", "127.0.0.1:0"]) as server:
        over_http = asyncio.run(replay_http(frames, server.address))
    assert replies(over_http) == expected
    # HTTP status aside, the replies are equal; the status comes from the catalogue (ADR 0013: an
    # error answering a request of a live session travels with 200, a refused HTTP request with 400/413).
    for outcome, reply in zip(over_http, expected, strict=True):
        if reply is None:
            assert outcome.status == 202
        elif "result" in reply:
            assert outcome.status == 200
        else:
            code = reply["error"]["code"]
            assert outcome.status in {200, 400, 413}, (code, outcome.status)


def test_http_statuses_of_the_golden_error_paths(tmp_path: Path) -> None:
    """Issue 18, ADR 0013 (2025-11-25 rules): parse error, no JSON-RPC envelope and no session 400,
    oversized 413, notification 202; every JSON-RPC error answering a request of the session 200."""
    frames = load_script(GOLDEN / "serve_session.script.jsonl")
    with serving(tmp_path, ["--http", "127.0.0.1:0"]) as server:
        outcomes = asyncio.run(replay_http(frames, server.address))
    status = dict(zip(frames, (outcome.status for outcome in outcomes), strict=True))

    def of(fragment: bytes) -> int | None:
        [found] = [code for frame, code in status.items() if fragment in frame[:200]]
        return found

    assert of(b'"id":3,') == 200 and of(b'"id":9,') == 200  # a result, and a tool result with isError
    assert of(b'{"x":"xxxx') == 413  # oversized, refused without being read whole
    assert of(b'"id":17,') == 400  # invalid JSON
    assert of(b'"id":21,') == 400  # no JSON-RPC 2.0 envelope
    assert of(b'"id":1,') == 400  # a request before the session exists
    assert of(b'"id":18,') == 200  # unknown method: a JSON-RPC error of the session
    assert of(b'"id":19,') == 200 and of(b'"id":15,') == 200  # invalid params
    assert of(b'"id":14,') == 200  # unknown tool
    assert of(b'"id":22,') == 200  # initialize again
    assert of(b"notifications/progress") == 202


@pytest.mark.parametrize(
    ("line", "fragment"),
    [("not json", ":1: not JSON"), ('{"oversized": 3}', "line 1: expected"), ('{"raw": 7}', "line 1: expected")],
)
def test_a_bad_script_line_is_named(tmp_path: Path, line: str, fragment: str) -> None:
    from mcp_server.harness.replay import ReplayError

    script = tmp_path / "bad.script.jsonl"
    script.write_text(line + "\n")
    with pytest.raises(ReplayError, match=fragment):
        load_script(script)
    with pytest.raises(ReplayError, match="cannot read"):
        load_script(tmp_path / "missing.jsonl")
