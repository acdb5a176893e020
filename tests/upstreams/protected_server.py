"""An MCP server that needs a bearer token (the `mcp` SDK's MCPServer with its own auth: 401 with
`WWW-Authenticate: Bearer ... resource_metadata=...`, its RFC 9728 protected resource metadata).

Two ways to check a token: `--token T` accepts that one static token; `--issuer URL` asks the test
authorization server (`auth_server.py`, RFC 7662 introspection) and accepts a token whose audience
is one of `--audience` (default: this server's own URL). Every token presented is appended to
`--seen FILE`, so a test can tell which credentials reached it.

Usage: `protected_server.py PORT (--token T | --issuer URL) [--audience URL ...] [--scope S] [--seen FILE]`,
serving at http://127.0.0.1:PORT/mcp.
"""

from __future__ import annotations

import argparse

import httpx
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from pydantic import AnyHttpUrl


class Verifier:
    def __init__(self, options: argparse.Namespace, own_url: str) -> None:
        self.options = options
        self.audiences = set(options.audience or [own_url])

    async def verify_token(self, token: str) -> AccessToken | None:
        if self.options.seen:
            with open(self.options.seen, "a") as seen:
                seen.write(token + "\n")
        if self.options.token is not None:
            ok = token == self.options.token
            return AccessToken(token=token, client_id="static", scopes=self.options.scope or []) if ok else None
        async with httpx.AsyncClient(timeout=10) as client:
            found = (await client.post(f"{self.options.issuer}/introspect", data={"token": token})).json()
        if not found.get("active") or found.get("aud") not in self.audiences:
            return None
        scopes = str(found.get("scope") or "").split()
        return AccessToken(token=token, client_id=found["client_id"], scopes=scopes, resource=found.get("aud"))


def build(options: argparse.Namespace) -> MCPServer:
    own_url = f"http://127.0.0.1:{options.port}/mcp"
    auth = AuthSettings(
        issuer_url=AnyHttpUrl(options.issuer or "http://127.0.0.1:9"),
        resource_server_url=AnyHttpUrl(own_url),
        required_scopes=options.scope or None,
        validate_token_resource=False,  # the verifier checks the audience itself (``--audience``)
    )
    server = MCPServer("protected-upstream", token_verifier=Verifier(options, own_url), auth=auth)

    @server.tool()
    def echo(text: str) -> str:
        """Echo a string back."""
        return text

    return server


if __name__ == "__main__":
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--token")
    parser.add_argument("--issuer")
    parser.add_argument("--audience", action="append")
    parser.add_argument("--scope", action="append")
    parser.add_argument("--seen")
    options = parser.parse_args()
    app = build(options).streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=options.port, log_level="warning")
