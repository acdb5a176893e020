"""The tool lockfile: each upstream's tools by name, fingerprint and whole definition, per server;
read (validated against ``schemas/lockfile.schema.json``), made, and compared with a listing.

No I/O but reading the file (the command that writes it writes what ``lock_document`` makes); what
a comparison finds is the gateway's and ``check``'s to act on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from ..core import jsonio
from ..core.diff import diff_documents
from ..core.pointer import pointer
from ..core.settings import SetupError
from .config import read_config
from .schemas import SchemaRegistry

__all__ = [
    "LOCKFILE_VERSION",
    "LOCK_RULES",
    "REMOVED",
    "RENAMED",
    "Finding",
    "LockCheck",
    "Lockfile",
    "ServerLock",
    "lock_document",
]

LOCKFILE_VERSION = 1

CHANGED, UNLOCKED = "locked_tool_changed", "unlocked_tool"
REMOVED, RENAMED = "locked_tool_removed", "locked_tool_renamed"
LOCK_RULES = (CHANGED, UNLOCKED, REMOVED, RENAMED)
"""What a listing can differ from the lock in: each a rule of the report (``tool_not_locked`` is
the catalogue's, for a call of a tool the lock does not allow)."""


def _body(definition: Mapping[str, Any]) -> str:
    """The fingerprint of a definition without its name: the same tool under another name has it too."""
    return jsonio.fingerprint({key: value for key, value in definition.items() if key != "name"})


class Finding(NamedTuple):
    """A difference between a listing and the lock: ``rule`` (one of ``LOCK_RULES``), the tool as
    listed (a removed one: as locked), the RFC 6902 patch from the locked definition (``{}`` for a
    tool the lock lacks) to the listed one (``{}`` for a removed tool), and a renamed tool's locked name."""

    rule: str
    tool: str
    patch: list[dict[str, Any]]
    was: str | None = None


@dataclass(frozen=True, slots=True)
class ServerLock:
    """One server's locked tools: name → (fingerprint, definition), and each body's locked name."""

    name: str
    tools: Mapping[str, tuple[str, Mapping[str, Any]]]
    bodies: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Lockfile:
    path: Path
    servers: Mapping[str, ServerLock]

    @classmethod
    def load(cls, path: Path, registry: SchemaRegistry) -> Lockfile:
        """The lockfile at ``path``; a ``SetupError`` naming the line (syntax) or the pointer (schema,
        a fingerprint that is not its definition's, a name twice) when it is not a sound one."""
        document = read_config(path, what="lockfile", schema="lockfile.schema.json", registry=registry)
        servers = {}
        for key, entry in document["servers"].items():
            tools: dict[str, tuple[str, Mapping[str, Any]]] = {}
            for index, tool in enumerate(entry["tools"]):
                where = f"lockfile {path}: at {pointer(('servers', key, 'tools', index))}"
                name, definition = tool["name"], tool["definition"]
                if definition["name"] != name:
                    raise SetupError(f"{where}/definition/name: {definition['name']!r} is not the tool's name {name!r}")
                if jsonio.fingerprint(definition) != tool["fingerprint"]:
                    raise SetupError(f"{where}/fingerprint: not the fingerprint of its definition")
                if name in tools:
                    raise SetupError(f"{where}/name: {name!r} is locked twice")
                tools[name] = (tool["fingerprint"], definition)
            bodies = {_body(definition): name for name, (_, definition) in tools.items()}
            servers[key] = ServerLock(key, tools, bodies)
        return cls(path, servers)

    def server(self, name: str | None) -> ServerLock | None:
        """The server ``name`` (``None``: the only one, if the lockfile holds one)."""
        if name is None:
            return next(iter(self.servers.values())) if len(self.servers) == 1 else None
        return self.servers.get(name)


def lock_document(servers: Mapping[str, Iterable[Mapping[str, Any]]]) -> dict[str, Any]:
    """The lockfile of ``servers`` (key → the tools it lists), in its stable order: servers and each
    server's tools by name (written with sorted keys, two-space indent: a pull request's diff shows
    what changed and nothing else)."""
    return {
        "lockfileVersion": LOCKFILE_VERSION,
        "servers": {
            key: {
                "tools": [
                    {"name": tool["name"], "fingerprint": jsonio.fingerprint(tool), "definition": tool}
                    for tool in sorted(tools, key=lambda tool: str(tool["name"]))
                ]
            }
            for key, tools in sorted(servers.items())
        },
    }


class LockCheck:
    """One session's listing held against its server's lock: pages in, findings out, and the tools
    whose calls the lock does not allow (not locked, or listed otherwise than locked).

    Deterministic in the lock and the listing: every gateway reading the same file decides the same.
    """

    def __init__(self, lock: Lockfile, server: str | None) -> None:
        self.lock = lock
        self.server = lock.server(server)
        self._changed: set[str] = set()  # locked names listed with another definition
        self._listed: set[str] = set()  # names of the listing under way (its pages so far)
        self._moved: set[str] = set()  # locked names listed under another name in it

    def resolve(self, server_name: str | None) -> None:
        """The upstream named itself (``serverInfo.name``): its entry, when none was chosen."""
        if self.server is None and server_name is not None:
            self.server = self.lock.servers.get(server_name)

    def allows(self, name: str) -> bool:
        """Whether a call of ``name`` may go: it is locked, and was not listed otherwise."""
        server = self.server
        return server is not None and name in server.tools and name not in self._changed

    def listed(
        self, tools: Iterable[Any], *, last_page: bool, fingerprints: Mapping[str, str] | None = None
    ) -> list[Finding]:
        """A page of ``tools/list``: what differs from the lock (and, on the last page, what the
        whole listing no longer holds). ``fingerprints``: the listed tools' own, when known already."""
        known = fingerprints or {}
        locked = self.server.tools if self.server is not None else {}
        bodies = self.server.bodies if self.server is not None else {}
        found: list[Finding] = []
        for definition in tools:
            if not isinstance(definition, Mapping) or not isinstance(definition.get("name"), str):
                continue  # the result's schema check reports it
            name = definition["name"]
            self._listed.add(name)
            entry = locked.get(name)
            if entry is None:
                was = bodies.get(_body(definition))
                rule = UNLOCKED if was is None else RENAMED
                base = {} if was is None else locked[was][1]
                if was is not None:
                    self._moved.add(was)
                found.append(Finding(rule, name, diff_documents(base, definition), was))
            elif entry[0] != (known.get(name) or jsonio.fingerprint(definition)):
                self._changed.add(name)
                found.append(Finding(CHANGED, name, diff_documents(entry[1], definition)))
            else:
                self._changed.discard(name)
        if last_page:
            gone = sorted(set(locked) - self._listed - self._moved)
            found += [Finding(REMOVED, name, diff_documents(locked[name][1], {})) for name in gone]
            self._listed, self._moved = set(), set()
        return found
