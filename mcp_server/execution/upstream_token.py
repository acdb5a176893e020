"""The gateway's bearer token for an HTTP upstream that asks for OAuth, as a run starts: where it is
kept, the one a login left there, and the login that renews it, made on the upstream's first
refusal. The official SDK's OAuth client (``upstream_login.py``, hundreds of milliseconds to import)
is not imported by a run the upstream never refuses.

No network, no SDK; reads the token file only.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from ..core import jsonio
from ..core.settings import SetupError

__all__ = ["DeferredLogin", "LoginSettings", "oauth_installed", "read_token_file", "token_path"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LoginSettings:
    """How to log in to one upstream: the configuration's ``oauth`` table and where tokens live."""

    url: str
    token_file: Path
    client_id: str | None = None
    client_secret: str | None = None
    scope: str | None = None
    redirect_port: int = 0  # 0: the one registered before, else a free one
    interactive: bool = True  # may send the user to the browser (not in ``doctor``, ``lock``)
    wait_seconds: float = 300.0  # for the user to finish in the browser
    version: str = "2025-11-25"  # the MCP-Protocol-Version the probe states

    def __post_init__(self) -> None:
        if self.client_id is not None and self.redirect_port == 0:
            raise SetupError("oauth.client_id needs oauth.redirect_port: the port registered for its redirect URI")


def token_path(url: str, environ: Mapping[str, str]) -> Path:
    """The upstream's token file: ``MCP_OAUTH_DIR`` (else ``$XDG_STATE_HOME/mcp-server/oauth``), one
    file per URL, named for its host and a digest of the whole URL."""
    configured = environ.get("MCP_OAUTH_DIR")
    state = environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    folder = Path(configured).expanduser() if configured else Path(state) / "mcp-server" / "oauth"
    host = re.sub(r"[^A-Za-z0-9.-]+", "-", urlsplit(url).netloc) or "upstream"
    return folder / f"{host}-{hashlib.sha256(url.encode()).hexdigest()[:12]}.json"


def read_token_file(path: Path) -> dict[str, Any]:
    """The token file's document (``{}`` when there is none); ``OSError`` or ``JSONSyntaxError`` when
    it cannot be read."""
    try:
        document = jsonio.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    return document if isinstance(document, dict) else {}


def oauth_installed() -> bool:
    """Whether the official SDK (the ``oauth`` extra) is installed, without importing it."""
    return importlib.util.find_spec("mcp") is not None


class Login(Protocol):
    """What renews the token: ``upstream_login.UpstreamLogin``."""

    def authorization(self) -> str | None: ...

    async def renew(self, rejected: str | None, status: int, challenge: str | None) -> bool: ...


class DeferredLogin:
    """The run's login to the upstream (``transport/http_client.py``'s ``Authorizer``): the token the
    file holds at start, and the login ``make`` builds on the first refusal (or ``now``), which then
    answers for every session of the run."""

    def __init__(self, settings: LoginSettings, make: Callable[[LoginSettings], Login]) -> None:
        self.settings = settings
        self._make = make
        self._login: Login | None = None
        try:
            stored = read_token_file(settings.token_file).get("tokens")
        except (OSError, jsonio.JSONSyntaxError):
            stored = None  # the login says so, and logs in again, when the upstream refuses
        token = stored.get("access_token") if isinstance(stored, dict) else None
        self._stored = f"Bearer {token}" if isinstance(token, str) else None

    def now(self) -> Login:
        """The login itself, made once (the SDK imported then)."""
        if self._login is None:
            self._login = self._make(self.settings)
        return self._login

    def authorization(self) -> str | None:
        return self._stored if self._login is None else self._login.authorization()

    async def renew(self, rejected: str | None, status: int, challenge: str | None) -> bool:
        return await self.now().renew(rejected, status, challenge)
