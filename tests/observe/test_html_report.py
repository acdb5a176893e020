"""The conformance report as an HTML page (issue 23): made from a real gateway run, opened in a real
headless Chromium, compared with the report's JSON."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from mcp.client.stdio import StdioServerParameters

from ..browser import find_chromium, page
from ..conftest import ROOT, server_env
from ..gateway.clients import approve_then_refuse
from ..gateway.gateways import APPROVAL_POLICY, BROKEN_UPSTREAM, WAIT, Peer, gateway_command, handshake, report_of

SECRET = "sk_live_abcdefghijklmnop0123"
HOSTILE = "<script>alert(1)</script>"
POLICY = '[tools]\ndeny = ["die"]\n[methods]\ndeny = ["resources/*"]\n'


def mcp_server(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_server", *arguments],
        capture_output=True,
        text=True,
        timeout=WAIT,
        env=server_env(ROOT),
        stdin=subprocess.DEVNULL,
    )


def call(peer: Peer, request_id: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": tool, "arguments": arguments}
    return peer.call({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


@pytest.fixture(scope="module")
def broken_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A gateway run in front of the broken upstream: bad results, a changed tool, a hostile and a
    secret argument, policy denials. Yields the report the gateway wrote."""
    tmp_path = tmp_path_factory.mktemp("broken-run")
    (tmp_path / "policy.toml").write_text(POLICY)
    peer = Peer(tmp_path, "--policy", str(tmp_path / "policy.toml"), upstream=BROKEN_UPSTREAM)
    handshake(peer, "2025-11-25")
    peer.call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    call(peer, 3, "strict", {"n": HOSTILE})
    call(peer, 4, "strict", {"n": SECRET})
    call(peer, 5, "bad_result", {})
    call(peer, 6, "wrong_structured", {})
    peer.call({"jsonrpc": "2.0", "id": 7, "method": "tools/list"})  # the second list changes a tool
    call(peer, 8, "die", {})
    peer.call({"jsonrpc": "2.0", "id": 9, "method": "resources/list"})
    status, stderr = peer.finish()
    assert status == 0, stderr
    [report] = sorted((tmp_path / "runs" / "mcp_server" / "gateway").glob("*-report.json"))
    yield report


class Counts(HTMLParser):
    """The counts a page shows, read back from its DOM by the ``data-*`` attribute on their rows."""

    def __init__(self) -> None:
        super().__init__()
        self.found: dict[tuple[str, str], str] = {}
        self._open: list[tuple[str, str] | None] = []
        self._cells: list[str] = []
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        keyed = [(name, value or "") for name, value in attrs if name.startswith("data-")]
        if tag == "tr":
            self._open.append(keyed[0] if keyed else None)
            self._cells = []
        elif keyed and tag in ("span", "b"):
            self._open.append(keyed[0])
            self._text = ""
        if tag == "td":
            self._text = ""

    def handle_data(self, data: str) -> None:
        self._text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._cells.append(self._text.strip())
        elif tag == "tr" and self._open:
            key = self._open.pop()
            if key is not None and len(self._cells) > 1:
                self.found[key] = self._cells[1]
        elif tag in ("span", "b") and self._open and self._open[-1] is not None and self._text:
            key = self._open.pop()
            assert key is not None
            self.found[key] = self._text.strip()


def shown(dom: str) -> dict[tuple[str, str], str]:
    counts = Counts()
    counts.feed(dom)
    return counts.found


