"""The redaction engine: JSON pointers, key names and secret patterns replaced by ``[REDACTED]``.

Pure; compiled once from the policy, then only read. It never touches what is forwarded: callers
redact the copy they are about to write to a log or a report.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.pointer import pointer

__all__ = ["DEFAULT_KEYS", "MASK", "SECRET_PATTERNS", "Redactor"]

MASK = "[REDACTED]"

DEFAULT_KEYS = frozenset(
    {
        "access_token",
        "api_key",
        "apikey",
        "authorization",
        "client_secret",
        "cookie",
        "passwd",
        "password",
        "proxy-authorization",
        "refresh_token",
        "secret",
        "set-cookie",
        "token",
        "x-api-key",
    }
)
"""Key names whose values are always secret, compared case-insensitively."""

# (pattern, replacement): the key-value forms keep the key so a reader sees what was hidden.
SECRET_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"(?i)\bbearer\s+[A-Za-z0-9\-._~+/]+=*", "Bearer " + MASK),
    (r"(?i)\bbasic\s+[A-Za-z0-9+/]{8,}=*", "Basic " + MASK),
    (
        r"(?i)(\b(?:api[_-]?key|apikey|x-api-key|access[_-]?token|auth[_-]?token|client[_-]?secret|secret)"
        r"[\"']?\s*[:=]\s*[\"']?)[^\s\"',;&}]+",
        r"\g<1>" + MASK,
    ),
    (r"(?i)(\b(?:password|passwd|pwd)[\"']?\s*[:=]\s*[\"']?)[^\s\"',;&}]+", r"\g<1>" + MASK),
    (r"\b(?:sk|pk|rk)[-_](?:live[-_]|test[-_])?[A-Za-z0-9_-]{16,}\b", MASK),
    (r"\bAKIA[0-9A-Z]{16}\b", MASK),
    (r"\bgh[pousr]_[A-Za-z0-9]{20,}\b", MASK),
    (r"(?i)(://[^/\s:@]+:)[^/\s@]+@", r"\g<1>" + MASK + "@"),
    (r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}", MASK),
)
"""Bearer and basic credentials, API keys, passwords (also in URLs) and e-mail addresses."""


def _tokens(pointer: str) -> tuple[str, ...]:
    if pointer == "":
        return ()
    if not pointer.startswith("/"):
        raise ValueError(f"not a JSON pointer: {pointer!r}")
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Redactor:
    """What to hide. ``redact`` returns a redacted copy and whether anything was replaced."""

    pointers: tuple[tuple[str, ...], ...] = ()
    keys: frozenset[str] = DEFAULT_KEYS
    patterns: tuple[tuple[re.Pattern[str], str], ...] = ()

    @classmethod
    def build(cls, *, pointers: Iterable[str] = (), keys: Iterable[str] = (), patterns: Iterable[str] = ()) -> Redactor:
        """Compile once: the policy's pointers, keys and patterns on top of the defaults."""
        compiled = [(re.compile(p), r) for p, r in SECRET_PATTERNS]
        compiled += [(re.compile(p), MASK) for p in patterns]
        return cls(
            pointers=tuple(_tokens(p) for p in pointers),
            keys=DEFAULT_KEYS | {k.lower() for k in keys},
            patterns=tuple(compiled),
        )

    def spec(self) -> dict[str, list[str]]:
        """What ``build`` needs to make this redactor again (in another process): ``build(**spec())``."""
        return {
            "pointers": [pointer(tokens) for tokens in self.pointers],
            "keys": sorted(self.keys - DEFAULT_KEYS),
            "patterns": [pattern.pattern for pattern, _ in self.patterns[len(SECRET_PATTERNS) :]],
        }

    def redact_text(self, text: str) -> tuple[str, bool]:
        """``text`` with every secret pattern replaced."""
        applied = False
        for pattern, replacement in self.patterns:
            text, count = pattern.subn(replacement, text)
            applied = applied or count > 0
        return text, applied

    def redact(self, value: Any) -> tuple[Any, bool]:
        """A redacted copy of a JSON value: pointers first, then key names, then string patterns."""
        copy, applied = self._walk(value)
        for tokens in self.pointers:
            copy, hit = _mask_at(copy, tokens)
            applied = applied or hit
        return copy, applied

    def _walk(self, value: Any) -> tuple[Any, bool]:
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, Mapping):
            applied = False
            out: dict[str, Any] = {}
            for key, item in value.items():
                if isinstance(key, str) and key.lower() in self.keys:
                    out[key] = MASK
                    applied = True
                    continue
                out[key], hit = self._walk(item)
                applied = applied or hit
            return out, applied
        if isinstance(value, (list, tuple)):
            applied = False
            items = []
            for item in value:
                redacted, hit = self._walk(item)
                items.append(redacted)
                applied = applied or hit
            return items, applied
        return value, False


def _mask_at(value: Any, tokens: tuple[str, ...]) -> tuple[Any, bool]:
    """``value`` (already a fresh copy) with the member at ``tokens`` masked, if it exists."""
    if not tokens:
        return MASK, True
    head, rest = tokens[0], tokens[1:]
    if isinstance(value, dict) and head in value:
        value[head], hit = _mask_at(value[head], rest)
        return value, hit
    if isinstance(value, list) and head.isdigit() and int(head) < len(value):
        index = int(head)
        value[index], hit = _mask_at(value[index], rest)
        return value, hit
    return value, False
