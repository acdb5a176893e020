"""A file written whole or not at all: what every writer of a file others read (a ready file, a
report, a page, a golden, a lockfile, a client's configuration) shares; the modes of the files that
may hold what the traffic carried (logs, reports, pages: the owner's only); and the ready file,
which is never someone else's file."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from .settings import SetupError

__all__ = ["PRIVATE", "ReadyFile", "open_private", "read_secret", "write_atomic"]

PRIVATE = 0o600
"""Logs, reports and pages: read and written by their owner only (they quote the traffic)."""
_SHARED = 0o666  # less the umask: a golden, a lockfile, a ready file


def write_atomic(path: Path, data: bytes, *, keep_mode: bool = False, mode: int = _SHARED) -> None:
    """``data`` over ``path`` through a temporary file beside it and a rename, so a reader never sees
    half a file; ``keep_mode``: ``path`` keeps its permission bits, else the new file has ``mode``
    (less the umask). The temporary file is made new, never through a link another user planted
    (``O_EXCL``, ``O_NOFOLLOW``); on ``OSError`` none is left behind and the error goes to the caller."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(temporary, flags, mode)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        if keep_mode:
            shutil.copymode(path, temporary)
        temporary.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


def read_secret(path: Path, *, name: str) -> bytes:
    """A file holding a secret (a key, a credential), read only when its owner alone may read or write
    it: a file group or others can open is a ``SetupError`` (chmod 600), as is one that cannot be read.
    The mode is that of the file opened, not of a name someone could swap after a check."""
    try:
        with path.open("rb") as handle:
            mode = stat.S_IMODE(os.fstat(handle.fileno()).st_mode)
            if mode & 0o077:
                raise SetupError(f"{name} ({path}) may be opened by others (mode {mode:04o}): chmod 600 it")
            return handle.read()
    except OSError as exc:
        raise SetupError(f"{name}: cannot read {path}: {exc.strerror}") from None


def open_private(path: Path) -> BinaryIO:
    """``path`` opened to append, created (if new) readable by its owner only."""
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE)
    return os.fdopen(descriptor, "ab")


# What this program writes in a ready file: ``<pid> <ISO-8601 UTC> [address]``.
_READY = re.compile(rb"(\d{1,10}) \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ( \S+)?\n")


class ReadyFile:
    """``MCP_READY_FILE``: claimed at start-up, written once the server listens, removed at the end
    only while it still holds what this process wrote. A file there already is taken over only when
    it is a ready file this user's server wrote (servers sharing the default path, as a client
    starting several wrapped gateways does, take it over in turn); anything else (another's file, a
    link, a file of other content, a path that cannot be written) is a ``SetupError`` before
    anything starts."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.written: bytes | None = None

    def claim(self) -> None:
        where = f"MCP_READY_FILE {self.path}"
        try:
            found = os.lstat(self.path)
        except FileNotFoundError:
            found = None
        except OSError as exc:
            raise SetupError(f"{where}: {exc.strerror}") from None
        if found is not None and not self._ours(found):
            raise SetupError(f"{where} exists and is not a ready file of this user's: it is not overwritten")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SetupError(f"{where}: cannot make its folder: {exc.strerror}") from None
        if not os.access(self.path.parent, os.W_OK | os.X_OK):
            raise SetupError(f"{where}: its folder cannot be written")

    def _ours(self, found: os.stat_result) -> bool:
        """Whether the file there is a ready file this user's server wrote (a regular file of its form)."""
        if not stat.S_ISREG(found.st_mode) or found.st_uid != os.getuid() or found.st_size > 512:
            return False
        try:
            return _READY.fullmatch(self.path.read_bytes()) is not None
        except OSError:
            return False

    def write(self, address: str | None = None) -> None:
        """``<pid> <ISO-8601 UTC>`` (and the address, for a server that picked its own port)."""
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        data = (f"{os.getpid()} {stamp}" + (f" {address}" if address else "") + "\n").encode()
        try:
            write_atomic(self.path, data)
        except OSError as exc:
            raise SetupError(f"MCP_READY_FILE {self.path}: {exc.strerror}") from None
        self.written = data

    def remove(self) -> None:
        """Removed if this process wrote it and it is still what was written (another may own it now)."""
        if self.written is None:
            return
        with contextlib.suppress(OSError):
            if self.path.read_bytes() == self.written:
                self.path.unlink()
        self.written = None
