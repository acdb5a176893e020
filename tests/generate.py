"""Instances generated from a JSON Schema (hypothesis-jsonschema), on the Hypothesis installed."""

from __future__ import annotations

import types
from typing import Any

from hypothesis.internal.conjecture import utils as conjecture_utils

__all__ = ["from_schema"]


class _Many:
    """hypothesis-jsonschema 0.23 drives Hypothesis' former ``many`` API (``more()``/``reject()``);
    current Hypothesis offers only ``with many(...) as e: for _ in e``. The same draws, old shape."""

    def __init__(self, data: Any, **sizes: Any) -> None:
        self._many = conjecture_utils.many(data, **sizes)
        self._many.__enter__()
        self._steps = iter(self._many)

    def more(self) -> bool:
        if next(self._steps, False) is None:
            return True
        self._many.__exit__(None, None, None)
        return False

    def reject(self) -> None:
        self._many.reject()


def from_schema(schema: Any) -> Any:
    """``hypothesis_jsonschema.from_schema``, its ``many`` calls shimmed where Hypothesis lacks the old API."""
    import hypothesis_jsonschema._from_schema as generator
    from hypothesis_jsonschema import from_schema as generate

    if not hasattr(conjecture_utils.many, "more"):
        generator.cu = types.SimpleNamespace(many=_Many)  # type: ignore[attr-defined]
    return generate(schema)
