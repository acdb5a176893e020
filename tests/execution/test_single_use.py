"""Single use of approvals (issue 30 row 10): the first claim wins until it expires; a store that
cannot be reached is refused at start."""

from __future__ import annotations

import asyncio

import pytest

from mcp_server.core.settings import SetupError
from mcp_server.execution.single_use import MemorySingleUse, single_use_from


def test_a_key_is_claimed_once_until_it_expires() -> None:
    """Issue 30 row 10: a grant is carried out once; its claim is forgotten only after its expiry."""
    now = [1000.0]
    store = MemorySingleUse(clock=lambda: now[0])

    async def run() -> list[bool]:
        first, again = await store.claim("a", 1010), await store.claim("a", 1010)
        now[0] = 1011
        return [first, again, await store.claim("a", 1020)]

    assert asyncio.run(run()) == [True, False, True]


def test_a_redis_url_where_nothing_answers_is_a_setup_error() -> None:
    """Issue 30 row 10: MCP_REDIS_URL is checked at start (exit 2), never found missing mid-run."""
    with pytest.raises(SetupError, match="MCP_REDIS_URL"):
        single_use_from({"MCP_REDIS_URL": "redis://127.0.0.1:9/0"})
