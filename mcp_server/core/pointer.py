"""RFC 6901 JSON pointers: how every violation and every patch names a place in a document. Pure."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["pointer"]


def _escape(token: object) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def pointer(tokens: Iterable[object]) -> str:
    """RFC 6901 JSON pointer for a sequence of reference tokens (``""`` is the root)."""
    return "".join("/" + _escape(t) for t in tokens)
