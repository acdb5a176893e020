"""An MCP client's own configuration file as it is: the servers under ``mcpServers`` (Claude Desktop,
Cursor) or ``servers`` (VS Code), each a command (with args and env) or a URL (with headers).

Read by ``wrap`` (which rewrites them) and by the gateway's aggregate (which runs them). No I/O but
reading the file; anything of an unknown shape is a ``SetupError`` naming it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import jsonio
from ..core.settings import SetupError

__all__ = ["SERVER_KEYS", "ServerEntry", "client_servers", "read_client_config", "server_entry"]

# Where clients keep their servers: Claude Desktop and Cursor under ``mcpServers``, VS Code under ``servers``.
SERVER_KEYS = ("mcpServers", "servers")


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerEntry:
    """One server of a client's configuration: a command (``command``, ``args``, ``env``) or a URL
    (``url``, ``headers``); ``kind`` is the entry's ``type`` when it says one (``sse``: legacy SSE)."""

    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    kind: str | None = None
    disabled: bool = False  # Cursor's and Cline's ``"disabled": true``: the client does not start it


def _strings(name: str, key: str, value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        raise SetupError(f"server {name!r}: {key} must be a JSON object of strings")
    return dict(value)


def server_entry(name: str, entry: Any) -> ServerEntry:
    """The server ``name``'s entry read: a command or an http(s) URL, or a ``SetupError`` saying why not."""
    if not isinstance(entry, Mapping):
        raise SetupError(f"server {name!r} is not a JSON object")
    command, url, kind = entry.get("command"), entry.get("url"), entry.get("type")
    disabled = entry.get("disabled") is True
    if isinstance(command, str) and command:
        args = entry.get("args", [])
        if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
            raise SetupError(f"server {name!r}: args must be a list of strings")
        env = _strings(name, "env", entry.get("env"))
        return ServerEntry(command=command, args=tuple(args), env=env, kind=kind, disabled=disabled)
    if isinstance(url, str) and url:
        if kind != "sse" and not url.startswith(("http://", "https://")):
            raise SetupError(f"server {name!r}: url must be http(s), got {url!r}")
        headers = _strings(name, "headers", entry.get("headers"))
        return ServerEntry(url=url, headers=headers, kind=kind, disabled=disabled)
    raise SetupError(f"server {name!r} has neither a command nor a url")


def client_servers(document: Any) -> Iterator[tuple[str, str, Any]]:
    """Each server of a client configuration as ``(key, name, entry)``, in the file's order (the key is
    ``mcpServers`` or ``servers``). An unknown shape is a ``SetupError``."""
    if not isinstance(document, Mapping):
        raise SetupError("the configuration is not a JSON object")
    if any(key in document and not isinstance(document[key], Mapping) for key in SERVER_KEYS):
        raise SetupError(f"{' or '.join(SERVER_KEYS)} must be a JSON object of servers")
    found = [key for key in SERVER_KEYS if key in document]
    if not found:
        raise SetupError(f"no {' or '.join(repr(key) for key in SERVER_KEYS)} object: not an MCP client configuration")
    for key in found:
        for name, entry in document[key].items():
            yield key, name, entry


def read_client_config(path: Path) -> Any:
    """A client's configuration file, parsed (JSON, as the clients write it)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SetupError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return jsonio.loads(raw)
    except jsonio.JSONSyntaxError as exc:
        raise SetupError(f"{path} is not valid JSON (comments are not supported): {exc}") from None
