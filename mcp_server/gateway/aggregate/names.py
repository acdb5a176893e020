"""The names an aggregate exposes: ``<prefix><separator><name>`` for tools and prompts, and what
makes one unusable (too long, taken twice). Pure; no I/O.

A tool name must pass every client that may call it. MCP 2025-11-25 (server/tools, "Tool names")
allows ``A-Z a-z 0-9 _ - .`` and up to 128 characters; the function-calling APIs the common clients
hand tools to (Anthropic's, OpenAI's) allow ``^[a-zA-Z0-9_-]{1,64}$``. The separator and prefixes
keep to the stricter set, so the gateway never makes a name a client refuses that the server's own
name would have passed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from ...core.settings import SetupError

__all__ = [
    "DEFAULT_SEPARATOR",
    "MAX_NAME_LENGTH",
    "NameTaken",
    "check_prefix",
    "check_separator",
    "expose",
    "name_problems",
    "prefix_for",
]

DEFAULT_SEPARATOR = "__"
MAX_NAME_LENGTH = 64  # the common clients' limit (MCP itself says 128)
_STRICT = re.compile(r"[A-Za-z0-9_-]*")
_NOT_STRICT = re.compile(r"[^A-Za-z0-9_-]+")


def check_separator(separator: str) -> str:
    """The separator, or a ``SetupError``: it must be one or more of ``A-Z a-z 0-9 _ -``."""
    if not separator or not _STRICT.fullmatch(separator):
        raise SetupError(
            f"aggregate separator {separator!r}: use one or more of A-Z a-z 0-9 _ - (tool names of MCP"
            " 2025-11-25 and the function-calling APIs of the common clients allow no other character)"
        )
    return separator


def check_prefix(server: str, prefix: str) -> str:
    """A prefix given in the configuration, or a ``SetupError`` (the separator's characters; may be empty)."""
    if not _STRICT.fullmatch(prefix):
        raise SetupError(f"server {server!r}: prefix {prefix!r} may hold only A-Z a-z 0-9 _ -")
    return prefix


def prefix_for(server: str) -> str:
    """The prefix of a server named in a client's configuration (any text): its name, each run of
    other characters than ``A-Z a-z 0-9 _ -`` made one ``-``."""
    return _NOT_STRICT.sub("-", server).strip("-") or "server"


def expose(prefix: str, separator: str, name: str) -> str:
    """The name a member's tool or prompt has through the aggregate (an empty prefix: its own)."""
    return f"{prefix}{separator}{name}" if prefix else name


class NameTaken(NamedTuple):
    """An exposed name and every (server, kind, own name) that would take it."""

    exposed: str
    owners: tuple[tuple[str, str, str], ...]


def name_problems(
    listings: Mapping[str, Mapping[str, Iterable[str]]],
    prefixes: Mapping[str, str],
    separator: str,
    max_length: int = MAX_NAME_LENGTH,
) -> list[str]:
    """What keeps the aggregate from starting, each said for its reader: a name over ``max_length``,
    a name two servers' tools (or prompts) would share. ``listings``: server → kind (``tool``,
    ``prompt``) → its own names, in the configuration's order."""
    problems: list[str] = []
    taken: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for server, kinds in listings.items():
        for kind, names in kinds.items():
            for name in names:
                exposed = expose(prefixes[server], separator, name)
                taken.setdefault((kind, exposed), []).append((server, kind, name))
                if len(exposed) > max_length:
                    problems.append(
                        f"server {server!r}: {kind} {name!r} would be exposed as {exposed!r}, {len(exposed)}"
                        f" characters (at most {max_length}, the common clients' limit): give the server a"
                        " shorter name or `prefix`"
                    )
    for (kind, exposed), owners in taken.items():
        if len(owners) > 1:
            who = " and ".join(f"server {server!r} ({kind} {name!r})" for server, kind, name in owners)
            problems.append(f"{kind} name {exposed!r} would be exposed by {who}: give one of them another `prefix`")
    return problems
