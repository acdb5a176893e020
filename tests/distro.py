"""Programs the tests need from the distribution's packages: found on PATH, else installed with
``apt-get`` (as root) when possible; else ``None`` and why, for the test to skip saying so."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .processes import exclusive

_INSTALL_SECONDS = 900.0


def _found(names: tuple[str, ...]) -> str | None:
    return next((path for path in map(shutil.which, names) if path), None)


def find_program(package: str, *names: str) -> tuple[str | None, str]:
    """The first of ``names`` on PATH, installing ``package`` first when none is (apt-get install,
    then update and install again); else ``None`` and the reason."""
    found = _found(names)
    if found:
        return found, ""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return None, f"{package} is not installed and apt-get cannot install it here (not root, or no apt-get)"
    with exclusive(Path(__file__).resolve().parent.parent / ".cache" / "apt.lock"):  # one worker at a time
        return _installed(package, names)


def _installed(package: str, names: tuple[str, ...]) -> tuple[str | None, str]:
    """``package`` installed by apt-get (install, then update and install again): the program found, or why not."""
    found = _found(names)  # another worker may have installed it meanwhile
    if found:
        return found, ""
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", package]
    outcome = ""
    for command in (install, ["apt-get", "update", "-q"], install):
        try:
            done = subprocess.run(command, capture_output=True, timeout=_INSTALL_SECONDS, env=environment)
        except subprocess.TimeoutExpired:
            return None, f"`{' '.join(command)}` did not finish in {_INSTALL_SECONDS:.0f} s"
        outcome = done.stderr.decode(errors="replace")[-300:] or outcome
        found = _found(names)
        if found:
            return found, ""
    return None, f"apt-get could not install {package}: {outcome}"
