"""Bridging the protocol eras (``gateway --bridge VERSION``, issue 22): the upstream speaks one era,
clients of the other are translated. A bridge is the gateway session's upstream ``Connection``:
the session checks the client's side against the client's version (as without a bridge), the
bridge translates and checks the upstream's side against the upstream's version (``UpstreamSide``).
Clients of the upstream's own era pass through untouched. ADR 0024 lists each mapping.
"""

from __future__ import annotations

from collections.abc import Callable

from ...core.settings import SetupError
from ...transport.connection import Connection
from ..session import GatewayRun

__all__ = ["bridged"]


def bridged(
    new_upstream: Callable[[], Connection], run: GatewayRun, version: str, *, server: str | None = None
) -> Callable[[], Connection]:
    """How each session's upstream is made when the upstream speaks only ``version``: wrapped in the
    bridge that carries the other era's clients to it (``server``: an aggregate's, whose report section
    the upstream's side is counted in). An unknown version is a ``SetupError``."""
    registry = run.registry
    if version not in registry.versions:
        raise SetupError(f"--bridge: unknown protocol version {version!r} (known: {', '.join(registry.versions)})")
    if version in registry.stateless_versions:
        from .to_stateless import StatelessUpstream

        return lambda: StatelessUpstream(new_upstream(), run, version, server=server)
    from .to_stateful import StatefulUpstreams

    return lambda: StatefulUpstreams(new_upstream, run, version)
