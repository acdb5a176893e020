"""The peer for the transport bench: the official SDK's own Streamable HTTP server with an equivalent
`validate_asset` tool (the same compiled jsonschema-rs validator of TextContent behind it).

Usage: python bench/sdk_http_peer.py PORT
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import jsonschema_rs
import uvicorn
from mcp.server.mcpserver import MCPServer

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp_server.registry.schemas import SchemaRegistry  # noqa: E402

registry = SchemaRegistry()
text_content: jsonschema_rs.Validator = registry.protocol("2025-11-25").definition_validator("TextContent")
server = MCPServer("sdk-peer")


@server.tool()
def validate_asset(asset: dict[str, Any], schema: str = "TextContent") -> dict[str, Any]:
    """Validate an asset against TextContent."""
    errors = [
        {"path": "/" + "/".join(map(str, e.instance_path)), "msg": e.message} for e in text_content.iter_errors(asset)
    ]
    return {"ok": not errors, "errors": errors}


if __name__ == "__main__":
    app = server.streamable_http_app(json_response=True)
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", http="httptools")
