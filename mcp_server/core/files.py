"""A file written whole or not at all: what every writer of a file others read (a ready file, a
report, a page, a golden, a lockfile, a client's configuration) shares."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(path: Path, data: bytes, *, keep_mode: bool = False, mode: int | None = None) -> None:
    """``data`` over ``path`` through a temporary file beside it and a rename, so a reader never sees
    half a file; ``keep_mode``: ``path`` keeps its permission bits; ``mode``: the file is created with
    these (a secret's 0600 from the first byte). On ``OSError`` no temporary file is left behind and
    the error goes on to the caller."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if mode is None:
            temporary.write_bytes(data)
        else:
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
            with os.fdopen(descriptor, "wb") as file:
                os.fchmod(file.fileno(), mode)  # a file left from before keeps its bits otherwise
                file.write(data)
        if keep_mode:
            shutil.copymode(path, temporary)
        temporary.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
