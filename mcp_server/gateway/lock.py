"""``mcp-server lock``: every tool an upstream lists, whole, written to the tool lockfile under its
server's key (other servers' entries kept). The upstream is driven as ``doctor`` drives it: through
a gateway session, at the newest version it accepts, every page of ``tools/list``; no tool is called.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace
from pathlib import Path

from ..core import jsonio
from ..core.files import write_atomic
from ..core.settings import SetupError
from ..registry.lockfile import Lockfile, lock_document
from .doctor import examine
from .startup import Gateway

__all__ = ["run_lock"]


def run_lock(gateway: Gateway, *, url: str | None, output: Path, server: str | None, timeout: float) -> int:
    """Lock the upstream's tools in ``output`` (each request waits ``timeout`` seconds at most):
    exit 0 once written, 1 when the upstream accepted no version or listed its tools in a reply that
    reads as two documents (a member named twice, ADR 40); a lockfile already at ``output``
    that is not a sound one is a ``SetupError`` (exit 2), and is left as it is."""
    if timeout <= 0:
        raise SetupError("--timeout must be positive")
    registry = gateway.run.registry
    kept = Lockfile.load(output, registry) if output.exists() else None
    config = replace(gateway.run.config, request_timeout_seconds=timeout, check_wait_seconds=timeout)
    gateway = replace(gateway, run=gateway.run._replace(config=config))
    findings = asyncio.run(examine(gateway, url, first=True))
    accepted = next((attempt for attempt in findings.attempts if attempt.accepted), None)
    if accepted is None:
        sys.stderr.write(f"mcp:error reason=not_locked detail={findings.upstream} accepted no protocol version\n")
        return 1
    if accepted.unread is not None:  # what it listed reads as two documents: neither is pinned (ADR 40)
        sys.stderr.write(f"mcp:error reason=not_locked detail={findings.upstream}: {accepted.unread}\n")
        return 1
    name = server or accepted.server
    if name is None:
        raise SetupError("the upstream gave no serverInfo.name: name its entry with --server NAME")
    servers = {key: [tool for _, tool in entry.tools.values()] for key, entry in (kept.servers if kept else {}).items()}
    servers[name] = accepted.definitions
    write_atomic(output, jsonio.dumps_pretty(lock_document(servers)))  # a reader never sees half a lockfile
    violations = sum(findings.report.get("violations", {}).values())
    sys.stderr.write(
        f"mcp:locked server={name} tools={len(accepted.definitions)} version={accepted.version} "
        f"violations={violations} file={output}\n"
    )
    return 0
