"""Who may use an HTTP front: the front as an OAuth 2.1 resource server (MCP authorization, "Access
Token Usage"). A bearer token from a file of tokens (compared in constant time), or a JWT of one
issuer (signed with a key of the issuer's JWKS, ``iss``, ``aud`` = the front's resource URL, expiry,
the scopes a tool needs); a refusal's ``WWW-Authenticate`` (RFC 6750 §3, RFC 9728 §5.1); the front's
protected resource metadata (RFC 9728).

A token checked here is the front's own: it is never sent on to an upstream. Nothing here logs a
token.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.settings import SetupError

__all__ = [
    "AUTH_FORMS",
    "METADATA_PATH",
    "AccessCheck",
    "FrontAuth",
    "Grant",
    "JwtIssuer",
    "Refusal",
    "StaticTokens",
    "UpstreamResource",
    "load_access",
    "metadata_url",
    "refuse_open_door",
]

METADATA_PATH = "/.well-known/oauth-protected-resource"
AUTH_FORMS = "tokens:FILE (bearer tokens, one a line) or jwt:ISSUER_URL (JWTs of that issuer)"
_MIN_TOKEN = 16  # a shorter static token is guessable
_CACHE = 1024  # validated JWTs remembered (until they expire), so a session's requests check once
_JWKS_RETRY_SECONDS = 30.0  # an unknown key id fetches the JWKS again, this often at most
# Signatures by a public key only: a shared-secret (HS*) or unsigned token is never an issuer's.
_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
_said: set[str] = set()


@dataclass(frozen=True, slots=True)
class Grant:
    """What a valid token allows: its scopes (``None``: every one, a static token's)."""

    scopes: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class Refusal:
    """An HTTP-level refusal: the catalogue member (its status) and its ``WWW-Authenticate``."""

    rejection: Rejection
    headers: tuple[tuple[bytes, bytes], ...]


class AccessCheck(Protocol):
    """One way of telling a valid bearer token: its grant, or ``None``."""

    authorization_servers: tuple[str, ...]

    async def grant(self, token: str) -> Grant | None: ...


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class StaticTokens:
    """Tokens from a file, one a line (blank lines and ``#`` comments skipped). Compared as SHA-256
    digests with ``hmac.compare_digest`` against every token, so neither a token's length nor which
    one matched shows in the time taken."""

    authorization_servers: tuple[str, ...] = ()

    def __init__(self, digests: tuple[bytes, ...]) -> None:
        self._digests = digests

    @classmethod
    def load(cls, path: Path) -> StaticTokens:
        try:
            lines = path.read_text().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise SetupError(f"--auth tokens:{path}: {why}") from None
        tokens = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
        if not tokens:
            raise SetupError(f"--auth tokens:{path}: no token in the file (one a line)")
        for number, token in enumerate(tokens, 1):
            if len(token) < _MIN_TOKEN or any(c.isspace() for c in token):
                raise SetupError(
                    f"--auth tokens:{path}: token {number} is shorter than {_MIN_TOKEN} characters or holds spaces"
                )
        return cls(tuple(_digest(token) for token in tokens))

    async def grant(self, token: str) -> Grant | None:
        given = _digest(token)
        matched = False
        for digest in self._digests:
            matched |= hmac.compare_digest(given, digest)
        return Grant() if matched else None


class JwtIssuer:
    """JWTs of one issuer, for one audience: the signature (a key of the issuer's JWKS, found through
    its RFC 8414 metadata), ``iss``, ``aud`` containing the front's resource URL, ``exp`` (required)
    and ``nbf``. The ``scope`` claim (or ``scp``) is the grant. ``clock`` is the tests'."""

    def __init__(
        self, issuer: str, audience: str, *, clock: Callable[[], float] = time.time, leeway_seconds: int = 30
    ) -> None:
        self.issuer = issuer
        self.audience = audience
        self.authorization_servers: tuple[str, ...] = (issuer,)
        self._clock = clock
        self._leeway = leeway_seconds
        self._keys: Any = None
        self._fetched_at = float("-inf")
        self._fetching = asyncio.Lock()
        self._valid: OrderedDict[bytes, tuple[float, Grant]] = OrderedDict()

    async def grant(self, token: str) -> Grant | None:
        digest = _digest(token)
        cached = self._valid.get(digest)
        now = self._clock()
        if cached is not None and now < cached[0]:
            return cached[1]
        claims = await self._claims(token)
        if claims is None or not self._holds(claims, now):
            return None
        scope = claims.get("scope", claims.get("scp"))
        scopes = scope.split() if isinstance(scope, str) else scope if isinstance(scope, list) else []
        grant = Grant(frozenset(str(s) for s in scopes))
        self._valid[digest] = (float(claims["exp"]), grant)
        if len(self._valid) > _CACHE:
            self._valid.popitem(last=False)
        return grant

    async def _claims(self, token: str) -> dict[str, Any] | None:
        """The token's claims once its signature is one of the issuer's keys (fetched again, at most
        every ``_JWKS_RETRY_SECONDS``, when the key it names is unknown: the issuer rotated)."""
        from joserfc import jwt
        from joserfc.errors import InvalidKeyIdError, JoseError

        for attempt in range(2):
            keys = await self._jwks(refresh=attempt == 1)
            if keys is None:
                return None
            try:
                return dict(jwt.decode(token, keys, algorithms=_ALGORITHMS).claims)
            except InvalidKeyIdError:
                continue
            except (JoseError, ValueError):
                return None
        return None

    def _holds(self, claims: Mapping[str, Any], now: float) -> bool:
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        expires, not_before = claims.get("exp"), claims.get("nbf", 0)
        return (
            str(claims.get("iss", "")).rstrip("/") == self.issuer.rstrip("/")
            and any(isinstance(a, str) and a.rstrip("/") == self.audience.rstrip("/") for a in audiences)
            and isinstance(expires, int | float)
            and now < expires + self._leeway
            and isinstance(not_before, int | float)
            and not_before - self._leeway <= now
        )

    async def _jwks(self, *, refresh: bool) -> Any:
        """The issuer's key set, fetched once (and again on ``refresh``, rate-limited)."""
        import httpx  # the HTTP client stack, only once a token is checked (not imported over STDIO)
        from joserfc.jwk import KeySet

        async with self._fetching:
            stale = self._keys is None or (refresh and self._clock() - self._fetched_at >= _JWKS_RETRY_SECONDS)
            if stale:
                try:
                    self._keys = KeySet.import_key_set(await self._fetch_jwks())
                    self._fetched_at = self._clock()
                except (httpx.HTTPError, jsonio.JSONSyntaxError, ValueError, KeyError, TypeError) as exc:
                    self._fetched_at = self._clock()
                    _say_once(f"jwt: the issuer's keys cannot be fetched ({type(exc).__name__}); tokens are refused")
            return self._keys

    async def _fetch_jwks(self) -> Any:
        import httpx

        base = self.issuer.rstrip("/")
        parts = urlsplit(base)
        origin, path = f"{parts.scheme}://{parts.netloc}", parts.path
        candidates = [
            f"{origin}/.well-known/oauth-authorization-server{path}",
            f"{base}/.well-known/openid-configuration",
        ]
        async with httpx.AsyncClient(timeout=10.0) as client:
            for url in candidates:
                response = await client.get(url)
                if response.status_code == 200:
                    jwks_uri = jsonio.loads(response.content)["jwks_uri"]
                    return jsonio.loads((await client.get(jwks_uri)).raise_for_status().content)
        raise KeyError("jwks_uri")


def _say_once(line: str) -> None:
    if line not in _said:
        _said.add(line)
        logging.getLogger("mcp_server").warning(line)


def metadata_url(resource: str) -> str:
    """Where a resource's protected resource metadata is (RFC 9728 §3.1: the well-known name goes
    between the host and the resource's path)."""
    parts = urlsplit(resource)
    return f"{parts.scheme}://{parts.netloc}{METADATA_PATH}{parts.path.rstrip('/')}"


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(slots=True, kw_only=True)
class FrontAuth:
    """The check of one HTTP front, whose resource URL is ``resource`` (its public ``/mcp`` URL)."""

    check: AccessCheck
    resource: str
    tool_scopes: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def challenge(self, error: str | None = None, scope: str | None = None) -> tuple[tuple[bytes, bytes], ...]:
        """``WWW-Authenticate``: where the resource metadata is; why a token was refused (none named
        when none was sent, RFC 6750 §3.1)."""
        parts = []
        if error is not None:
            parts.append(f"error={_quoted(error)}")
        if scope is not None:
            parts.append(f"scope={_quoted(scope)}")
        parts.append(f"resource_metadata={_quoted(metadata_url(self.resource))}")
        return ((b"www-authenticate", ("Bearer " + ", ".join(parts)).encode()),)

    async def admit(self, headers: Mapping[str, str]) -> Grant | Refusal:
        """The request's grant, or the 401 that refuses it (no token, or one not accepted)."""
        scheme, _, token = headers.get("authorization", "").strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return Refusal(Rejection(CanonicalError.UNAUTHORIZED), self.challenge())
        grant = await self.check.grant(token.strip())
        if grant is None:
            invalid = Rejection(CanonicalError.UNAUTHORIZED, [{"path": "", "msg": "invalid_token"}])
            return Refusal(invalid, self.challenge("invalid_token"))
        return grant

    def scope_refusal(self, grant: Grant, tool: str | None) -> Refusal | None:
        """A 403 when the tool needs scopes the grant lacks (MCP authorization, "Scope Challenge
        Handling"), naming every scope it needs."""
        needed = self.tool_scopes.get(tool or "") if tool is not None else None
        if not needed or grant.scopes is None or needed <= grant.scopes:
            return None
        scope = " ".join(sorted(needed | grant.scopes))
        detail = [{"path": "", "msg": f"needs {' '.join(sorted(needed))}"}]
        rejection = Rejection(CanonicalError.INSUFFICIENT_SCOPE, detail)
        return Refusal(rejection, self.challenge("insufficient_scope", scope))

    def guard(self, open_paths: tuple[str, ...] = ("/health",)) -> Callable[..., Awaitable[Any]]:
        """The transport's guard (``transport/streamable.py`` ``Guard``): every path but the metadata
        and ``open_paths`` needs a token."""

        async def check(path: str, headers: Mapping[str, str]) -> tuple[Rejection, Any] | None:
            if any(path == open or path.startswith(open + "/") for open in (*open_paths, METADATA_PATH)):
                return None
            admitted = await self.admit(headers)
            return (admitted.rejection, admitted.headers) if isinstance(admitted, Refusal) else None

        return check

    def metadata(self) -> bytes:
        """The front's protected resource metadata (RFC 9728 §2)."""
        document: dict[str, Any] = {"resource": self.resource, "bearer_methods_supported": ["header"]}
        if self.check.authorization_servers:
            document["authorization_servers"] = list(self.check.authorization_servers)
        scopes = sorted({scope for needed in self.tool_scopes.values() for scope in needed})
        if scopes:
            document["scopes_supported"] = scopes
        return jsonio.dumps(document)


def load_access(spec: str) -> Callable[[str], AccessCheck]:
    """``--auth SPEC`` read before anything listens (a bad one is a ``SetupError``); the check is
    made once the front's resource URL is known (a JWT's audience)."""
    form, _, value = spec.partition(":")
    if form == "tokens" and value:
        tokens = StaticTokens.load(Path(value).expanduser())
        return lambda resource: tokens
    if form == "jwt" and value.startswith(("http://", "https://")):
        try:
            import joserfc  # noqa: F401 - the jwt extra, asked for here rather than at the first token
        except ImportError:
            raise SetupError("--auth jwt: needs the jwt extra: pip install 'mcp-server[jwt]'") from None
        return lambda resource: JwtIssuer(value, resource)
    raise SetupError(f"--auth must be {AUTH_FORMS}, got {spec!r}")


_RESOURCE_METADATA = re.compile(r'resource_metadata="[^"]*"|resource_metadata=[^\s,]+')
_METADATA_SECONDS = 300.0  # how long the upstream's metadata is told before it is fetched again


class UpstreamResource:
    """Passthrough mode: the client authenticates to the upstream through the front. The front's
    resource is described with the upstream's authorization servers and scopes (its RFC 9728
    metadata, fetched and kept a while), and the upstream's challenges point to the front's."""

    def __init__(self, upstream_url: str, resource: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.upstream_url = upstream_url
        self.resource = resource
        self._clock = clock
        self._seen: str | None = None  # the metadata URL the upstream's last challenge named
        self._kept: tuple[float, bytes | None] | None = None

    def rewrite(self, challenge: str) -> str:
        """The upstream's ``WWW-Authenticate`` with its ``resource_metadata`` the front's."""
        found = _RESOURCE_METADATA.search(challenge)
        if found is not None:
            self._seen = found.group(0).partition("=")[2].strip('"') or None
            return _RESOURCE_METADATA.sub(f"resource_metadata={_quoted(metadata_url(self.resource))}", challenge)
        return f"{challenge}, resource_metadata={_quoted(metadata_url(self.resource))}"

    async def metadata(self) -> bytes | None:
        """The front's metadata, or ``None`` when the upstream publishes none."""
        now = self._clock()
        if self._kept is not None and now - self._kept[0] < _METADATA_SECONDS:
            return self._kept[1]
        upstream = await self._fetch()
        described = None
        if upstream is not None:
            keep = ("authorization_servers", "scopes_supported", "bearer_methods_supported", "resource_name")
            document = {key: upstream[key] for key in keep if key in upstream}
            described = jsonio.dumps({**document, "resource": self.resource})
        self._kept = (now, described)
        return described

    async def _fetch(self) -> dict[str, Any] | None:
        import httpx  # the HTTP client stack, only when an upstream is asked

        parts = urlsplit(self.upstream_url)
        origin = f"{parts.scheme}://{parts.netloc}"
        candidates = [self._seen] if self._seen else []
        candidates += [f"{origin}{METADATA_PATH}{parts.path.rstrip('/')}", f"{origin}{METADATA_PATH}"]
        async with httpx.AsyncClient(timeout=10.0) as client:
            for url in dict.fromkeys(candidates):
                try:
                    response = await client.get(url)
                    document = jsonio.loads(response.content) if response.status_code == 200 else None
                except (httpx.HTTPError, jsonio.JSONSyntaxError):
                    continue
                if isinstance(document, dict) and isinstance(document.get("authorization_servers"), list):
                    return document
        return None


def refuse_open_door(host: str, *, authenticated: bool, allowed: bool, flag: str) -> None:
    """No open door by default (issue 31): an HTTP front on an address other hosts can reach needs
    a check of tokens, or ``--allow-unauthenticated`` said knowingly; else a ``SetupError``."""
    name = host.strip("[]").lower()
    try:
        loopback = name == "localhost" or ipaddress.ip_address(name).is_loopback
    except ValueError:
        loopback = False  # a host name other than localhost may resolve to anything
    if loopback or authenticated or allowed:
        return
    raise SetupError(
        f"{flag} {host} is reachable from other hosts and nothing checks who calls it: give --auth "
        f"{AUTH_FORMS} (see docs/authentication.md), listen on 127.0.0.1, or pass --allow-unauthenticated "
        "(MCP_ALLOW_UNAUTHENTICATED=1) to serve everyone who can reach the port"
    )