def summed(table: dict[str, dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for inner in table.values():
        for key, count in inner.items():
            total[key] = total.get(key, 0) + count
    return total


def test_the_page_in_a_real_browser_shows_the_reports_counts_without_console_errors(
    broken_run: Path, tmp_path: Path
) -> None:
    """Issue 23: the page loads in headless Chromium with no console error, its counts are the
    report's, and a screenshot is written under runs/ for a person to look at."""
    executable, why = find_chromium()
    if executable is None:
        pytest.skip(f"no headless browser: {why}")
    out = tmp_path / "report.html"
    done = mcp_server("report", str(broken_run), "--html", str(out))
    assert done.returncode == 0, done.stderr  # the page was written (issue 29: whatever the run found)
    report = json.loads(broken_run.read_text())
    with page(executable) as browser:
        browser.open(out.as_uri(), 1280)
        dom = browser.dom()
        errors = browser.console_errors()
        shot = ROOT / "runs" / "report-page.png"
        browser.screenshot(shot)
    assert errors == []
    assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 10_000
    counts = shown(dom)
    assert counts[("data-total", "violations")] == str(sum(report["violations"].values()))
    assert counts[("data-total", "frames")] == str(sum(summed(report["frames"]).values()))
    for rule, count in report["violations"].items():
        assert counts[("data-rule", rule)] == str(count)
    for method, count in summed(report["violations_by_method"]).items():
        assert counts[("data-method", method)] == str(count)
    for tool, count in summed(report["violations_by_tool"]).items():
        assert counts[("data-tool", tool)] == str(count)
    assert counts[("data-policy", "denied")] == "denied 2"
    assert {("data-latency", "client_to_server"), ("data-latency", "server_to_client")} <= counts.keys()


def test_the_page_is_self_contained_escaped_and_redacted(broken_run: Path, tmp_path: Path) -> None:
    """Issue 23: one page, no network, no external asset, no script; what the traffic carried is
    escaped, and a secret is redacted as in the logs."""
    out = tmp_path / "report.html"
    assert mcp_server("report", str(broken_run), "--html", str(out)).returncode == 0
    text = out.read_text()
    assert text.startswith("<!DOCTYPE html>")
    assert "<script" not in text.lower()
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", text, re.IGNORECASE)
    assert "http://" not in text and "https://" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text  # the hostile argument, shown as text
    assert SECRET not in text  # neither in the schema's words nor in the frame's excerpt
    excerpts = [example["excerpt"] for example in report_of_run(broken_run)["examples"]["invalid_tool_input"]]
    assert len(excerpts) == 2 and all('"method":"tools/call"' in excerpt for excerpt in excerpts)
    assert "[REDACTED]" in excerpts[1] and "<pre>{&quot;jsonrpc&quot;" in text  # the frame, shown redacted
    assert "<svg" in text  # the charts are drawn in the page itself
    assert "/outputSchema/properties/n/type" in text  # the tool's change, as a diff
    assert "2025-11-25" in text and report_of_run(broken_run)["schemas"][0]["sha256"][:16] in text


def report_of_run(report: Path) -> dict[str, Any]:
    return dict(json.loads(report.read_text()))


def test_check_writes_the_same_page_for_the_runs_event_log(broken_run: Path) -> None:
    """Issue 23: `check --format html` renders with the same page, and a run log's timings come along."""
    report = report_of_run(broken_run)
    log = broken_run.parent / report["event_log"]
    as_json = json.loads(mcp_server("check", str(log), "--format", "json").stdout)
    done = mcp_server("check", str(log), "--format", "html")
    assert done.returncode == 1, done.stderr  # check keeps exit 1 for CI (issue 29)
    counts = shown(done.stdout)
    assert counts[("data-total", "violations")] == str(sum(as_json["violations"].values()))
    for rule, count in as_json["violations"].items():
        assert counts[("data-rule", rule)] == str(count)
    assert ("data-latency", "client_to_server") in counts  # the log's timings, read from the capture
    assert sum(as_json["violations"].values()) == sum(report["violations"].values())


def test_the_page_lists_the_policys_approvals_and_denials(tmp_path: Path) -> None:
    """Issue 23: a held call's approval and refusal (issue 6) are on the page, from the run's log."""
    (tmp_path / "policy.toml").write_text(APPROVAL_POLICY)
    command = gateway_command("--policy", str(tmp_path / "policy.toml"))
    parameters = StdioServerParameters(
        command=command[0], args=command[1:], env=server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs"))
    )
    approve_then_refuse(parameters)
    [report] = sorted((tmp_path / "runs" / "mcp_server" / "gateway").glob("*-report.json"))
    assert report_of(tmp_path)["violations"] == {"approval_denied": 1}
    out = tmp_path / "page.html"
    assert mcp_server("report", str(report), "--html", str(out)).returncode == 0
    counts = shown(out.read_text())
    assert counts[("data-policy", "held")] == "held 2"
    assert counts[("data-policy", "allowed")] == "allowed 1"
    assert counts[("data-policy", "denied")] == "denied 1"


@pytest.mark.parametrize(
    ("content", "reason"),
    [(None, "io_error"), (b'{"violations": {', "parse_error"), (b'{"frames": {}}', "parse_error")],
    ids=["missing", "garbled", "not-a-report"],
)
def test_a_report_that_cannot_be_read_is_a_clear_error(tmp_path: Path, content: bytes | None, reason: str) -> None:
    """Issue 23: bad input exits 2 with `mcp:error reason=... detail=...`, no traceback, no page."""
    source = tmp_path / "report.json"
    if content is not None:
        source.write_bytes(content)
    done = mcp_server("report", str(source), "--html", str(tmp_path / "out.html"))
    assert done.returncode == 2
    assert f"mcp:error reason={reason} detail=" in done.stderr and "Traceback" not in done.stderr + done.stdout
    assert not (tmp_path / "out.html").exists()


def test_a_page_that_cannot_be_written_is_a_clear_error(broken_run: Path, tmp_path: Path) -> None:
    """Issue 23: an unwritable OUT exits 2 with `mcp:error reason=io_error`, no traceback."""
    (tmp_path / "a-file").write_text("")
    done = mcp_server("report", str(broken_run), "--html", str(tmp_path / "a-file" / "out.html"))
    assert done.returncode == 2
    assert "mcp:error reason=io_error detail=" in done.stderr and "Traceback" not in done.stderr + done.stdout


def test_report_html_exits_0_once_the_page_is_written_and_its_table_1_on_violations(
    broken_run: Path, tmp_path: Path
) -> None:
    """Issue 29, row 8: `report RUN --html OUT` is done when the page is written (exit 0); the table
    without `--html` still exits 1 on violations, as `check` does for CI."""
    out = tmp_path / "page.html"
    assert mcp_server("report", str(broken_run), "--html", str(out)).returncode == 0 and out.exists()
    assert mcp_server("report", str(broken_run)).returncode == 1


def test_a_report_whose_event_log_is_gone_still_renders(broken_run: Path, tmp_path: Path) -> None:
    """Issue 23: the report alone makes a page; what only the log holds is said to be missing."""
    alone = tmp_path / "report.json"
    shutil.copy(broken_run, alone)  # its event log's relative name leads nowhere from here
    out = tmp_path / "page.html"
    assert mcp_server("report", str(alone), "--html", str(out)).returncode == 0
    counts = shown(out.read_text())
    assert counts[("data-total", "violations")] == str(sum(report_of_run(broken_run)["violations"].values()))
    assert not any(key == "data-latency" for key, _ in counts)
