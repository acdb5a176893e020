"""An HTTP upstream's credentials: the headers it is sent (``--header 'Name: value'``, the gateway
configuration's ``headers``), each value read at start-up from the environment (``${VAR}``) or a file
(``${file:PATH}``), and the values an output must never show.

Reads only the files a value names. A refusal names the header and the variable or file, never a
value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.settings import SetupError

__all__ = ["UpstreamHeaders", "expand", "parse_header", "upstream_headers"]

_REFERENCE = re.compile(r"\$\{(file:)?([^}]*)\}")
_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an RFC 9110 token
# What the gateway writes itself on every request to the upstream: a configured value would fight it.
_RESERVED = frozenset(
    {
        "accept",
        "content-type",
        "content-length",
        "host",
        "last-event-id",
        "mcp-method",
        "mcp-name",
        "mcp-protocol-version",
        "mcp-session-id",
        "transfer-encoding",
    }
)
# A value this short (``1``, ``json``) would blank out common words if hidden everywhere; a credential
# is longer.
_SECRET_MIN = 8


@dataclass(frozen=True, slots=True)
class UpstreamHeaders:
    """The headers sent with every request to the upstream, expanded."""

    headers: Mapping[str, str]

    @property
    def secrets(self) -> tuple[str, ...]:
        """What no output may show: each value, and a credential after its scheme (``Bearer X``: X)."""
        found: set[str] = set()
        for value in self.headers.values():
            found.add(value)
            found.add(value.rsplit(" ", 1)[-1])
        return tuple(sorted((s for s in found if len(s) >= _SECRET_MIN), key=len, reverse=True))

    @property
    def authorization(self) -> bool:
        """An ``Authorization`` is configured: the upstream is not the gateway's to log in to."""
        return any(name.lower() == "authorization" for name in self.headers)


def parse_header(text: str) -> tuple[str, str]:
    """``Name: value`` (as ``curl -H`` takes it) → the name and the value, unexpanded."""
    name, colon, value = text.partition(":")
    name = name.strip()
    if not colon or not _NAME.match(name):
        raise SetupError(f"--header must be 'Name: value', got a value without a valid header name ({name!r})")
    return name, value.strip()


def expand(name: str, value: str, environ: Mapping[str, str], base: Path | None) -> str:
    """``${VAR}`` from the environment, ``${file:PATH}`` from a file (relative to ``base``; its last
    newline dropped); anything missing is a ``SetupError`` that names it."""

    def one(match: re.Match[str]) -> str:
        reference = match.group(2)
        if match.group(1) is None:
            if reference not in environ:
                raise SetupError(f"header {name}: ${{{reference}}} is not set in the environment")
            return environ[reference]
        path = Path(reference).expanduser()
        if base is not None and not path.is_absolute():
            path = base / path
        try:
            return path.read_text().removesuffix("\n").removesuffix("\r")
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise SetupError(f"header {name}: cannot read {path}: {why}") from None

    expanded = _REFERENCE.sub(one, value)
    if "\r" in expanded or "\n" in expanded or "\0" in expanded:
        raise SetupError(f"header {name}: its value holds a line break (a file of one line is expected)")
    return expanded


def _claim(name: str, taken: set[str]) -> None:
    key = name.lower()
    if key in _RESERVED:
        raise SetupError(f"header {name}: the gateway sets it itself")
    if key in taken:
        raise SetupError(f"header {name}: given twice")
    taken.add(key)


def upstream_headers(
    given: Sequence[str], configured: Mapping[str, str], environ: Mapping[str, str], *, base: Path | None = None
) -> UpstreamHeaders:
    """The headers of ``--header`` (``given``) over the configuration's (``configured``, whose files
    are relative to ``base``), expanded from ``environ``; a name given twice, or one the gateway
    writes itself, is a ``SetupError``."""
    headers: dict[str, str] = {}
    taken: set[str] = set()
    for name, value in map(parse_header, given):
        _claim(name, taken)
        headers[name] = expand(name, value, environ, None)
    from_cli = set(taken)
    for name, value in configured.items():
        if name.lower() in from_cli:
            continue  # --header wins over the configuration's
        _claim(name, taken)
        headers[name] = expand(name, value, environ, base)
    return UpstreamHeaders(headers)
