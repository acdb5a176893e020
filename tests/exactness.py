"""The differential corpus of the exactness tests as they judge it: its seed and size, and the session
each case is judged in (the version in force, the request it answers). Shared by the exactness tests
and the fast path's equality test (holds no test)."""

from __future__ import annotations

from typing import Any

from mcp_server.core.session import Session
from mcp_server.core.types import Direction
from mcp_server.registry.schemas import SchemaRegistry

from .oracle import C2S, OPPOSITE, Case

SEED = 24


MUTANTS = 10_000


def is_request_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def session_for(registry: SchemaRegistry, case: Case) -> Session:
    """A session in which ``case`` can be judged on its own: the version in force, its request pending.

    A 2026-07-28 frame comes with no session version at all: its ``_meta``, its method, or the
    request it answers names the version.
    """
    session = Session()
    frame = case.frame
    stateless = case.version in registry.stateless_versions
    if not stateless:
        session.negotiate(case.version)
        session.initialized = True
    if case.answers is not None and isinstance(frame, dict) and is_request_id(frame.get("id")):
        requester = Direction(OPPOSITE[case.direction])
        session.expect(requester, frame["id"], case.answers, version=case.version if stateless else None)
    elif stateless and case.direction != C2S:  # a 2026-07-28 server speaks while a request of the client is open
        session.expect(Direction(C2S), "open", "subscriptions/listen", version=case.version)
    return session
