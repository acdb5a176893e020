"""The aggregate's merged lists: its servers' tools, prompts, resources and resource templates in one
stable order (servers as configured, each server's items in its own order), paged, and who owns
each name and URI. Pure; no I/O.

Tools and prompts get their exposed names; resources keep their URIs, and a URI two servers list is
listed (and read) from the first. What cannot be exposed (a name taken, too long; a URI listed by
an earlier server) is left out and returned as ``Hidden``, for the report.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ...core.errors import CanonicalError, Rejection
from .names import expose

__all__ = ["KINDS", "LIST_CHANGED", "Hidden", "Merged", "Source", "page"]

# A list method → the key of its result's items, and the capability that says a server has it.
KINDS: Mapping[str, tuple[str, str]] = {
    "tools/list": ("tools", "tools"),
    "prompts/list": ("prompts", "prompts"),
    "resources/list": ("resources", "resources"),
    "resources/templates/list": ("resourceTemplates", "resources"),
}
# A capability whose list changed → the notification that says so.
LIST_CHANGED: Mapping[str, str] = {
    "tools": "notifications/tools/list_changed",
    "prompts": "notifications/prompts/list_changed",
    "resources": "notifications/resources/list_changed",
}
_CURSOR = "page-"


class Source(NamedTuple):
    """One server's share of the lists: its place (in the configuration's order), name, prefix and
    items by result key."""

    place: int
    server: str
    prefix: str
    items: Mapping[str, Sequence[Mapping[str, Any]]]


class Hidden(NamedTuple):
    """An item left out of a merged list: the server, the list's key, its own name (or URI), the
    rule it breaks (``exposed_name_taken``, ``exposed_name_too_long``, ``resource_uri_shared``)."""

    place: int
    key: str
    name: str
    rule: str


def _template_pattern(template: str) -> re.Pattern[str]:
    """An RFC 6570 URI template as a regular expression that its expansions match (roughly: a simple
    variable is one path segment, a reserved or fragment one anything, a query part optional)."""
    parts, last = [], 0
    for found in re.finditer(r"\{([^}]*)\}", template):
        parts.append(re.escape(template[last : found.start()]))
        operator = found.group(1)[:1]
        parts.append({"+": ".*", "#": "(#.*)?", "?": r"(\?.*)?", "&": "(&.*)?"}.get(operator, "[^/?#]*"))
        last = found.end()
    parts.append(re.escape(template[last:]))
    return re.compile("".join(parts))


class Merged:
    """The merged lists of the servers up now, and the owners of what they expose."""

    def __init__(self, sources: Sequence[Source], separator: str, max_length: int) -> None:
        self.items: dict[str, list[Mapping[str, Any]]] = {key: [] for key, _ in KINDS.values()}
        self.named: dict[str, dict[str, tuple[int, str]]] = {"tools": {}, "prompts": {}}  # exposed → (server, own)
        self.uris: dict[str, int] = {}
        self.templates: list[tuple[int, str, re.Pattern[str]]] = []
        self.schemes: dict[str, int] = {}
        self.hidden: list[Hidden] = []
        for source in sources:
            for key in ("tools", "prompts"):
                self._names(source, key, separator, max_length)
            self._resources(source)

    def _names(self, source: Source, key: str, separator: str, max_length: int) -> None:
        table = self.named[key]
        for item in source.items.get(key, ()):
            own = item.get("name")
            if not isinstance(own, str):
                continue
            exposed = expose(source.prefix, separator, own)
            if exposed in table or len(exposed) > max_length:
                rule = "exposed_name_taken" if exposed in table else "exposed_name_too_long"
                self.hidden.append(Hidden(source.place, key, own, rule))
                continue
            table[exposed] = (source.place, own)
            self.items[key].append(item if exposed == own else {**item, "name": exposed})

    def _resources(self, source: Source) -> None:
        for item in source.items.get("resources", ()):
            uri = item.get("uri")
            if not isinstance(uri, str):
                continue
            if uri in self.uris:
                self.hidden.append(Hidden(source.place, "resources", uri, "resource_uri_shared"))
                continue
            self.uris[uri] = source.place
            self.schemes.setdefault(uri.partition(":")[0], source.place)
            self.items["resources"].append(item)
        known = {template for _, template, _ in self.templates}
        for item in source.items.get("resourceTemplates", ()):
            template = item.get("uriTemplate")
            if not isinstance(template, str) or template in known:
                continue
            self.templates.append((source.place, template, _template_pattern(template)))
            self.schemes.setdefault(template.partition(":")[0], source.place)
            self.items["resourceTemplates"].append(item)

    def owner_of_uri(self, uri: str) -> int | None:
        """The server a resource URI is read from: the first that lists it, else the first whose
        template it matches, else the first with a resource of its scheme."""
        found = self.uris.get(uri)
        if found is not None:
            return found
        for index, template, pattern in self.templates:
            if uri == template or pattern.fullmatch(uri):
                return index
        return self.schemes.get(uri.partition(":")[0])


def page(items: Sequence[Mapping[str, Any]], cursor: Any, size: int) -> tuple[list[Mapping[str, Any]], str | None]:
    """One page of a merged list from ``cursor`` (``None``: the first) and the next page's cursor."""
    offset = 0
    if cursor is not None:
        text = cursor if isinstance(cursor, str) else ""
        digits = text.removeprefix(_CURSOR)
        if not text.startswith(_CURSOR) or not digits.isdigit():
            raise Rejection(CanonicalError.INVALID_PARAMS, [{"path": "/params/cursor", "msg": "unknown_cursor"}])
        offset = int(digits)
    end = offset + size
    return list(items[offset:end]), (f"{_CURSOR}{end}" if end < len(items) else None)
