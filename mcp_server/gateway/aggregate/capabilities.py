"""What an aggregate tells its client it can do: the union of what its servers can, with nothing
promised that a server cannot keep. Pure; no I/O.

* ``tools``, ``prompts``, ``resources``: when any server has them; ``listChanged`` always, as the
  aggregate says so itself whenever a server's list changes or a server comes or goes;
* ``resources.subscribe``, ``logging``, ``completions``: when any server has them, routed to the
  server a request names (a subscription to a server without it is refused, a completion asked of a
  server without it is answered with no values, ``logging/setLevel`` goes to each that has it);
* anything else (``experimental``, ``tasks``, extensions) is never promised: the aggregate would
  have to carry state across servers it does not keep.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ...registry.schemas import SchemaRegistry

__all__ = ["LISTS", "union"]

LISTS = ("tools", "prompts", "resources")  # the capabilities whose lists the aggregate merges
_ROUTED = ("logging", "completions")


def union(capabilities: Iterable[Mapping[str, Any]], registry: SchemaRegistry, version: str) -> dict[str, Any]:
    """The aggregate's ``ServerCapabilities`` at the client's ``version`` from its servers' own."""
    merged: dict[str, Any] = {}
    for own in capabilities:
        for name in LISTS:
            if isinstance(own.get(name), Mapping):
                merged.setdefault(name, {"listChanged": True})
        resources = own.get("resources")
        if isinstance(resources, Mapping) and resources.get("subscribe") is True:
            merged["resources"]["subscribe"] = True
        for name in _ROUTED:
            if isinstance(own.get(name), Mapping):
                merged[name] = {}
    known = registry.protocol(version).definitions.get("ServerCapabilities", {}).get("properties", {})
    return {name: value for name, value in merged.items() if name in known}
