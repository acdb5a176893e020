"""Single use across replicas: an approval (a grant, a bridge's held exchange) carried out once, whichever
replica its retry reaches. In memory by default (one replica's own); with ``MCP_REDIS_URL``, in the Redis
the replicas run beside them (``SET key NX EXAT``: the first claim wins, the key expires with the grant).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ..core.errors import CanonicalError, Rejection
from ..core.settings import SetupError

__all__ = ["REDIS_URL_VARIABLE", "MemorySingleUse", "RedisSingleUse", "SingleUse", "single_use_from"]

REDIS_URL_VARIABLE = "MCP_REDIS_URL"
_KEY_PREFIX = "mcp-server:used:"


class SingleUse(Protocol):
    shared: bool  # whether other replicas see the same claims

    async def claim(self, key: str, expires: float) -> bool:
        """``True`` the first time ``key`` is claimed before ``expires`` (epoch seconds), else ``False``."""


class MemorySingleUse:
    """This process's own claims (a replica's): another replica does not see them."""

    shared = False

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._claimed: dict[str, float] = {}
        self._clock = clock

    async def claim(self, key: str, expires: float) -> bool:
        now = self._clock()
        for spent in [k for k, until in self._claimed.items() if until <= now]:
            del self._claimed[spent]
        if key in self._claimed:
            return False
        self._claimed[key] = expires
        return True


class RedisSingleUse:
    """Claims in Redis, shared by every replica given the same URL. Unreachable: the claim is refused
    (``DEPENDENCY_UNAVAILABLE``, retryable): an approval is never carried out twice for want of it."""

    shared = True

    def __init__(self, client: Any) -> None:
        self._client = client

    async def claim(self, key: str, expires: float) -> bool:
        try:
            done = await self._client.set(_KEY_PREFIX + key, b"1", nx=True, exat=max(1, int(expires) + 1))
        except Exception as failure:  # redis's errors (connection, timeout): the store cannot answer
            errors = [{"path": "", "msg": f"single-use store: {type(failure).__name__}"}]
            raise Rejection(CanonicalError.DEPENDENCY_UNAVAILABLE, errors) from None
        return bool(done)


def single_use_from(environ: Mapping[str, str]) -> SingleUse:
    """The store ``MCP_REDIS_URL`` names (checked now: a wrong URL or a Redis that does not answer is a
    ``SetupError``), else this process's memory."""
    url = (environ.get(REDIS_URL_VARIABLE) or "").strip()
    if not url:
        return MemorySingleUse()
    try:
        import redis
        import redis.asyncio
    except ImportError:
        raise SetupError(f"{REDIS_URL_VARIABLE} needs the redis extra: pip install 'mcp-server[redis]'") from None
    try:
        redis.Redis.from_url(url, socket_timeout=5).ping()
        client = redis.asyncio.Redis.from_url(url, socket_timeout=5)
    except (ValueError, redis.RedisError) as exc:
        raise SetupError(f"{REDIS_URL_VARIABLE}: no Redis answers at {url.split('@')[-1]}: {exc}") from None
    return RedisSingleUse(client)
