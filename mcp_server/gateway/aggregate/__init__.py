"""One gateway in front of many servers (issue 33, ADR 29): each client session's upstream is an
``Aggregate`` holding a session of its own with each server, at that server's version, checked as
itself. What the servers are comes from the gateway configuration or a client's configuration file
(``servers``); ``start`` run, before any front starts, that every name they expose is usable.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import __version__
from ...core.settings import SetupError
from ...core.types import SERVER_TO_CLIENT
from ...observe.report import ConformanceReport
from ...registry.credentials import upstream_headers
from ...registry.lockfile import LockCheck, Lockfile
from ...transport.connection import Connection
from ..bridge.upstream_side import UpstreamSide
from ..config import GatewayConfig
from ..session import GatewayRun
from .aggregate import Aggregate
from .member import Hello, Member, State
from .names import expose, name_problems
from .servers import AggregateOptions, ServerSpec, read_servers

__all__ = ["AggregateOptions", "Fleet", "ServerSpec", "aggregate_name", "aggregated", "read_servers", "start"]

log = logging.getLogger("mcp_server.gateway")

# What start-up declares it can do, so that a server lists every tool it may offer (some list more to
# a client that can sample, elicit or give roots): every name that may be exposed is checked.
_EVERYTHING = {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}
_SAID = 5  # problems said in full at start-up; the rest counted


def aggregate_name(specs: Sequence[ServerSpec]) -> str:
    return f"aggregate of {', '.join(spec.name for spec in specs)}"


def _connector(spec: ServerSpec, run: GatewayRun, redact: Callable[[str], str]) -> Callable[[], Connection]:
    """How the server's connection is made: a child process of its own or a Streamable HTTP client
    (the era bridge in front when it speaks only one version)."""
    limit, grace = run.config.held_bytes(SERVER_TO_CLIENT), run.config.grace_seconds

    def connect() -> Connection:
        if spec.url is not None:
            from ...transport.http_client import HttpClient

            return HttpClient(spec.url, max_frame_bytes=limit, headers=spec.headers)
        from ...transport.child_process import ChildProcess

        return ChildProcess(spec.command, max_frame_bytes=limit, grace_seconds=grace, redact=redact, env=spec.env)

    if spec.bridge is None:
        return connect
    from ..bridge import bridged

    return bridged(connect, run, spec.bridge, server=spec.name)


def _side_of(spec: ServerSpec, run: GatewayRun, lock: Lockfile | None, separator: str) -> Callable[[], UpstreamSide]:
    """How the server's side is made: its report section, its lockfile entry (by its name), and the
    configuration's per-tool modes written with exposed names, read with its own."""
    start = expose(spec.prefix, separator, "")
    tools = {name[len(start) :]: mode for name, mode in run.config.tools.items() if name.startswith(start)}
    config = dataclasses.replace(run.config, tools=tools)
    label = spec.url or " ".join(spec.command)

    def side() -> UpstreamSide:
        held = None if lock is None else LockCheck(lock, spec.name)
        return UpstreamSide(run, label, server=spec.name, lock=held, config=config, tool_schemas=True)

    return side


def _members(
    specs: Sequence[ServerSpec],
    options: AggregateOptions,
    run: GatewayRun,
    lock: Lockfile | None,
    redact: Callable[[str], str],
    known: Sequence[Mapping[str, Any]],
) -> list[Member]:
    return [
        Member(index, spec, _connector(spec, run, redact), _side_of(spec, run, lock, options.separator), found)
        for index, (spec, found) in enumerate(zip(specs, known, strict=True))
    ]


def aggregated(
    specs: Sequence[ServerSpec],
    options: AggregateOptions,
    run: GatewayRun,
    lock: Lockfile | None,
    redact: Callable[[str], str],
    known: Sequence[Mapping[str, Any]],
) -> Callable[[], Connection]:
    """How each client session's upstream is made: an aggregate of ``specs`` (``known``: each one's
    capabilities as start-up found them, announced while it is not up yet)."""
    name = aggregate_name(specs)
    return lambda: Aggregate(_members(specs, options, run, lock, redact, known), options, run, name)


