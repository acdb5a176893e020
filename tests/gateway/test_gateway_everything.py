"""The reference server `@modelcontextprotocol/server-everything` (npm) behind the gateway (issue 5)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ..conftest import server_env
from ..node_tools import SERVER_EVERYTHING, npm_bin

WAIT = 60.0

# Arguments for every tool the reference server lists (nothing that reaches the network).
ARGUMENTS: dict[str, dict[str, Any]] = {
    "echo": {"message": "hello"},
    "get-annotated-message": {"messageType": "success", "includeImage": True},
    "get-env": {},
    "get-resource-links": {"count": 2},
    "get-resource-reference": {"resourceType": "Text", "resourceId": 1},
    "get-structured-content": {"location": "Chicago"},
    "get-sum": {"a": 2, "b": 3},
    "get-tiny-image": {},
    "gzip-file-as-resource": {
        "name": "hello.txt.gz",
        "data": "data:text/plain;base64,aGVsbG8gd29ybGQ=",
        "outputType": "resource",
    },
    "toggle-simulated-logging": {},
    "toggle-subscriber-updates": {},
    "trigger-long-running-operation": {"duration": 0.3, "steps": 3},
    "simulate-research-query": {"topic": "validation"},
}


class Session:
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.next_id = 100
        self.server_requests: list[str] = []

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request; answer any server→client request meanwhile; return our reply."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.next_id += 1
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            frame["params"] = params
        self.process.stdin.write(json.dumps(frame).encode() + b"\n")
        self.process.stdin.flush()
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            assert line, "the gateway closed stdout"
            message = json.loads(line)
            if "method" in message and "id" in message:  # a server→client request: decline it politely
                self.server_requests.append(message["method"])
                answer = {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32601, "message": "Not supported by this client"},
                }
                self.process.stdin.write(json.dumps(answer).encode() + b"\n")
                self.process.stdin.flush()
            elif message.get("id") == self.next_id:
                return message
        raise AssertionError(f"no reply to {method}")


def test_a_scripted_session_over_every_tool_prompt_and_resource_has_no_violations(tmp_path: Path) -> None:
    """Issue 5: the reference server through the gateway in observe mode, zero violations."""
    everything = npm_bin(SERVER_EVERYTHING, "mcp-server-everything")
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_server", "gateway", "--mode", "observe", "--", str(everything), "stdio"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(tmp_path, MCP_RUNS_DIR=str(tmp_path / "runs")),
    )
    session = Session(process)
    try:
        init = session.request(
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "script", "version": "1"}},
        )
        assert init["result"]["protocolVersion"] == "2025-11-25"
        assert process.stdin is not None
        process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        process.stdin.flush()
        tools = session.request("tools/list")["result"]["tools"]
        assert {tool["name"] for tool in tools} >= set(ARGUMENTS) - {"simulate-research-query"}
        for tool in tools:
            reply = session.request("tools/call", {"name": tool["name"], "arguments": ARGUMENTS.get(tool["name"], {})})
            assert "result" in reply or "error" in reply
        prompts = session.request("prompts/list")["result"]["prompts"]
        for prompt in prompts:
            arguments = {a["name"]: "Chicago" for a in prompt.get("arguments", []) if a.get("required")}
            session.request("prompts/get", {"name": prompt["name"], "arguments": arguments})
        resources = session.request("resources/list")["result"]["resources"]
        assert resources
        for resource in resources[:10]:
            session.request("resources/read", {"uri": resource["uri"]})
        session.request("resources/templates/list")
        session.request("ping")
    finally:
        process.communicate(b"", timeout=WAIT)
    [path] = sorted((tmp_path / "runs").rglob("*-report.json"))
    report = json.loads(path.read_text())
    assert report["frames"]["client_to_server"]["tools/call"] == len(tools)
    assert report["violations"] == {}, json.dumps(report["examples"], indent=1)[:4000]
