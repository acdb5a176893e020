"""Settings and files a careless operator gets wrong (issue 30 rows 13 and 14), unit level."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_server.core import jsonio
from mcp_server.core.files import PRIVATE, ReadyFile, read_secret, write_atomic
from mcp_server.core.settings import MAX_FRAME_BYTES_LIMIT, Settings, SetupError, seconds


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MCP_MAX_FRAME_BYTES", "99999999999999999999"),
        ("MCP_MAX_FRAME_BYTES", str(MAX_FRAME_BYTES_LIMIT + 1)),
        ("MCP_MAX_SESSIONS", "0"),
        ("MCP_LOG_MAX_BYTES", "1" + "0" * 20),
        ("MCP_RUNS_KEEP", "-3"),
    ],
)
def test_an_absurd_number_in_the_environment_is_refused_naming_it(name: str, value: str) -> None:
    """Issue 30 row 14: `MCP_MAX_FRAME_BYTES=99999999999999999999` was accepted without a word."""
    with pytest.raises(SetupError, match=name):
        Settings.from_env({name: value})


def test_the_largest_frame_limit_is_accepted() -> None:
    """Issue 30 row 14: the bound is inclusive."""
    assert (
        Settings.from_env({"MCP_MAX_FRAME_BYTES": str(MAX_FRAME_BYTES_LIMIT)}).max_frame_bytes == MAX_FRAME_BYTES_LIMIT
    )


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "0", "-1", "86401", "1e300", "soon"])
def test_seconds_are_finite_positive_and_at_most_a_day(text: str) -> None:
    """Issue 30 row 14: `--idle-timeout nan` disabled reaping; nan and inf bound nothing."""
    with pytest.raises(SetupError, match="--option"):
        seconds(text, name="--option")


def test_seconds_in_range_are_read() -> None:
    assert seconds("0.25", name="x") == 0.25 and seconds("86400", name="x") == 86400.0


@pytest.mark.parametrize(
    ("raw", "key"),
    [(b'{"servers": {}, "servers": {}}', "servers"), (b'{"a": [{"b": 1, "b": 2}]}', "b"), (b'[{"x": 1, "x": 1}]', "x")],
)
def test_a_key_given_twice_anywhere_is_refused(raw: bytes, key: str) -> None:
    """Issue 30 row 14: a lockfile with two `servers` kept the later, unreviewed one in silence."""
    with pytest.raises(jsonio.DuplicateKeyError) as refused:
        jsonio.loads(raw)
    assert refused.value.key == key


def test_a_document_without_repeats_reads_whole_and_nan_is_refused() -> None:
    """RFC 8259 §6: NaN is no JSON number; a document without repeats reads as written."""
    raw = b'{"a": {"b": [1, 2.5, "c", null, true]}, "d": {}}'
    assert jsonio.loads(raw) == {"a": {"b": [1, 2.5, "c", None, True]}, "d": {}}
    with pytest.raises(jsonio.JSONSyntaxError):
        jsonio.loads(b'{"a": NaN}')


def test_a_secret_file_others_may_open_is_refused(tmp_path: Path) -> None:
    """Issue 30 row 14: an approval key file readable by others was accepted."""
    key = tmp_path / "key"
    key.write_bytes(b"k" * 32)
    key.chmod(0o640)
    with pytest.raises(SetupError, match="chmod 600"):
        read_secret(key, name="MCP_APPROVAL_KEY_FILE")
    key.chmod(0o600)
    assert read_secret(key, name="MCP_APPROVAL_KEY_FILE") == b"k" * 32


def test_a_private_file_is_its_owners_only_and_a_planted_link_is_not_followed(tmp_path: Path) -> None:
    """Issue 30 rows 11 and 13: a report is written 0600; its temporary file is made new (O_EXCL)."""
    report = tmp_path / "report.json"
    write_atomic(report, b"{}", mode=PRIVATE)
    assert report.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_a_ready_file_is_claimed_written_and_removed_only_while_ours(tmp_path: Path) -> None:
    """Issue 30 row 13: only the ready file this process wrote is removed; one that changed since is
    another's (a later server took it over)."""
    ready = ReadyFile(tmp_path / "deep" / "mcp.ready")
    ready.claim()
    ready.write("http://127.0.0.1:1/mcp")
    assert ready.path.read_text().split()[0] == str(os.getpid())
    ready.claim()  # this process's own file: claimed again
    ready.path.write_text("1 2026-01-01T00:00:00Z\n")  # another took it over
    ready.remove()
    assert ready.path.exists()
