"""One precedence for every gateway setting (issue 29): flag > environment > configuration file >
default, and no key of the configuration file accepted and then ignored."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_server.core.errors import CanonicalError
from mcp_server.core.settings import SetupError
from mcp_server.gateway.config import ENVIRONMENT, GatewayConfig, Mode
from mcp_server.registry.schemas import SchemaRegistry

from ..conftest import ROOT, initialize_frame, server_command, server_env

# Each setting more than the file can give: (its flag's value, the environment's, the file's, the default).
LAYERED: dict[str, tuple[Any, str | None, Any, Any]] = {
    "mode": ("observe", None, "enforce", Mode.ENFORCE),
    "lock": (Path("flag.lock.json"), None, "file.lock.json", None),
    "lock_server": ("from-flag", None, "from-file", None),
    "max_frame_bytes": (3000, "2000", 1000, 1_048_576),
    "max_server_frame_bytes": (30_000, "20000", 10_000, 16 * 1_048_576),
}


def load(tmp_path: Path, registry: SchemaRegistry, document: dict[str, Any] | None, **given: Any) -> GatewayConfig:
    """The configuration from ``document`` (a file) and the ``flags``/``environ`` given."""
    path = None
    if document is not None:
        path = tmp_path / "gateway.json"
        path.write_text(json.dumps(document))
    flags = dict(given.get("flags", {}))
    return GatewayConfig.load(
        path, registry, mode=flags.pop("mode", None), flags=flags, environ=given.get("environ", {})
    )


@pytest.mark.parametrize("key", LAYERED)
def test_a_flag_beats_the_environment_which_beats_the_file_which_beats_the_default(
    tmp_path: Path, registry: SchemaRegistry, key: str
) -> None:
    """Issue 29: every setting has one precedence: flag > environment > config file > default."""
    flag, environment, in_file, default = LAYERED[key]
    environ = {ENVIRONMENT[key]: environment} if environment is not None else {}
    document = {key: in_file}
    expected_file = tmp_path / in_file if key == "lock" else in_file  # a file's lock is relative to it
    assert getattr(load(tmp_path, registry, None), key) == default
    assert getattr(load(tmp_path, registry, document), key) == expected_file
    if environment is not None:
        assert getattr(load(tmp_path, registry, document, environ=environ), key) == int(environment)
    assert getattr(load(tmp_path, registry, document, environ=environ, flags={key: flag}), key) == flag


def test_every_key_of_the_configuration_file_is_read(tmp_path: Path, registry: SchemaRegistry) -> None:
    """Issue 29: no key is accepted and ignored (`max_frame_bytes` in `--config` was)."""
    schema = json.loads((ROOT / "schemas" / "gateway-config.schema.json").read_text())
    values: dict[str, Any] = {
        "mode": "observe",
        "directions": {"server_to_client": "observe"},
        "tools": {"echo": {"mode": "observe"}},
        "rules": {"tool_definition_changed": False},
        "lock": "x.lock.json",
        "lock_server": "x",
        "max_frame_bytes": 1234,
        "max_server_frame_bytes": 5678,
        "grace_seconds": 1.5,
        "check_wait_seconds": 3.5,
        "request_timeout_seconds": 4.5,
        "headers": {"X-Api-Key": "${API_KEY}"},
        "oauth": {"client_id": "gateway"},
        "servers": {"a": {"command": "x"}},
        "aggregate": {"page_size": 7},
    }
    assert set(values) == set(schema["properties"]), "a new key needs its line here"
    default = load(tmp_path, registry, None)
    for key, value in values.items():
        changed = load(tmp_path, registry, {key: value})
        assert changed != default, f"{key} in the file changed nothing"


def test_a_bad_environment_value_for_a_limit_is_refused(tmp_path: Path, registry: SchemaRegistry) -> None:
    """Bad input gets a clear error: a limit that is not a positive integer."""
    with pytest.raises(SetupError, match="MCP_MAX_SERVER_FRAME_BYTES"):
        load(tmp_path, registry, None, environ={"MCP_MAX_SERVER_FRAME_BYTES": "lots"})


def test_a_bad_limit_flag_is_refused_with_a_usage_error(tmp_path: Path) -> None:
    """Bad input gets a clear error: `--max-frame-bytes 0` exits 2 naming the flag."""
    done = subprocess.run(
        [sys.executable, "-m", "mcp_server", "gateway", "--max-frame-bytes", "0", "--", *server_command()],
        capture_output=True,
        text=True,
        env=server_env(tmp_path),
        timeout=60,
    )
    assert done.returncode == 2 and "--max-frame-bytes" in done.stderr


def test_the_configuration_file_limit_is_what_a_live_gateway_enforces(tmp_path: Path) -> None:
    """Issue 29, row 1: `max_frame_bytes` in `--config` holds (it was accepted and ignored)."""
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"max_frame_bytes": 2000}))
    padded = {"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"_meta": {"pad": "x" * 3000}}}
    lines = [json.dumps(initialize_frame("2025-11-25", 1)), json.dumps(padded)]
    done = subprocess.run(
        [sys.executable, "-m", "mcp_server", "gateway", "--config", str(config), "--", *server_command()],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        env=server_env(tmp_path),
        timeout=60,
    )
    replies = {reply["id"]: reply for reply in map(json.loads, done.stdout.splitlines())}
    error = replies[2]["error"]
    assert error["code"] == CanonicalError.PAYLOAD_TOO_LARGE.jsonrpc_code
    assert error["data"]["limit"] == 2000 and error["data"]["size"] > 3000


def gateway_run(tmp_path: Path, *options: str, **env: str) -> subprocess.CompletedProcess[str]:
    """A gateway before `serve`, its client's input closed at once: how it starts and stops."""
    return subprocess.run(
        [sys.executable, "-m", "mcp_server", "gateway", *options, "--", *server_command()],
        input="",
        capture_output=True,
        text=True,
        env=server_env(tmp_path, **env),
        timeout=60,
    )


def test_the_policy_flag_beats_the_policy_variable(tmp_path: Path) -> None:
    """Issue 29: one precedence, for the settings a flag and a variable give too (`--policy` over
    `MCP_POLICY_FILE`): the flag's file is read, the variable's not even opened."""
    policy = tmp_path / "policy.toml"
    policy.write_text('[tools]\nallow = ["*"]\n')
    missing = str(tmp_path / "nowhere.toml")
    assert gateway_run(tmp_path, "--policy", str(policy), MCP_POLICY_FILE=missing).returncode == 0
    refused = gateway_run(tmp_path, "--policy", missing, MCP_POLICY_FILE=str(policy))
    assert refused.returncode == 2 and "nowhere.toml" in refused.stderr


def test_the_log_format_flag_beats_the_log_format_variable(tmp_path: Path) -> None:
    """Issue 29: `--log-format json` over `MCP_LOG_FORMAT=text`: the events on stderr are JSON."""
    done = gateway_run(tmp_path, "--log-format", "json", MCP_LOG_FORMAT="text", MCP_LOG_LEVEL="info")
    events = [line for line in done.stderr.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and events and all(json.loads(line)["event"] for line in events)
