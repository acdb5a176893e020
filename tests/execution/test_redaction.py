"""The redaction engine: pointers, key names and secret patterns (issue 6)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_server.core import jsonio
from mcp_server.execution.redaction import MASK, PatternError, Redactor


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


# -- issue 30: linear time, names, escaped JSON, violations' messages, pointers ------------------


@pytest.mark.parametrize(
    "key",
    ["db_password", "accessToken", "private_key", "PrivateKey", "jwt", "X-Api-Key", "APIKey", "apikey", "set-cookie",
     "client_secret", "Authorization", "aws_secret_access_key", "refresh-token", "ssn", "customer_SSN", "PASSWORD2"],
)  # fmt: skip
def test_a_key_is_secret_by_its_words_whatever_its_case_and_separators(key: str) -> None:
    """Issue 30 row 11: key matching is normalised (case, `_`/`-`, camelCase); `db_password`,
    `accessToken`, `private_key` and `jwt` were logged in clear (keys matched exactly)."""
    redacted, applied = Redactor.build().redact({key: "s3cr3t-value", "kept": "x"})
    assert applied and redacted == {key: MASK, "kept": "x"}


@pytest.mark.parametrize("key", ["maxTokens", "max_tokens", "author", "lessons", "passage", "secretary_name"])
def test_words_are_compared_whole(key: str) -> None:
    """Issue 30 row 11: `tokens` is not `token`, `author` not `auth`: a name is matched by whole words."""
    assert Redactor.build().redact({key: "visible"}) == ({key: "visible"}, False)


def test_a_configured_key_is_normalised_as_the_built_in_ones() -> None:
    """Issue 30 row 11: `keys = ["card_number"]` hides `cardNumber`, `CARD-NUMBER` and `primary_card_number`."""
    redactor = Redactor.build(keys=["card_number"])
    document = {"cardNumber": "1", "CARD-NUMBER": "2", "primary_card_number": "3", "card": "4"}
    assert redactor.redact(document)[0] == {
        "cardNumber": MASK,
        "CARD-NUMBER": MASK,
        "primary_card_number": MASK,
        "card": "4",
    }


@pytest.mark.parametrize(
    "text",
    [
        "password=hunter2 next",
        '{"db_password": "hunter2"} is not valid',
        '"{\\"password\\": \\"hunter2\\"}" is not of type "object"',  # JSON inside a JSON string
        '{\\\\\\"accessToken\\\\\\":\\\\\\"hunter2\\\\\\"}',  # and once more
        "api-key: 'hunter2'",
        '{"password": "hunter2 with spaces"}',
    ],
)
def test_json_escaping_does_not_defeat_the_key_value_pattern(text: str) -> None:
    """Issue 30 row 2: JSON escaping defeated the redaction patterns; quoted values go whole."""
    masked, applied = Redactor.build().redact_text(text)
    assert applied and "hunter2" not in masked and MASK in masked, masked


@pytest.mark.parametrize(
    "path", ["/password", "/params/arguments/db_password", "/result/structuredContent/creds/apiKey", "/args/token/0"]
)
def test_a_violation_at_a_secret_key_never_quotes_its_value(path: str) -> None:
    """Issue 30 row 2: `"hunter2" is shorter than 12 characters` reached every output: a violation
    whose path passes a secret name has its message masked, its path and keyword kept."""
    detail = {"path": path, "msg": '"hunter2" is shorter than 12 characters', "keyword": "minLength"}
    redacted, applied = Redactor.build().redact_record({"errors": [detail]})
    assert applied and redacted == {"errors": [{**detail, "msg": MASK}]}


@pytest.mark.parametrize(
    ("path", "hidden"),
    [
        ("/card/number", True),  # a tool input violation: relative to the arguments
        ("/params/arguments/card/number", True),
        ("/result/structuredContent/card", True),  # quotes the object holding it
        ("/params/arguments", True),
        ("/card/holder", False),
        ("/params/name", False),
    ],
)
def test_a_violation_on_a_pointers_way_never_quotes_its_value(path: str, hidden: bool) -> None:
    """Issue 30 row 11: a pointer names a place in a tool's arguments or structured result; a violation
    at it, below it, or above it (its message quotes the value holding it) is masked."""
    detail = {"path": path, "msg": '"4111111111111111" is too long'}
    redacted = Redactor.build(pointers=["/card/number"]).redact_record([detail])[0]
    assert (redacted[0]["msg"] == MASK) is hidden


def test_pointers_apply_to_a_frames_arguments_and_structured_result() -> None:
    """Issue 30 row 11: the README's `/card/number` matches a gateway frame: in a whole frame the
    pointer applies under `params.arguments` and `result.structuredContent`."""
    redactor = Redactor.build(pointers=["/card/number"])
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "pay", "arguments": {"card": {"number": "4111"}}},
    }
    result = {"jsonrpc": "2.0", "id": 1, "result": {"content": [], "structuredContent": {"card": {"number": "4111"}}}}
    assert redactor.redact_frame(call)[0]["params"]["arguments"] == {"card": {"number": MASK}}
    assert redactor.redact_frame(result)[0]["result"]["structuredContent"] == {"card": {"number": MASK}}
    assert redactor.redact({"card": {"number": "4111"}})[0] == {"card": {"number": MASK}}  # arguments themselves
    assert redactor.redact_record({"card": {"number": "4111"}})[0] == {"card": {"number": "4111"}}  # no record of ours


def test_a_catastrophic_pattern_is_harmless_and_a_non_linear_one_is_refused() -> None:
    """Issue 30 rows 1 and 14: every pattern runs on RE2; `(a+)+$`, exponential for a backtracking
    engine on `aaa…b`, is answered at once; a back-reference (no linear form) is refused."""
    redactor = Redactor.build(patterns=[r"(a+)+$"])
    assert redactor.redact_text("a" * 100_000 + "b") == ("a" * 100_000 + "b", False)
    assert redactor.redact_text("xaaa") == ("x" + MASK, True)
    with pytest.raises(PatternError):
        Redactor.build(patterns=[r"(a)\1"])
    with pytest.raises(PatternError):
        Redactor.build(patterns=[r"a(?=b)"])


@pytest.mark.parametrize(
    ("command", "shown", "hidden"),
    [
        (["srv", "--token", "tk-123456"], f"srv --token {MASK}", ("tk-123456",)),
        (["srv", "--api-key=k-123456"], f"srv --api-key={MASK}", ("k-123456",)),
        (["env", "DB_PASSWORD=pw-123456", "srv"], f"env DB_PASSWORD={MASK} srv", ("pw-123456",)),
        (["srv", "--port", "80"], "srv --port 80", ()),
    ],
)
def test_secrets_on_a_command_line_are_hidden_and_named(
    command: list[str], shown: str, hidden: tuple[str, ...]
) -> None:
    """Issue 30 row 11: `--token X` in the upstream command was printed in the ready line, report and page."""
    assert Redactor.build().redact_command(command) == (shown, hidden)


def test_a_literal_is_hidden_everywhere_and_survives_the_spec() -> None:
    """Issue 30 row 11: the command line's secrets are hidden wherever they appear (the upstream may
    print them), in this process and in the log's writer (``build(**spec())``)."""
    redactor = Redactor.build().with_literals(["tk-1234567", "ab"])
    again = Redactor.build(**redactor.spec())
    for each in (redactor, again):
        assert each.redact({"note": 'the key "tk-1234567"'})[0] == {"note": f'the key "{MASK}"'}
        assert each.redact_text("ab") == ("ab", False)  # too short to hide everywhere


