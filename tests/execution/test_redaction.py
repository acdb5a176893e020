"""The redaction engine: pointers, key names and secret patterns (issue 6)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mcp_server.core import jsonio
from mcp_server.execution.redaction import MASK, Redactor


def test_key_names_pointers_and_patterns_are_masked_in_a_copy() -> None:
    """Issue 6: JSON pointers, key names and secret patterns replaced by [REDACTED]; the input is untouched."""
    redactor = Redactor.build(pointers=["/arguments/account/1"], keys=["ssn"], patterns=[r"tok_[a-z0-9]{8,}"])
    original = {
        "arguments": {"account": ["a", "b"], "SSN": "123-45-6789", "Password": "hunter2"},
        "note": "mail alice@example.com with tok_abcdefgh12",
    }
    redacted, applied = redactor.redact(original)
    assert applied is True
    assert redacted == {
        "arguments": {"account": ["a", MASK], "SSN": MASK, "Password": MASK},
        "note": f"mail {MASK} with {MASK}",
    }
    assert original["arguments"]["account"] == ["a", "b"]


def test_every_kind_of_secret_in_free_text_is_masked() -> None:
    """Issue 6: bearer tokens, API keys, passwords and e-mail addresses."""
    redactor = Redactor.build()
    for secret, text in [
        ("eyJhbGciOi.abc.def", "Authorization: Bearer eyJhbGciOi.abc.def"),
        ("sk_live_0123456789abcdef", "key sk_live_0123456789abcdef used"),
        ("AKIAABCDEFGHIJKLMNOP", "aws AKIAABCDEFGHIJKLMNOP"),
        ("s3cr3t!", "password=s3cr3t! next"),
        ("qwerty123", 'api_key: "qwerty123"'),
        ("pa55", "https://bob:pa55@db.example.test/x"),
        ("bob@example.org", "from bob@example.org"),
    ]:
        masked, applied = redactor.redact_text(text)
        assert applied and secret not in masked and MASK in masked, text


def test_nothing_to_hide_says_so() -> None:
    """Issue 6: every log event says whether redaction was applied."""
    assert Redactor.build().redact({"a": [1, "plain text"], "b": None}) == ({"a": [1, "plain text"], "b": None}, False)
    assert Redactor.build(pointers=["/missing/0"]).redact({"a": 1}) == ({"a": 1}, False)


JSON_LEAVES = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20)
SECRETS = st.sampled_from(
    [
        "Bearer abc.DEF-123_x",
        "sk_test_abcdefghijklmnop",
        "dora@example.net",
        "password=hunter22",
        "AKIA0123456789ABCDEF",
    ]
)


@given(
    document=st.recursive(
        JSON_LEAVES, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    secret=SECRETS,
    prefix=st.text(alphabet=" ,;:()[]{}'\n", max_size=3),
)
def test_a_secret_anywhere_in_a_document_never_survives_redaction(document: Any, secret: str, prefix: str) -> None:
    """Issue 6: secret patterns are replaced wherever they appear, at any depth, in any company."""
    carrier = {"items": [document, {"note": prefix + secret + prefix}]}
    redacted, applied = Redactor.build().redact(carrier)
    assert applied is True
    assert secret.split("=")[-1].split(" ")[-1] not in jsonio.dumps(redacted).decode()
