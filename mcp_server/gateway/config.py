"""Gateway configuration: the mode per direction and per tool, rules turned off, and the waits.

Read once at start-up from a JSON or TOML file validated against
``schemas/gateway-config.schema.json``; a bad file is a ``SetupError`` naming the pointer. Every
setting has one precedence: a flag, then the environment, then the file, then the default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import CanonicalError
from ..core.settings import MAX_FRAME_BYTES_LIMIT, SETTING, SETTINGS, SetupError, positive_int
from ..core.types import CLIENT_TO_SERVER, Direction
from ..ledger.modes import INVALID_TOOL_SCHEMA, TOOL_DEFINITION_CHANGED, Mode
from ..registry.config import read_config
from ..registry.lockfile import LOCK_RULES
from ..registry.schemas import SchemaRegistry

__all__ = [
    "ENVIRONMENT",
    "INVALID_TOOL_SCHEMA",
    "RELAY_CEILING_BYTES",
    "RULES",
    "TOOL_DEFINITION_CHANGED",
    "GatewayConfig",
    "Mode",
]

RELAY_CEILING_BYTES = 256 * 1_048_576
"""Observe mode relays a frame over its limit unchecked, held whole up to this size; a larger one is
drained and answered as in enforce mode (memory stays bounded)."""

ENVIRONMENT = {setting.key: setting.variable for setting in SETTINGS if setting.key and setting.variable}
"""The settings of the file that an environment variable gives too (a flag beats it, it beats the file)."""


def _default(key: str) -> Any:
    """A configuration key's default: its row's in ``SETTINGS`` (``docs/configuration.md``)."""
    return SETTING[key].default


RULES = frozenset(
    {member.slug for member in CanonicalError} | {*LOCK_RULES, TOOL_DEFINITION_CHANGED, INVALID_TOOL_SCHEMA}
)
"""Every rule `[rules]` may turn off: the catalogue's slugs, the tool listing's and the lockfile's rules."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewayConfig:
    mode: Mode = Mode.ENFORCE
    directions: Mapping[Direction, Mode] = field(default_factory=dict)
    tools: Mapping[str, Mode] = field(default_factory=dict)
    rules_off: frozenset[str] = frozenset()
    grace_seconds: float = _default("grace_seconds")
    # How long a client frame waits for what checks it (the reply to a pending initialize, the
    # tool's schema from a tools/list) before it is checked without it.
    check_wait_seconds: float = _default("check_wait_seconds")
    # How long a relayed request waits for the upstream's reply before the client gets a retryable
    # error in its place and the upstream ``notifications/cancelled`` (a policy's per-tool timeout
    # governs a ``tools/call`` instead).
    request_timeout_seconds: float = _default("request_timeout_seconds")
    # The tool lockfile (a path relative to the configuration file's folder) and its server's key.
    lock: Path | None = None
    lock_server: str | None = None
    # Issue 31: an HTTP upstream's headers (unexpanded: ``registry/credentials.py`` reads them), the
    # gateway's login to it, the scopes a front's token needs per tool, and the file's folder.
    headers: Mapping[str, str] = field(default_factory=dict)
    oauth: Mapping[str, Any] = field(default_factory=dict)
    tool_scopes: Mapping[str, frozenset[str]] = field(default_factory=dict)
    folder: Path | None = None
    # The frame limit per direction: what a client sends, and what a server sends (results of files
    # and images run to several MB). A frame over its limit is answered to the side that waits.
    max_frame_bytes: int = _default("max_frame_bytes")
    max_server_frame_bytes: int = _default("max_server_frame_bytes")
    # Many upstreams (``aggregate/``): the ``servers`` and ``aggregate`` tables as written (relative
    # paths start from ``folder``).
    servers: Mapping[str, Any] = field(default_factory=dict)
    aggregate: Mapping[str, Any] = field(default_factory=dict)

    def mode_for(self, direction: Direction, tool: str | None = None) -> Mode:
        """The most specific setting wins: tool, then direction, then the default."""
        if tool is not None and tool in self.tools:
            return self.tools[tool]
        return self.directions.get(direction, self.mode)

    def limit(self, direction: Direction) -> int:
        """The frame limit of what is sent in ``direction``."""
        return self.max_frame_bytes if direction is CLIENT_TO_SERVER else self.max_server_frame_bytes

    def held_bytes(self, direction: Direction) -> int:
        """How much of one frame sent in ``direction`` its transport holds: its limit in enforce mode;
        in observe mode a frame over the limit is relayed unchecked, up to ``RELAY_CEILING_BYTES``."""
        limit = self.limit(direction)
        return limit if self.mode_for(direction) is Mode.ENFORCE else max(limit, RELAY_CEILING_BYTES)

    def rule_on(self, rule: str) -> bool:
        return rule not in self.rules_off

    @classmethod
    def load(
        cls,
        path: Path | None,
        registry: SchemaRegistry,
        *,
        mode: str | None = None,
        flags: Mapping[str, Any] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> GatewayConfig:
        """The file at ``path`` (none: the defaults) under the command line's ``flags`` (a flag not
        given is ``None``; ``mode``: the ``--mode`` flag) and the environment's variables."""
        document: Any = {}
        if path is not None:
            document = read_config(path, what="gateway config", schema="gateway-config.schema.json", registry=registry)
        flags = {**(flags or {}), "mode": mode}
        if mode is not None and mode not in {m.value for m in Mode}:
            raise SetupError(f"--mode must be enforce or observe, got {mode!r}")
        if path is not None and "lock" in document:
            document = {**document, "lock": path.parent / document["lock"]}  # relative to the file
        layered = _Layers(flags, environ or {}, document)
        directions = document.get("directions", {})
        tools = document.get("tools", {})
        unknown = sorted(set(document.get("rules", {})) - RULES)
        if unknown:  # a misspelt rule would stay on, silently
            raise SetupError(f"gateway config {path}: at /rules/{unknown[0]}: no such rule")
        return cls(
            mode=Mode(layered("mode")),
            directions={Direction(k): Mode(v) for k, v in directions.items()},
            tools={name: Mode(entry["mode"]) for name, entry in document.get("tools", {}).items() if "mode" in entry},
            rules_off=frozenset(rule for rule, on in document.get("rules", {}).items() if not on),
            grace_seconds=float(layered("grace_seconds")),
            check_wait_seconds=float(layered("check_wait_seconds")),
            request_timeout_seconds=float(layered("request_timeout_seconds")),
            headers=document.get("headers", {}),
            oauth=document.get("oauth", {}),
            tool_scopes={name: frozenset(entry["scopes"]) for name, entry in tools.items() if "scopes" in entry},
            folder=None if path is None else path.parent,
            lock=layered("lock"),
            lock_server=layered("lock_server"),
            max_frame_bytes=layered("max_frame_bytes"),
            max_server_frame_bytes=layered("max_server_frame_bytes"),
            servers=document.get("servers", {}),
            aggregate=document.get("aggregate", {}),
        )


class _Layers:
    """A setting's value by the one precedence: flag, environment, configuration file, default."""

    def __init__(self, flags: Mapping[str, Any], environ: Mapping[str, str], document: Mapping[str, Any]) -> None:
        self.flags, self.environ, self.document = flags, environ, document

    def __call__(self, key: str) -> Any:
        if self.flags.get(key) is not None:
            return self.flags[key]
        variable = ENVIRONMENT.get(key)
        if variable is not None and self.environ.get(variable):
            return positive_int(self.environ, variable, _default(key), MAX_FRAME_BYTES_LIMIT)
        return self.document.get(key, _default(key))
