"""``mcp-server approvals``: list the calls a running server holds for approval, or answer one.

Talks to the server's ``/approvals`` endpoints over HTTP (``MCP_APPROVER_TOKEN`` as the bearer
token when set). Prints JSON on stdout; exit 0 when the server accepted, 1 when it refused.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping

from ..core import jsonio
from ..core.settings import SetupError

__all__ = ["declare", "run"]


def declare(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help="the server's base URL (default: MCP_APPROVALS_URL or http://127.0.0.1:8000)")
    parser.add_argument("action", choices=["list", "allow", "deny"])
    parser.add_argument("id", nargs="?", help="the held call's approval id")
    parser.add_argument("sha256", nargs="?", help="to allow: the arguments' SHA-256 shown by `list`")


def run(args: argparse.Namespace, command: list[str], environ: Mapping[str, str]) -> int:
    base = (args.url or environ.get("MCP_APPROVALS_URL") or "http://127.0.0.1:8000").rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise SetupError(f"--url must be an http(s) URL, got {base!r}")
    headers = {"Content-Type": "application/json"}
    token = environ.get("MCP_APPROVER_TOKEN")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if args.action != "list" and not args.id:
        raise SetupError(f"approvals {args.action} needs the approval id")
    if args.action == "allow" and not args.sha256:
        raise SetupError("approvals allow needs the arguments' SHA-256 shown by `approvals list`")
    import httpx  # here: every other command starts without the HTTP client

    try:
        if args.action == "list":
            response = httpx.get(f"{base}/approvals", headers=headers, timeout=10.0)
        else:
            body = {"decision": args.action} | ({"arguments_sha256": args.sha256} if args.sha256 else {})
            response = httpx.post(
                f"{base}/approvals/{args.id}", content=jsonio.dumps(body), headers=headers, timeout=10.0
            )
    except httpx.HTTPError as exc:
        raise SetupError(f"cannot reach {base}: {type(exc).__name__}") from None
    sys.stdout.write(response.text.rstrip("\n") + "\n")
    return 0 if response.is_success else 1
