"""Gateway configuration: the mode per direction and per tool, rules turned off, and the waits.

Read once at start-up from a JSON or TOML file validated against
``schemas/gateway-config.schema.json``; a bad file is a ``SetupError`` naming the pointer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from ..core.settings import SetupError
from ..core.types import Direction
from ..registry.config import read_config
from ..registry.schemas import SchemaRegistry

__all__ = ["GatewayConfig", "Mode"]


class Mode(StrEnum):
    ENFORCE = "enforce"  # invalid frames are answered by the gateway and never delivered
    OBSERVE = "observe"  # every frame passes unchanged; violations are logged and counted


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewayConfig:
    mode: Mode = Mode.ENFORCE
    directions: Mapping[Direction, Mode] = field(default_factory=dict)
    tools: Mapping[str, Mode] = field(default_factory=dict)
    rules_off: frozenset[str] = frozenset()
    grace_seconds: float = 2.0
    # How long a client frame waits for what checks it (the reply to a pending initialize, the
    # tool's schema from a tools/list) before it is checked without it.
    check_wait_seconds: float = 30.0
    # How long a relayed request waits for the upstream's reply before the client gets a retryable
    # error in its place and the upstream ``notifications/cancelled`` (a policy's per-tool timeout
    # governs a ``tools/call`` instead).
    request_timeout_seconds: float = 120.0
    # The tool lockfile (a path relative to the configuration file's folder) and its server's key.
    lock: Path | None = None
    lock_server: str | None = None
    # Many upstreams (``aggregate/``): the ``servers`` and ``aggregate`` tables as written, and the
    # folder their relative paths start from.
    servers: Mapping[str, Any] = field(default_factory=dict)
    aggregate: Mapping[str, Any] = field(default_factory=dict)
    folder: Path = Path()

    def mode_for(self, direction: Direction, tool: str | None = None) -> Mode:
        """The most specific setting wins: tool, then direction, then the default."""
        if tool is not None and tool in self.tools:
            return self.tools[tool]
        return self.directions.get(direction, self.mode)

    def rule_on(self, rule: str) -> bool:
        return rule not in self.rules_off

    @classmethod
    def load(cls, path: Path | None, registry: SchemaRegistry, *, mode: str | None = None) -> GatewayConfig:
        document: Any = {}
        if path is not None:
            document = read_config(path, what="gateway config", schema="gateway-config.schema.json", registry=registry)
        if mode is not None and mode not in {m.value for m in Mode}:
            raise SetupError(f"--mode must be enforce or observe, got {mode!r}")
        directions = document.get("directions", {})
        return cls(
            mode=Mode(mode or document.get("mode", Mode.ENFORCE)),
            directions={Direction(k): Mode(v) for k, v in directions.items()},
            tools={name: Mode(entry["mode"]) for name, entry in document.get("tools", {}).items() if "mode" in entry},
            rules_off=frozenset(rule for rule, on in document.get("rules", {}).items() if not on),
            grace_seconds=float(document.get("grace_seconds", 2.0)),
            check_wait_seconds=float(document.get("check_wait_seconds", 30.0)),
            request_timeout_seconds=float(document.get("request_timeout_seconds", 120.0)),
            lock=None if path is None or "lock" not in document else path.parent / document["lock"],
            lock_server=document.get("lock_server"),
            servers=document.get("servers", {}),
            aggregate=document.get("aggregate", {}),
            folder=Path() if path is None else path.parent,
        )
