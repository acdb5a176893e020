"""The upstream's tools as the gateway learns them from ``tools/list``: compiled and pinned.

Each tool's ``inputSchema``/``outputSchema`` is meta-validated and compiled through the registry
(shared by fingerprint). The fingerprint of each tool's whole definition is pinned at first
sight; a later list that changes it is reported with the RFC 6902 patch between the two.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core import jsonio
from ..core.diff import diff_documents
from .schemas import SchemaError, SchemaRegistry, ToolIO

__all__ = ["ListOutcome", "UpstreamTools"]


@dataclass(slots=True)
class ListOutcome:
    invalid: list[tuple[str, str]] = field(default_factory=list)  # (tool, why)
    changed: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)  # (tool, patch)
    fingerprints: dict[str, str] = field(default_factory=dict)  # each tool's, as listed (the lockfile's too)


class UpstreamTools:
    """A ``ToolSchemas`` for the schema check, fed by the upstream's ``tools/list`` results.

    ``complete``: every page of the upstream's list has been learnt since it last said the list
    changed, so a tool not in it is not the upstream's. ``waits``: the gateway waits for the list
    before it checks a call, so a call of a tool it has no schema for once it waited (not in the
    whole list, or the list did not come) is refused: enforce means enforce, nothing unchecked goes
    upstream (ADR 26). The offline check, which has only what a capture holds, does not wait and
    passes such a call on.
    """

    def __init__(self, registry: SchemaRegistry, *, waits: bool = False) -> None:
        self._registry = registry
        self.waits = waits
        self.complete = False
        self._io: dict[str, ToolIO] = {}
        self._pins: dict[str, tuple[str, Mapping[str, Any]]] = {}

    @property
    def table(self) -> Mapping[str, ToolIO]:
        return self._io

    @property
    def strict(self) -> bool:
        """A call of a tool without a schema is refused (``tool_not_found``): the gateway waited."""
        return self.waits

    def io(self, name: str) -> ToolIO | None:
        return self._io.get(name)

    def learn(self, tools: list[Any]) -> ListOutcome:
        outcome = ListOutcome()
        for definition in tools:
            if not isinstance(definition, Mapping) or not isinstance(definition.get("name"), str):
                continue  # the result's schema check has reported it already
            name = definition["name"]
            pin = outcome.fingerprints[name] = jsonio.fingerprint(definition)
            pinned = self._pins.get(name)
            if pinned is None:
                self._pins[name] = (pin, definition)
            elif pinned[0] != pin:
                outcome.changed.append((name, diff_documents(pinned[1], definition)))
                self._pins[name] = (pin, definition)
            try:
                input_schema = definition.get("inputSchema", {})
                output_schema = definition.get("outputSchema")
                self._io[name] = ToolIO(
                    tool_id=name,
                    input_schema=input_schema,
                    output_schema=output_schema,
                    input=self._registry.compile(input_schema, name=f"tool {name!r} inputSchema"),
                    output=None
                    if output_schema is None
                    else self._registry.compile(output_schema, name=f"tool {name!r} outputSchema"),
                )
            except SchemaError as exc:
                self._io.pop(name, None)
                outcome.invalid.append((name, str(exc)))
        return outcome