def test_a_document_with_nothing_to_hide_is_not_copied() -> None:
    """Issue 30 row 1: one search of the document's JSON text settles a clean one: no walk, no copy."""
    document = {"items": [{"n": i, "text": "plain"} for i in range(1000)]}
    redacted, applied = Redactor.build().redact(document)
    assert redacted is document and applied is False
    escaped = {"note": "\nsk_test_abcdefghijklmnop"}  # a secret behind an escape: still found
    assert Redactor.build().redact(escaped)[1] is True


@given(
    pieces=st.lists(
        st.sampled_from(
            [
                "plain",
                "a@",
                "mail bob@example.org",
                "Bearer abc.def",
                "password=hunter22",
                "x\n",
                "-----BEGIN",
                "eyJ",
                "sk_test_abcdefghijklmnop",
                "@example.org",
                "bob",
                "",
            ]
        ),
        min_size=64,
        max_size=120,
    )
)
def test_one_search_of_all_the_strings_finds_what_one_search_each_finds(pieces: list[str]) -> None:
    """Issue 30 row 1: a document of many strings is searched once, joined; a match across two of them
    only costs a search, and no string that needs hiding is missed."""
    redactor = Redactor.build()
    document = {"items": [pieces[i] + pieces[-1 - i] for i in range(len(pieces))]}
    assert redactor.redact(document) == redactor._walk(document, None)
