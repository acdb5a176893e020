"""RFC 6902 diffs between two JSON documents, deterministic, at any depth (no recursion). Pure; no I/O.

Only ``add``, ``remove`` and ``replace``; object keys in sorted order; an array that differs is
replaced whole; the patch is sorted by path, and for one path ``remove`` < ``add`` < ``replace``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .pointer import pointer

__all__ = ["diff_documents"]

_OP_ORDER = {"remove": 0, "add": 1, "replace": 2}


def _same_scalar(a: Any, b: Any) -> bool:
    """JSON equality of two values that are not both arrays or both objects: 1 and 1.0 are equal,
    but true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if type(a) in (int, float) and type(b) in (int, float):
        return bool(a == b)
    return type(a) is type(b) and bool(a == b)


def _same(a: Any, b: Any) -> bool:
    """JSON equality, with a stack of its own: any depth the parser reads."""
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if isinstance(x, Mapping) and isinstance(y, Mapping):
            if x.keys() != y.keys():
                return False
            pending.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                return False
            pending.extend(zip(x, y, strict=True))
        elif isinstance(x, (Mapping, list)) or isinstance(y, (Mapping, list)) or not _same_scalar(x, y):
            return False
    return True


def _walk(base: Any, new: Any, patch: list[dict[str, Any]]) -> None:
    pending: list[tuple[Any, Any, list[str]]] = [(base, new, [])]
    while pending:
        old, value, tokens = pending.pop()
        if _same(old, value):
            continue
        if not (isinstance(old, Mapping) and isinstance(value, Mapping)):
            patch.append({"op": "replace", "path": pointer(tokens), "value": value})
            continue
        for key in sorted(set(old) | set(value)):
            path = [*tokens, key]
            if key not in value:
                patch.append({"op": "remove", "path": pointer(path)})
            elif key not in old:
                patch.append({"op": "add", "path": pointer(path), "value": value[key]})
            else:
                pending.append((old[key], value[key], path))


def diff_documents(base: Any, new: Any) -> list[dict[str, Any]]:
    """The patch that turns ``base`` into ``new``."""
    patch: list[dict[str, Any]] = []
    _walk(base, new, patch)
    patch.sort(key=lambda op: (op["path"], _OP_ORDER[op["op"]]))
    return patch
