"""``mcp-server wrap CONFIG.json``: an MCP client's configuration rewritten so that every server in it
runs behind ``mcp-server gateway``, the original kept beside it, and ``--undo``. Files only: it starts
nothing, and a file it cannot read whole is left exactly as it was.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core import jsonio
from ..core.files import write_atomic
from ..core.settings import SetupError
from ..registry.client_config import SERVER_KEYS, client_servers, server_entry

__all__ = ["declare", "gateway_command", "run", "runs_dir", "wrap_servers"]

BACKUP_SUFFIX = ".bak"


def declare(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", type=Path, help="the client's configuration file (JSON)")
    parser.add_argument("--undo", action="store_true", help="put the original back from its backup (CONFIG.bak)")
    parser.add_argument("--force", action="store_true", help="--undo even if CONFIG changed after it was wrapped")
    parser.add_argument(
        "--gateway-command", metavar="PATH", help="the mcp-server the client starts (default: this one, by full path)"
    )


def gateway_command() -> str:
    """This ``mcp-server`` by its full path: a client starts its servers with a PATH of its own (a
    desktop app's is short), where a bare name may not be found."""
    launched = Path(sys.argv[0])
    if launched.name == "mcp-server" and launched.is_file():
        return str(launched.absolute())
    beside = Path(sys.executable).parent / "mcp-server"  # ``python -m mcp_server`` in a virtual environment
    if beside.is_file():
        return str(beside)
    return shutil.which("mcp-server") or "mcp-server"


def runs_dir(environ: Mapping[str, str]) -> str:
    """Where a wrapped gateway writes its log and reports: an absolute folder, as a client starts its
    servers in a working directory of its own (a desktop app's may be ``/``, where nothing is written)."""
    configured = environ.get("MCP_RUNS_DIR")
    if configured:
        return str(Path(configured).expanduser().absolute())
    state = environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return str(Path(state) / "mcp-server" / "runs")


def _with_runs(entry: dict[str, Any], name: str, runs: str) -> dict[str, Any]:
    """The entry's ``env`` with ``MCP_RUNS_DIR`` (unless it names one already)."""
    env = entry.get("env", {})
    if not isinstance(env, Mapping):
        raise SetupError(f"server {name!r}: env must be a JSON object")
    return entry if "MCP_RUNS_DIR" in env else {**entry, "env": {**env, "MCP_RUNS_DIR": runs}}


def _wrapped(entry: Mapping[str, Any]) -> bool:
    command, args = entry.get("command"), entry.get("args")
    return (
        isinstance(command, str)
        and Path(command).name == "mcp-server"
        and isinstance(args, list)
        and args[:1] == ["gateway"]
    )


def _carried_headers(name: str, headers: Any) -> tuple[list[str], dict[str, str]]:
    """A remote entry's ``headers`` as the gateway's ``--header`` arguments (issue 31). A literal value
    (a credential) moves to the entry's ``env`` and the argument names its variable, so that it is
    never in the process's arguments; a value naming variables already (``${...}``) stays as it is."""
    if not isinstance(headers, Mapping) or not all(isinstance(v, str) for v in headers.values()):
        raise SetupError(f"server {name!r}: headers must be a JSON object of strings")
    args: list[str] = []
    env: dict[str, str] = {}
    for header, value in headers.items():
        if "${" in value:
            args += ["--header", f"{header}: {value}"]
            continue
        variable = "MCP_HEADER_" + re.sub(r"[^A-Z0-9]", "_", str(header).upper())
        env[variable] = value
        args += ["--header", f"{header}: ${{{variable}}}"]
    return args, env


def _behind_url(name: str, entry: Mapping[str, Any], gateway: str, url: str) -> dict[str, Any]:
    """A remote server's entry as a local one: the gateway with ``--upstream URL`` and its headers
    (keys kept in place)."""
    headers, variables = _carried_headers(name, entry.get("headers", {}))
    rewritten: dict[str, Any] = {}
    for key, value in entry.items():
        if key == "url":
            rewritten["command"], rewritten["args"] = gateway, ["gateway", "--upstream", url, *headers]
        elif key == "type":
            rewritten["type"] = "stdio"
        elif key != "headers":
            rewritten[key] = value
    if variables:
        env = rewritten.get("env", {})
        if not isinstance(env, Mapping):
            raise SetupError(f"server {name!r}: env must be a JSON object")
        rewritten["env"] = {**env, **variables}
    return rewritten


def _wrap_entry(name: str, entry: Any, gateway: str, runs: str) -> tuple[dict[str, Any] | None, str]:
    """The server ``name``'s entry behind the gateway (its log under ``runs``), or ``None`` and why
    it stays as it is."""
    if isinstance(entry, Mapping) and _wrapped(entry):
        return None, "already behind the gateway"
    read = server_entry(name, entry)
    if read.command is not None:
        wrapped = {**entry, "command": gateway, "args": ["gateway", "--", read.command, *read.args]}
        return _with_runs(wrapped, name, runs), "wrapped"
    assert read.url is not None
    if read.kind == "sse":
        return None, "left alone: a legacy SSE server (the gateway speaks Streamable HTTP)"
    return _with_runs(_behind_url(name, entry, gateway, read.url), name, runs), "wrapped"


def wrap_servers(document: Any, gateway: str, runs: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Every server of a client configuration behind ``gateway`` (its log under ``runs``): the new
    document, and each server's name with what became of it. An unknown shape is a ``SetupError``."""
    rewritten, outcomes = dict(document) if isinstance(document, Mapping) else {}, []
    for key, name, entry in client_servers(document):
        wrapped, outcome = _wrap_entry(name, entry, gateway, runs)
        if wrapped is not None:
            rewritten[key] = {**rewritten[key], name: wrapped}
        outcomes.append((name, outcome))
    return rewritten, outcomes


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SetupError(f"cannot read {path}: {exc.strerror}") from None


def run(args: argparse.Namespace, command: list[str], environ: Mapping[str, str]) -> int:
    """Exit 0 rewritten (or nothing to change), 2 when the file cannot be read, parsed or written."""
    path: Path = args.config
    backup = path.with_name(path.name + BACKUP_SUFFIX)  # beside the name given (a link's, not its target's)
    if args.undo:
        return _undo(path, backup, force=args.force)
    raw = _read(path)
    document = _parse(raw, path)
    rewritten, outcomes = wrap_servers(document, args.gateway_command or gateway_command(), runs_dir(os.environ))
    lines = [f"{name}: {outcome}" for name, outcome in outcomes]
    if rewritten == document:
        sys.stdout.write("\n".join([*lines, f"{path}: nothing to change"]) + "\n")
        return 0
    try:
        with backup.open("xb") as kept:  # exclusive: an earlier backup is never overwritten
            kept.write(raw)
        shutil.copymode(path, backup)
    except FileExistsError:
        raise SetupError(f"{backup} exists already: `mcp-server wrap --undo {path}` first, or move it away") from None
    except OSError as exc:
        backup.unlink(missing_ok=True)  # half a backup is none
        raise SetupError(f"cannot write the backup {backup}: {exc.strerror}") from None
    try:
        _replace(path, _rendered(rewritten))
    except SetupError:
        backup.unlink(missing_ok=True)  # the configuration is as it was: nothing to undo, nothing left behind
        raise
    lines += [f"{path}: rewritten; the original is {backup}", f"undo: mcp-server wrap --undo {path}"]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _parse(raw: bytes, path: Path) -> Any:
    try:
        return jsonio.loads(raw)  # (a key given twice is refused: one of the two would be lost in the rewrite)
    except jsonio.DuplicateKeyError as exc:
        raise SetupError(f"{path}: {exc}; it is left as it is") from None
    except jsonio.JSONSyntaxError as exc:
        raise SetupError(f"{path} is not valid JSON (comments are not supported): {exc}") from None


def _rendered(document: Any) -> bytes:
    return jsonio.dumps_pretty(document, sort_keys=False)


def _replace(path: Path, data: bytes) -> None:
    """Write ``data`` over ``path`` at once (a temporary file beside it, then a rename), its mode kept.
    Through a link, the file it leads to is written and the link stays."""
    try:
        write_atomic(path.resolve(), data, keep_mode=True)
    except OSError as exc:
        raise SetupError(f"cannot write {path}: {exc.strerror}") from None


def _as_wrapped(original: bytes, current: bytes) -> bool:
    """Whether ``current`` is exactly what ``wrap`` made of ``original``: the gateway command and the
    runs folder it wrote are read back from ``current``, and the original wrapped again with them."""
    try:
        before, after = jsonio.loads(original), jsonio.loads(current)
    except jsonio.JSONSyntaxError:
        return False
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return False
    for key in SERVER_KEYS:
        servers, was = after.get(key), before.get(key)
        if not isinstance(servers, Mapping) or not isinstance(was, Mapping):
            continue
        for name, entry in servers.items():
            old = was.get(name)
            if isinstance(entry, Mapping) and _wrapped(entry) and isinstance(old, Mapping) and not _wrapped(old):
                env = entry.get("env")
                runs = env.get("MCP_RUNS_DIR") if isinstance(env, Mapping) else None
                try:
                    again, _ = wrap_servers(before, str(entry["command"]), str(runs or ""))
                except SetupError:
                    return False
                return _rendered(again) == current
    return False


def _undo(path: Path, backup: Path, *, force: bool) -> int:
    """The original back from the backup (which is used up), through a link if ``path`` is one;
    refused when the configuration's content is no longer what ``wrap`` wrote (restoring would lose
    that change), unless ``force``."""
    if not backup.is_file():
        raise SetupError(f"no backup {backup}: nothing to undo")
    original = _read(backup)
    if not force and path.exists() and not _as_wrapped(original, _read(path)):
        raise SetupError(
            f"{path} changed after it was wrapped; restoring {backup} would lose that change "
            "(compare the two, then `--undo --force`)"
        )
    _replace(path, original)
    backup.unlink(missing_ok=True)
    sys.stdout.write(f"{path}: restored from {backup}\n")
    return 0
