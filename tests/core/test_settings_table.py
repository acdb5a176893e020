"""The settings' one table (issue 32): the configuration reference is generated from it, and it names
every variable, flag and configuration key the package reads, with the defaults the code uses."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import re
from pathlib import Path

import pytest

from mcp_server.cli import _parser
from mcp_server.core.settings import (
    ENDPOINTS,
    LOG_FORMATS,
    SETTING,
    SETTINGS,
    Setting,
    Settings,
    configuration_markdown,
)
from mcp_server.gateway.config import GatewayConfig
from mcp_server.registry.schemas import SchemaRegistry

ROOT = Path(__file__).resolve().parent.parent.parent
_VARIABLE = re.compile(r"^(MCP|SYN|OTEL)_[A-Z0-9_]+$")


def test_the_configuration_reference_is_generated_from_the_settings_table() -> None:
    """Issue 32: docs/configuration.md is the settings' table, as docs/errors.md is the catalogue."""
    assert (ROOT / "docs" / "configuration.md").read_text() == configuration_markdown()


def _variables_read(path: Path) -> set[str]:
    """The variable names a module spells out (its ``__all__`` names constants, not variables)."""
    tree = ast.parse(path.read_text())
    exported = {
        node.value
        for assign in tree.body
        if isinstance(assign, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in assign.targets)
        for node in ast.walk(assign.value)
        if isinstance(node, ast.Constant)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _VARIABLE.match(node.value)
    } - exported


def test_every_variable_the_package_reads_is_in_the_settings_table() -> None:
    """Issue 32: the reference cannot miss a variable: each one the code names is a row (a prefix
    such as the one `wrap` writes headers under is the start of a row's variable)."""
    rows = {setting.variable for setting in SETTINGS if setting.variable}
    missing = sorted(
        f"{path.relative_to(ROOT)}: {name}"
        for path in (ROOT / "mcp_server").rglob("*.py")
        for name in _variables_read(path)
        if name not in rows and not (name.endswith("_") and any(row.startswith(name) for row in rows))
    )
    assert missing == []


def test_the_table_names_exactly_the_keys_of_the_gateway_configuration_file() -> None:
    """Issue 32: every key `--config` takes is a row, and every row's key is one the file takes."""
    schema = json.loads((ROOT / "schemas" / "gateway-config.schema.json").read_text())
    assert {setting.key for setting in SETTINGS if setting.key} == set(schema["properties"])


def _options(command: str) -> dict[str, argparse.Action]:
    [commands] = [a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return {option: action for action in commands.choices[command]._actions for option in action.option_strings}


@pytest.mark.parametrize("setting", [s for s in SETTINGS if s.flags], ids=lambda s: s.name)
def test_each_flag_in_the_table_is_an_option_of_its_commands_with_the_tables_default(setting: Setting) -> None:
    """Issue 32: a flag the reference names is one the command line takes, and where the command
    line states a default it is the table's."""
    assert setting.commands
    for command in setting.commands:
        options = _options(command)
        for flag in setting.flags:
            action = options.get(flag.split()[0])
            assert action is not None, f"{command} {flag}"
            if action.default not in (None, False) and not isinstance(action.default, list):
                assert type(setting.default)(action.default) == setting.default, f"{command} {flag}"


def _another_value(setting: Setting) -> str:
    """A valid value of the setting's variable other than its default."""
    default = setting.default
    if isinstance(default, bool):
        return "1"
    if isinstance(default, int | float):
        return "7"
    if isinstance(default, Path):
        return "elsewhere"
    if isinstance(default, tuple):
        return "gateway.example"
    choices = next((c for c in (ENDPOINTS, LOG_FORMATS) if default in c), None)
    return choices[1] if choices else "other.example"


_FIELDS = {field.name for field in dataclasses.fields(Settings)}


@pytest.mark.parametrize("setting", [s for s in SETTINGS if s.name in _FIELDS], ids=lambda s: s.name)
def test_each_variable_of_the_table_sets_its_setting_and_its_default_is_the_tables(setting: Setting) -> None:
    """Issue 32: what the reference says is what the code does: the row's variable changes the
    row's setting, and with no variable the setting is the row's default."""
    assert setting.variable is not None
    assert getattr(Settings.from_env({}), setting.name) == setting.default
    changed = getattr(Settings.from_env({setting.variable: _another_value(setting)}), setting.name)
    assert changed != setting.default


def test_the_gateway_configuration_defaults_are_the_tables() -> None:
    """Issue 32: a gateway run with no file, flag or variable uses the defaults the reference states."""
    config = GatewayConfig.load(None, SchemaRegistry())
    keys = [setting.key for setting in SETTINGS if setting.key and setting.default is not None]
    assert len(keys) >= 6
    assert {key: getattr(config, key) for key in keys} == {key: SETTING[key].default for key in keys}
