"""A real OAuth 2.1 authorization server for the authentication tests, on loopback: the `mcp` SDK's
server-side auth routes (RFC 8414 metadata, RFC 7591 dynamic registration, authorization code with
PKCE, refresh, the RFC 8707 resource indicator) over a provider of its own that approves every
authorization at once (the user always says yes), and issues access tokens as RS256 JWTs
(`joserfc`) whose audience is the resource asked for.

Beside the SDK's routes: `/jwks.json` (named in the metadata as `jwks_uri`), `/introspect` (RFC
7662, for resource servers that ask rather than check signatures), and for the tests only
`/testing/revoke-access` (every access token issued so far stops being active; refresh tokens stay)
and `/testing/mint` (a token with the claims the test asks for: expired, for another audience).

Usage: `auth_server.py PORT [--token-seconds N]`, issuer http://127.0.0.1:PORT.
"""

from __future__ import annotations

import argparse
import secrets
import time
from typing import Any

from joserfc import jwt
from joserfc.jwk import RSAKey
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_metadata, create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

KEY = RSAKey.generate_key(2048, parameters={"kid": "test-as-1", "use": "sig", "alg": "RS256"})


class AutoApprove:
    """The provider behind the SDK's routes: memory only, every authorization approved."""

    def __init__(self, issuer: str, token_seconds: int) -> None:
        self.issuer = issuer
        self.token_seconds = token_seconds
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.access: dict[str, AccessToken] = {}  # by the JWT's jti
        self.revoked: set[str] = set()  # the jti of access tokens no longer active

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=str(client.client_id),
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject="ada",
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        return self.codes.get(code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(str(client.client_id), authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        return self._issue(str(client.client_id), scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        return self._active(token)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.refresh.pop(token.token, None)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        claims = {"client_id": client_id, "scope": " ".join(scopes), "sub": "ada"}
        if resource is not None:
            claims["aud"] = resource
        access = self.mint(claims, self.token_seconds)
        refresh = secrets.token_urlsafe(24)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(
            access_token=access, expires_in=self.token_seconds, scope=" ".join(scopes) or None, refresh_token=refresh
        )

    def mint(self, claims: dict[str, Any], seconds: int) -> str:
        now = int(time.time())
        jti = secrets.token_hex(8)
        body = {"iss": self.issuer, "iat": now, "exp": now + seconds, "jti": jti, **claims}
        token = jwt.encode({"alg": "RS256", "kid": KEY.kid}, body, KEY)
        audience = body.get("aud")
        self.access[jti] = AccessToken(
            token=token,
            client_id=str(body.get("client_id", "minted")),
            scopes=str(body.get("scope", "")).split(),
            expires_at=int(body["exp"]),
            resource=audience if isinstance(audience, str) else None,
            subject="ada",
        )
        return token

    def _active(self, token: str) -> AccessToken | None:
        try:
            claims = jwt.decode(token, KEY).claims
        except Exception:
            return None
        found = self.access.get(str(claims.get("jti")))
        if found is None or claims["jti"] in self.revoked or (found.expires_at or 0) < time.time():
            return None
        return found


def build(port: int, token_seconds: int) -> Starlette:
    issuer = f"http://127.0.0.1:{port}"
    registration = ClientRegistrationOptions(enabled=True, valid_scopes=["mcp", "tools:admin", "offline_access"])
    revocation = RevocationOptions(enabled=True)
    provider = AutoApprove(issuer, token_seconds)
    routes = create_auth_routes(provider, AnyHttpUrl(issuer), None, registration, revocation)
    metadata = build_metadata(AnyHttpUrl(issuer), None, registration, revocation).model_dump(
        mode="json", exclude_none=True
    )
    metadata["jwks_uri"] = f"{issuer}/jwks.json"
    provider.issuer = metadata["issuer"]  # the tokens' ``iss`` is the metadata's, as written there

    async def described(request: Request) -> Response:
        return JSONResponse(metadata)

    async def jwks(request: Request) -> Response:
        return JSONResponse({"keys": [KEY.as_dict(private=False)]})

    async def introspect(request: Request) -> Response:
        form = await request.form()
        found = provider._active(str(form.get("token", "")))
        if found is None:
            return JSONResponse({"active": False})
        return JSONResponse(
            {
                "active": True,
                "client_id": found.client_id,
                "scope": " ".join(found.scopes),
                "exp": found.expires_at,
                "aud": found.resource,
                "iss": issuer,
            }
        )

    async def revoke_access(request: Request) -> Response:
        provider.revoked |= set(provider.access)
        return JSONResponse({"revoked": True})

    async def mint(request: Request) -> Response:
        asked = await request.json()
        return JSONResponse({"token": provider.mint(asked["claims"], int(asked.get("seconds", 300)))})

    # The metadata route is the SDK's with `jwks_uri` added (the SDK's builder does not name one).
    routes = [route for route in routes if getattr(route, "path", "") != "/.well-known/oauth-authorization-server"]
    routes += [
        Route("/.well-known/oauth-authorization-server", described, methods=["GET"]),
        Route("/jwks.json", jwks, methods=["GET"]),
        Route("/introspect", introspect, methods=["POST"]),
        Route("/testing/revoke-access", revoke_access, methods=["POST"]),
        Route("/testing/mint", mint, methods=["POST"]),
    ]
    return Starlette(routes=routes)


if __name__ == "__main__":
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--token-seconds", type=int, default=3600)
    options = parser.parse_args()
    uvicorn.run(build(options.port, options.token_seconds), host="127.0.0.1", port=options.port, log_level="warning")
