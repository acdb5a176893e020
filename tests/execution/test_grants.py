"""Signed approval grants (issue 21: approvals survive the hop between replicas): bound to the call
(tool, arguments' digest), the policy version and an expiry, verified by any signer with the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server.core.errors import CanonicalError, Rejection
from mcp_server.core.settings import SetupError
from mcp_server.execution.grants import MIN_KEY_BYTES, GrantSigner, signer_from

KEY = b"k" * MIN_KEY_BYTES
ARGUMENTS = {"text": "hello", "n": 1}


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def refusal(call: object) -> Rejection:
    assert callable(call)
    with pytest.raises(Rejection) as refused:
        call()
    return refused.value


def test_a_grant_issued_by_one_replica_is_verified_by_another_with_the_same_key() -> None:
    """Issue 21: nothing is kept by the issuer; the token alone carries the approval to a peer."""
    grant, token = GrantSigner(KEY, shared=True).issue("echo", ARGUMENTS, "policy-1", 60)
    # The same arguments in another key order are the same call (the digest is of canonical JSON).
    verified = GrantSigner(KEY, shared=True).verify(token, "echo", {"n": 1, "text": "hello"}, "policy-1")
    assert verified == grant
    assert GrantSigner.is_grant(token) and not GrantSigner.is_grant("an upstream's own state")


def test_a_grant_is_refused_for_another_call_policy_key_or_after_its_expiry() -> None:
    """Issue 21: bound to the argument digest, the policy version and the expiry; tampering shows."""
    clock = Clock()
    signer = GrantSigner(KEY, shared=True, clock=clock)
    _, token = signer.issue("echo", ARGUMENTS, "policy-1", 60)
    cases = {
        CanonicalError.APPROVAL_MISMATCH: [
            lambda: signer.verify(token, "echo", {"text": "other"}, "policy-1"),
            lambda: signer.verify(token, "delete", ARGUMENTS, "policy-1"),
            lambda: signer.verify(token, "echo", ARGUMENTS, "policy-2"),
        ],
        CanonicalError.APPROVAL_NOT_FOUND: [
            lambda: GrantSigner(b"x" * MIN_KEY_BYTES, shared=True).verify(token, "echo", ARGUMENTS, "policy-1"),
            lambda: signer.verify(token[:-2] + ("AA" if token[-2:] != "AA" else "BB"), "echo", ARGUMENTS, "policy-1"),
            lambda: signer.verify("mcp-approval.1.e30.AAAA", "echo", ARGUMENTS, "policy-1"),
            lambda: signer.verify("mcp-approval.1.", "echo", ARGUMENTS, "policy-1"),
        ],
    }
    for error, calls in cases.items():
        for call in calls:
            refused = refusal(call)
            assert refused.error is error
            assert refused.extra["policy_violation"] is True
    clock.now += 61
    assert refusal(lambda: signer.verify(token, "echo", ARGUMENTS, "policy-1")).error is CanonicalError.APPROVAL_EXPIRED


def test_a_grant_is_carried_out_once_by_a_replica() -> None:
    """Issue 21: a replica that carried a grant out refuses it a second time (until it expires)."""
    signer = GrantSigner(KEY, shared=True)
    _, token = signer.issue("echo", ARGUMENTS, "policy-1", 60)
    signer.verify(token, "echo", ARGUMENTS, "policy-1")
    again = refusal(lambda: signer.verify(token, "echo", ARGUMENTS, "policy-1"))
    assert again.error is CanonicalError.APPROVAL_NOT_FOUND
    assert again.errors == ({"path": "/params/requestState", "msg": "approval_used"},)


def test_the_key_comes_from_the_environment_or_a_file_and_a_weak_one_is_refused(tmp_path: Path) -> None:
    """Issue 21: replicas share a key from MCP_APPROVAL_KEY or MCP_APPROVAL_KEY_FILE; a key under
    32 bytes, an unreadable file, or both variables at once cannot work (a setup error, exit 2)."""
    key_file = tmp_path / "approval.key"
    key_file.write_bytes(KEY + b"\n")
    key_file.chmod(0o600)  # issue 30: a key others may read is refused
    _, token = signer_from({"MCP_APPROVAL_KEY": KEY.decode()}).issue("echo", ARGUMENTS, "p", 60)
    from_file = signer_from({"MCP_APPROVAL_KEY_FILE": str(key_file)})
    assert from_file.shared and from_file.verify(token, "echo", ARGUMENTS, "p").tool == "echo"
    own = signer_from({})
    assert not own.shared
    assert refusal(lambda: own.verify(token, "echo", ARGUMENTS, "p")).error is CanonicalError.APPROVAL_NOT_FOUND
    (tmp_path / "short.key").write_bytes(b"short")
    (tmp_path / "short.key").chmod(0o600)
    for environ in (
        {"MCP_APPROVAL_KEY": "too-short"},
        {"MCP_APPROVAL_KEY_FILE": str(tmp_path / "short.key")},
        {"MCP_APPROVAL_KEY_FILE": str(tmp_path / "missing.key")},
        {"MCP_APPROVAL_KEY": KEY.decode(), "MCP_APPROVAL_KEY_FILE": str(key_file)},
    ):
        with pytest.raises(SetupError):
            signer_from(environ)
