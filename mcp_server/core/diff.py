"""RFC 6902 diffs between two JSON documents, deterministic. Pure; no I/O.

Only ``add``, ``remove`` and ``replace``; object keys in sorted order; an array that differs is
replaced whole; the patch is sorted by path, and for one path ``remove`` < ``add`` < ``replace``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .pointer import pointer

__all__ = ["diff_documents"]

_OP_ORDER = {"remove": 0, "add": 1, "replace": 2}


def _same(a: Any, b: Any) -> bool:
    """JSON equality: 1 and 1.0 are equal, but true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) in (int, float) and type(b) in (int, float):
        return bool(a == b)
    return type(a) is type(b) and bool(a == b)


def _walk(base: Any, new: Any, tokens: list[str], patch: list[dict[str, Any]]) -> None:
    if _same(base, new):
        return
    if isinstance(base, Mapping) and isinstance(new, Mapping):
        for key in sorted(set(base) | set(new)):
            path = [*tokens, key]
            if key not in new:
                patch.append({"op": "remove", "path": pointer(path)})
            elif key not in base:
                patch.append({"op": "add", "path": pointer(path), "value": new[key]})
            else:
                _walk(base[key], new[key], path, patch)
        return
    patch.append({"op": "replace", "path": pointer(tokens), "value": new})


def diff_documents(base: Any, new: Any) -> list[dict[str, Any]]:
    """The patch that turns ``base`` into ``new``."""
    patch: list[dict[str, Any]] = []
    _walk(base, new, [], patch)
    patch.sort(key=lambda op: (op["path"], _OP_ORDER[op["op"]]))
    return patch