def start(
    specs: Sequence[ServerSpec],
    options: AggregateOptions,
    run: GatewayRun,
    lock: Lockfile | None,
    redact: Callable[[str], str],
) -> list[Mapping[str, Any]]:
    """Start-up: every server started once (for ``start_seconds`` at most) and asked what it exposes;
    a name too long or taken twice is a ``SetupError`` saying which. Returns each server's
    capabilities (``{}``: it did not answer; it joins when it does)."""
    quiet = run._replace(report=ConformanceReport(upstream=aggregate_name(specs), mode="observe"), events=None)
    members = _members(specs, options, quiet, lock, redact, [{} for _ in specs])
    aggregate = Aggregate(members, options, quiet, aggregate_name(specs), reports=False)
    found = asyncio.run(_ask_all(aggregate, members, options))
    listings: dict[str, dict[str, list[str]]] = {}
    for member, (_, lists) in zip(members, found, strict=True):
        if lists is None:
            log.warning("aggregate: server %r did not answer at start-up: its tools join when it does", member.name)
            continue
        listings[member.name] = {
            kind: [str(item.get("name")) for item in lists.get(key, ())]
            for kind, key in (("tool", "tools"), ("prompt", "prompts"))
        }
    prefixes = {spec.name: spec.prefix for spec in specs}
    problems = name_problems(listings, prefixes, options.separator, options.max_name_length)
    if problems:
        more = f"; and {len(problems) - _SAID} more" if len(problems) > _SAID else ""
        raise SetupError("aggregate: " + "; ".join(problems[:_SAID]) + more)
    return [capabilities for capabilities, _ in found]


async def _ask_all(
    aggregate: Aggregate, members: Sequence[Member], options: AggregateOptions
) -> list[tuple[Mapping[str, Any], Mapping[str, Sequence[Mapping[str, Any]]] | None]]:
    """Each server's capabilities and lists (``None``: it was not up within ``start_seconds``)."""
    await aggregate.open()
    info = {"name": "mcp-server-start", "version": __version__}
    aggregate.welcome(Hello(aggregate.registry.latest_handshake, _EVERYTHING, info))
    await aggregate.settled(options.start_seconds)
    found: list[tuple[Mapping[str, Any], Mapping[str, Sequence[Mapping[str, Any]]] | None]] = [
        (dict(member.capabilities), dict(member.lists)) if member.state is State.UP else ({}, None)
        for member in members
    ]
    await aggregate.close()
    return found


@dataclass(frozen=True, slots=True)
class Fleet:
    """An aggregate's servers and options as start-up read them (an HTTP server's headers expanded:
    ``${VAR}``, ``${file:PATH}``, as for one upstream), and what no output may show."""

    specs: tuple[ServerSpec, ...]
    options: AggregateOptions
    secrets: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return aggregate_name(self.specs)

    @classmethod
    def read(cls, config: GatewayConfig, servers_path: Path | None, environ: Mapping[str, str]) -> Fleet | None:
        """The servers of ``--servers`` or the configuration's ``servers`` (``None``: none, one upstream)."""
        specs, options = read_servers(config, servers_path)
        if not specs:
            return None
        expanded: list[ServerSpec] = []
        secrets: list[str] = []
        for spec in specs:
            headers = upstream_headers((), spec.headers, environ, base=config.folder)
            expanded.append(dataclasses.replace(spec, headers=dict(headers.headers)))
            secrets += headers.secrets
        return cls(tuple(expanded), options, tuple(secrets))

    def upstreams(self, run: GatewayRun, redact: Callable[[str], str]) -> Callable[[], Connection]:
        """How each session's upstream is made, once start-up found every name usable: an aggregate,
        each server held to its own lockfile entry (``run.lock``); a client of the stateless era
        is carried to it by the era bridge (an aggregate per client identity)."""
        lock, outer = run.lock, run._replace(lock=None, lock_server=None)
        known = start(self.specs, self.options, outer, lock, redact)
        from ..bridge import bridged

        new_aggregate = aggregated(self.specs, self.options, outer, lock, redact, known)
        return bridged(new_aggregate, outer, outer.registry.latest_handshake)
