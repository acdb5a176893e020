"""A file written whole or not at all: what every writer of a file others read (a ready file, a
report, a page, a golden, a lockfile, a client's configuration) shares; and the modes of the files
that may hold what the traffic carried (logs, reports, pages: the owner's only)."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from pathlib import Path
from typing import BinaryIO

__all__ = ["PRIVATE", "open_private", "write_atomic"]

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


def open_private(path: Path) -> BinaryIO:
    """``path`` opened to append, created (if new) readable by its owner only."""
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE)
    return os.fdopen(descriptor, "ab")
