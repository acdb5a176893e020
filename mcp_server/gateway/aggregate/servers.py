"""The servers of an aggregate and its settings, from the gateway configuration (a ``servers`` table,
an ``aggregate`` table) and from an MCP client's own configuration file as it is (``--servers``).

Read and checked once at start-up; anything wrong is a ``SetupError`` naming the server. No I/O
but reading the client's file.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core.settings import SetupError
from ...registry.client_config import ServerEntry, client_servers, read_client_config, server_entry
from ..config import GatewayConfig
from .names import DEFAULT_SEPARATOR, MAX_NAME_LENGTH, check_prefix, check_separator, prefix_for

__all__ = ["AggregateOptions", "ServerSpec", "read_servers"]

log = logging.getLogger("mcp_server.gateway")


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerSpec:
    """One member of an aggregate: its name (the report's, the lockfile's key), the prefix of its
    names, and how to reach it: ``command`` (with ``env`` added to the gateway's) or ``url`` (with
    ``headers``); ``bridge``: the one protocol version it speaks, when the era bridge must carry it."""

    name: str
    prefix: str
    command: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    bridge: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AggregateOptions:
    """How an aggregate names, waits, restarts and pages (the ``aggregate`` table; docs/aggregate.md)."""

    separator: str = DEFAULT_SEPARATOR
    max_name_length: int = MAX_NAME_LENGTH
    start_seconds: float = 10.0  # how long a client's initialize (and start-up) waits for the slowest server
    answer_seconds: float = 30.0  # how long a server may take to answer the aggregate's own requests
    health_seconds: float = 15.0
    restart_seconds: float = 0.5
    restart_max_seconds: float = 30.0
    page_size: int = 500

    @classmethod
    def of(cls, table: Mapping[str, Any]) -> AggregateOptions:
        known = {key: table[key] for key in cls.__dataclass_fields__ if key in table}
        options = cls(**known)
        check_separator(options.separator)
        return options


def _spec(name: str, entry: ServerEntry, table: Mapping[str, Any]) -> ServerSpec | None:
    """A member from a client's entry (with the gateway configuration's ``prefix`` and ``bridge`` for
    it); ``None`` for one the gateway cannot run (legacy SSE, disabled), said on the log."""
    if entry.disabled:
        log.warning("aggregate: server %r is disabled in its configuration: left out", name)
        return None
    if entry.kind == "sse":
        log.warning("aggregate: server %r is a legacy SSE server (the gateway speaks Streamable HTTP): left out", name)
        return None
    prefix = check_prefix(name, table["prefix"]) if "prefix" in table else prefix_for(name)
    command = () if entry.command is None else (entry.command, *entry.args)
    return ServerSpec(
        name=name,
        prefix=prefix,
        command=command,
        env=entry.env,
        url=entry.url,
        headers=entry.headers,
        bridge=table.get("bridge"),
    )


def _client_file(path: Path) -> dict[str, ServerEntry]:
    servers: dict[str, ServerEntry] = {}
    for _, name, entry in client_servers(read_client_config(path)):
        if name in servers:
            raise SetupError(f"{path}: server {name!r} is named twice (mcpServers and servers)")
        servers[name] = server_entry(name, entry)
    return servers


def read_servers(config: GatewayConfig, servers_path: Path | None) -> tuple[list[ServerSpec], AggregateOptions]:
    """The aggregate's servers, in order (the gateway configuration's ``servers`` table, then the
    client's file's other servers), and its options; no servers: not an aggregate."""
    options = AggregateOptions.of(config.aggregate)
    named = config.aggregate.get("servers_file")
    path = servers_path or (None if named is None else (config.folder or Path()) / str(named))
    from_file = {} if path is None else _client_file(path)
    specs: list[ServerSpec | None] = []
    for name, table in config.servers.items():
        if "command" in table or "url" in table:
            entry = server_entry(name, table)
        elif name in from_file:
            entry = from_file.pop(name)
        else:
            raise SetupError(f"server {name!r} has neither a command nor a url (and no servers file names it)")
        specs.append(_spec(name, entry, table))
    specs += [_spec(name, entry, {}) for name, entry in from_file.items()]
    members = [spec for spec in specs if spec is not None]
    if path is not None and not members:
        raise SetupError(f"{path}: no server the gateway can run")
    return members, options
