"""A pytest plugin: the ``mcp_golden`` fixture checks a script's events against a golden file.

A project loads it with ``pytest_plugins = ["mcp_server.testing"]`` in its ``conftest.py``;
``pytest --update-goldens`` rewrites the goldens instead of failing (their diff is the review).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from .harness.golden import check_events, run_script_file, write_golden
from .observe.events import read_events

__all__ = ["mcp_golden", "pytest_addoption"]

GoldenCheck = Callable[..., None]


def pytest_addoption(parser: Any) -> None:
    parser.addoption(
        "--update-goldens", action="store_true", default=False, help="rewrite mcp-server golden event logs"
    )


@pytest.fixture
def mcp_golden(request: Any) -> GoldenCheck:
    """``mcp_golden(script, golden, transport="stdio", upstream=None)``: fail with the RFC 6902 patch of
    every event that differs from the golden (or rewrite it under ``--update-goldens``)."""
    update = bool(request.config.getoption("--update-goldens"))

    def check(
        script: Path,
        golden: Path,
        *,
        transport: str = "stdio",
        upstream: Sequence[str] | None = None,
        deterministic: bool = True,
    ) -> None:
        actual = run_script_file(script, transport=transport, upstream=upstream, deterministic=deterministic)
        if update:
            write_golden(golden, actual)
            return
        if not golden.exists():
            pytest.fail(f"no golden at {golden}: run pytest --update-goldens to record it")
        differences = check_events(list(read_events(golden)), actual)
        if differences:
            lines = [difference.line() for difference in differences]
            pytest.fail(f"{len(differences)} event(s) differ from {golden}:\n" + "\n".join(lines), pytrace=False)

    return check
