"""Start-up of what runs tool calls: the policy, the approval book, the gate and the HTTP tools.

Reads the files and the environment once (``MCP_POLICY_FILE``, ``MCP_HTTP_TOOLS_FILE``,
``MCP_EXECUTION_BASE_URL``, ``MCP_APPROVER_TOKEN``); every bad value is a ``SetupError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.settings import SetupError
from ..registry.schemas import SchemaRegistry
from .approvals import ApprovalBook
from .gate import ExecutionGate, RecordSink, log_sink
from .policy import Policy, load_policy

if TYPE_CHECKING:  # the HTTP client stack is imported only when a catalogue is given
    from .http_tools import HttpToolExecutor

__all__ = ["ExecutionSetup", "load_execution_setup"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionSetup:
    """What runs a tool call, read once at start-up: the policy (and its file), the gate, the HTTP
    tools' executor, the approver's token."""

    policy: Policy
    policy_file: Path | None
    gate: ExecutionGate
    executor: HttpToolExecutor | None
    approver_token: str | None

    @property
    def stage_policy(self) -> Policy | None:
        """The policy for the chain's policy stage: the one a file gave (``None``: no stage)."""
        return self.policy if self.policy_file is not None else None


def load_execution_setup(
    environ: Mapping[str, str],
    registry: SchemaRegistry,
    *,
    max_frame_bytes: int,
    max_server_frame_bytes: int | None = None,
    policy_path: Path | None = None,
    tools_path: Path | None = None,
    sink: RecordSink | None = None,
    catalogue: bool = True,
) -> ExecutionSetup:
    """``policy_path`` and ``tools_path`` (the command line) win over the environment. Without
    ``catalogue`` (a gateway: the tools are its upstream's) no tool catalogue is read at all."""
    policy_path = policy_path or _path(environ, "MCP_POLICY_FILE")
    tools_path = (tools_path or _path(environ, "MCP_HTTP_TOOLS_FILE")) if catalogue else None
    policy = load_policy(policy_path, registry) if policy_path is not None else Policy()
    policy.check_limits(max_frame_bytes, max_server_frame_bytes)
    executor = None
    if tools_path is not None:
        from .http_tools import HttpToolExecutor, load_catalogue, parse_base_url

        tools = load_catalogue(tools_path, registry, environ)
        base = environ.get("MCP_EXECUTION_BASE_URL") or ""
        if not base:
            raise SetupError("MCP_EXECUTION_BASE_URL must be set when a tool catalogue is given")
        executor = HttpToolExecutor(
            tools,
            base_url=parse_base_url(base),
            policy=policy,
            registry=registry,
            sink=sink or log_sink(policy.redactor),
            max_body_bytes=max_frame_bytes,
        )
    token = environ.get("MCP_APPROVER_TOKEN") or None
    if token is not None and len(token) < 16:
        raise SetupError("MCP_APPROVER_TOKEN must be at least 16 characters")
    approvals = ApprovalBook.of(policy)
    return ExecutionSetup(
        policy=policy,
        policy_file=policy_path,
        gate=ExecutionGate(policy, approvals),
        executor=executor,
        approver_token=token,
    )


def _path(environ: Mapping[str, str], name: str) -> Path | None:
    value = (environ.get(name) or "").strip()
    return Path(value) if value else None
