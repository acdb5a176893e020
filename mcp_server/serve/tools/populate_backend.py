"""populate_backend: validate an asset, then POST it to the configured backend (httpx, no retries)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core import jsonio
from ...core.errors import Rejection
from ...core.settings import SetupError, seconds
from ...execution.policy import Policy
from ...registry.corpus import Corpus, validate_against
from . import Tool, ToolContext

__all__ = ["populate_backend_tool"]

DISABLED: dict[str, Any] = {"ok": False, "reason": "unsupported", "detail": "backend disabled"}
_REPLY_BYTES = 65536  # what is read of the backend's reply at most


def populate_backend_tool(corpus: Corpus, environ: Mapping[str, str], policy: Policy | None = None) -> Tool:
    """``policy`` governs the outbound POST (domain and HTTP method), like every outbound call."""
    base = environ.get("SYN_BACKEND_URL") or ""
    assets_path = environ.get("SYN_BACKEND_ASSETS_PATH") or "/synesthetic-assets/"
    timeout = seconds(environ.get("SYN_BACKEND_TIMEOUT") or "5", name="SYN_BACKEND_TIMEOUT")
    if base and not base.startswith(("http://", "https://")):
        raise SetupError(f"SYN_BACKEND_URL must be an http(s) URL, got {base!r}")
    url = base.rstrip("/") + "/" + assets_path.lstrip("/")

    async def populate_backend(arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        if not base:
            return DISABLED
        asset = arguments["asset"]
        if arguments.get("validate_first", True):
            schema = corpus.schema_for_example(asset, "asset.json")
            outcome = validate_against(corpus, asset, schema)
            if not outcome["ok"]:
                return outcome
        if policy is not None:
            policy.check_outbound(url, "POST")  # a denial is a policy_violation error, never a silent drop
        import httpx  # the HTTP client stack, only once a backend is called

        from ...execution.http_tools import ACCEPT_ENCODING, BodyTooLarge, read_capped

        headers = {"Content-Type": "application/json", "Accept-Encoding": ACCEPT_ENCODING}
        try:
            async with (
                httpx.AsyncClient(timeout=timeout, follow_redirects=False) as client,
                client.stream("POST", url, content=jsonio.dumps(asset), headers=headers) as response,
            ):
                try:  # only an id is read from the reply: a backend answering more is not heard out
                    content = await read_capped(response, _REPLY_BYTES)
                except (BodyTooLarge, Rejection):
                    content = b""
        except httpx.HTTPError:
            return {"ok": False, "reason": "backend_error", "status": 503, "detail": "network_unreachable"}
        if not response.is_success:
            return {
                "ok": False,
                "reason": "backend_error",
                "status": response.status_code,
                "detail": content[:200].decode("utf-8", "replace"),
            }
        asset_id = None
        try:
            body = jsonio.loads(content)
            if isinstance(body, Mapping):
                asset_id = body.get("id", body.get("asset_id"))
        except jsonio.JSONSyntaxError:
            pass
        if asset_id is None and isinstance(asset, Mapping):
            asset_id = asset.get("id")
        return {"ok": True, "asset_id": str(asset_id if asset_id is not None else ""), "backend_url": url}

    return Tool(
        name="populate_backend",
        title="Populate the backend",
        run=populate_backend,
        description="Validate an asset, then POST it to SYN_BACKEND_URL (enabled only when that is set).",
    )
