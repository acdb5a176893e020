"""The default session cap of the HTTP front (issue 30 row 6): sized to the memory when each session
is a process of its own."""

from __future__ import annotations

from mcp_server.gateway.startup import MAX_DEFAULT_SESSIONS, SESSION_BYTES, default_max_sessions


def test_the_default_cap_lets_process_sessions_take_half_the_available_memory() -> None:
    """Issue 30 row 6: each STDIO-upstream session is a process (about 64 MiB): a small machine gets
    few sessions, never none; a large one the ceiling; an HTTP upstream (no process) the ceiling."""
    assert default_max_sessions(processes=True, available=2 << 30) == (2 << 30) // 2 // SESSION_BYTES == 16
    assert default_max_sessions(processes=True, available=SESSION_BYTES) == 1
    assert default_max_sessions(processes=True, available=64 << 30) == MAX_DEFAULT_SESSIONS
    assert default_max_sessions(processes=True, available=None) == MAX_DEFAULT_SESSIONS
    assert default_max_sessions(processes=False, available=1 << 30) == MAX_DEFAULT_SESSIONS
