"""Signed approval grants: a held call's approval as a token any replica holding the same key verifies.

HMAC-SHA256 over (approval id, tool, arguments' digest, policy version, expiry); nothing about a grant
is kept in memory but the ids already carried out (one replica's, until they expire). No I/O but the
key file read at start-up.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.files import read_secret
from ..core.settings import SetupError
from .approvals import arguments_digest

__all__ = ["MIN_KEY_BYTES", "Grant", "GrantSigner", "signer_from"]

PREFIX = "mcp-approval.1."
MIN_KEY_BYTES = 32
KEY_VARIABLE = "MCP_APPROVAL_KEY"
KEY_FILE_VARIABLE = "MCP_APPROVAL_KEY_FILE"


@dataclass(frozen=True, slots=True, kw_only=True)
class Grant:
    """What a token says: this approval of this call, under this policy, until ``expires`` (epoch s)."""

    id: str
    tool: str
    arguments_sha256: str
    policy_version: str
    expires: int
    # A continuation: the call was approved and carried out, and its upstream asked for more input;
    # the retry needs no second yes, and brings the upstream's own ``requestState`` (``carried``).
    continuation: bool = False
    carried: str | None = None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _refused(error: CanonicalError, path: str, msg: str) -> Rejection:
    return Rejection(error, [{"path": path, "msg": msg}], extra={"policy_violation": True})


class GrantSigner:
    """Issues and verifies grants with one key. ``shared``: the key came from the environment (every
    replica given it verifies the others' grants); else it is this process's own, random."""

    def __init__(self, key: bytes, *, shared: bool, clock: Callable[[], float] = time.time) -> None:
        self._key = key
        self.shared = shared
        self.clock = clock
        self._spent: dict[str, int] = {}  # approval id → expiry: carried out here, refused a second time

    @staticmethod
    def is_grant(token: Any) -> bool:
        """Whether ``token`` (a ``requestState``) is shaped like a grant of ours, not an upstream's state."""
        return isinstance(token, str) and token.startswith(PREFIX)

    def issue(
        self,
        tool: str,
        arguments: Any,
        policy_version: str,
        ttl_seconds: float,
        *,
        carried: str | None = None,
        continuation: bool = False,
    ) -> tuple[Grant, str]:
        """A new approval of the call ``tool(arguments)``, valid ``ttl_seconds``; and its token. A
        ``continuation`` is the approval already given, for the call's next round with its upstream."""
        grant = Grant(
            id=secrets.token_hex(8),
            tool=tool,
            arguments_sha256=arguments_digest(arguments),
            policy_version=policy_version,
            expires=int(self.clock() + ttl_seconds),
            continuation=continuation,
            carried=carried,
        )
        return grant, self.seal(PREFIX, _document(grant))

    def seal(self, prefix: str, claims: Mapping[str, Any]) -> str:
        """A token of ``claims`` signed with this key, under ``prefix`` (a grant's, or another state of
        the gateway's own: each use has its prefix, so one's token is never read as another's)."""
        payload = prefix + _b64(jsonio.canonical(claims))
        return payload + "." + _b64(self._mac(payload))

    def unseal(self, token: Any, prefix: str) -> dict[str, Any] | None:
        """The claims of a token this key sealed under ``prefix``; ``None`` for anything else."""
        if not isinstance(token, str) or not token.startswith(prefix):
            return None
        payload, _, signature = token.rpartition(".")
        try:
            good = hmac.compare_digest(_unb64(signature), self._mac(payload))
            claims = jsonio.loads(_unb64(payload.removeprefix(prefix))) if good else None
        except (ValueError, binascii.Error, jsonio.JSONSyntaxError):
            claims = None
        return claims if isinstance(claims, dict) else None

    def _mac(self, payload: str) -> bytes:
        return hmac.new(self._key, payload.encode(), hashlib.sha256).digest()

    def open(self, token: str) -> Grant:
        """The grant ``token`` carries, when this key signed it; else APPROVAL_NOT_FOUND."""
        document = self.unseal(token, PREFIX)
        try:
            grant = Grant(**document) if document is not None else None
        except TypeError:
            grant = None
        if grant is None:
            raise _refused(CanonicalError.APPROVAL_NOT_FOUND, "/params/requestState", "approval_not_found")
        return grant

    def verify(self, token: str, tool: str, arguments: Any, policy_version: str) -> Grant:
        """The grant, when it approves exactly this call under this policy and has not expired nor been
        carried out here; else the catalogued refusal. A grant passed is spent on this replica."""
        grant = self.open(token)
        if grant.tool != tool or grant.arguments_sha256 != arguments_digest(arguments):
            raise _refused(CanonicalError.APPROVAL_MISMATCH, "/params/arguments", "arguments_changed")
        if grant.policy_version != policy_version:
            raise _refused(CanonicalError.APPROVAL_MISMATCH, "/params/requestState", "policy_changed")
        now = self.clock()
        if grant.expires <= now:
            raise _refused(CanonicalError.APPROVAL_EXPIRED, "/params/requestState", "approval_expired")
        for spent in [i for i, expires in self._spent.items() if expires <= now]:
            del self._spent[spent]
        if grant.id in self._spent:
            raise _refused(CanonicalError.APPROVAL_NOT_FOUND, "/params/requestState", "approval_used")
        self._spent[grant.id] = grant.expires
        return grant


def _document(grant: Grant) -> dict[str, Any]:
    document: dict[str, Any] = {
        "id": grant.id,
        "tool": grant.tool,
        "arguments_sha256": grant.arguments_sha256,
        "policy_version": grant.policy_version,
        "expires": grant.expires,
    }
    if grant.continuation:
        document.update(continuation=True, carried=grant.carried)
    return document


def signer_from(environ: Mapping[str, str]) -> GrantSigner:
    """The signer of ``MCP_APPROVAL_KEY`` or of the file ``MCP_APPROVAL_KEY_FILE`` names (at least 32
    bytes: replicas given the same key verify each other's grants); without either, a random key of
    this process's own. A short, unreadable or doubly given key is a ``SetupError``."""
    inline, path = environ.get(KEY_VARIABLE), environ.get(KEY_FILE_VARIABLE)
    if inline and path:
        raise SetupError(f"give {KEY_VARIABLE} or {KEY_FILE_VARIABLE}, not both")
    if not inline and not path:
        return GrantSigner(secrets.token_bytes(MIN_KEY_BYTES), shared=False)
    if path:
        key = read_secret(Path(path), name=KEY_FILE_VARIABLE).strip()
        source = f"{KEY_FILE_VARIABLE} ({path})"
    else:
        key, source = (inline or "").encode(), KEY_VARIABLE
    if len(key) < MIN_KEY_BYTES:
        raise SetupError(
            f"{source}: the approval key must be at least {MIN_KEY_BYTES} bytes, got {len(key)}"
            " (make one with `openssl rand -hex 32`)"
        )
    return GrantSigner(key, shared=True)
