"""`mcp-server --help` and every subcommand's help open with a one-line example (issue 23)."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from mcp_server import cli

from ..conftest import ROOT


def _subcommands() -> list[str]:
    """Every subcommand the parser knows, read from the parser itself (a new one is held to it too)."""
    [action] = [a for a in cli._parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return sorted(action.choices)


def _help(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "mcp_server", *args, "--help"], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _first_after_usage(text: str) -> str:
    """The first line after the usage paragraph: what a reader sees first."""
    paragraphs = text.split("\n\n")
    assert paragraphs[0].startswith("usage:"), text
    return paragraphs[1].splitlines()[0]


def test_the_program_help_opens_with_an_example() -> None:
    """Issue 23: `mcp-server --help` shows a one-line example first."""
    assert _first_after_usage(_help()).startswith("example: mcp-server ")


@pytest.mark.parametrize("command", _subcommands())
def test_each_subcommand_help_opens_with_an_example_of_itself(command: str) -> None:
    """Issue 23: each subcommand's help shows a one-line `mcp-server COMMAND ...` example first."""
    assert _first_after_usage(_help(command)).startswith(f"example: mcp-server {command} ")
