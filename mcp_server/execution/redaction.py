"""The redaction engine: JSON pointers, key names and secret patterns replaced by ``[REDACTED]``.

Pure; compiled once from the policy, then only read. Every pattern runs on RE2, whose matching is
linear in the text whatever the pattern (ADR 26), and one search of all of them at once tells
whether a text needs any. It never touches what is forwarded: callers redact the copy they write.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core import jsonio
from ..core.pointer import pointer

__all__ = [
    "ARGUMENTS",
    "FRAME",
    "MASK",
    "SECRET_NAMES",
    "SECRET_PATTERNS",
    "PatternError",
    "Redactor",
    "compile_pattern",
    "name_words",
]

MASK = "[REDACTED]"

SECRET_NAMES: tuple[str, ...] = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "api_key",
    "access_key",
    "private_key",
    "authorization",
    "auth",
    "cookie",
    "credential",
    "credentials",
    "bearer",
    "jwt",
    "ssn",
)
"""Names whose values are secret: a key is secret when its words hold one of these (see ``name_words``)."""

_VALUE = r"""(?:(\\*")(?:[^"\\]|\\[^"])*(\\*")|(')[^']*(')|[^\s"',;&}\\]+)"""
"""A value after ``key=`` or ``key:`` in text: quoted (also inside escaped JSON, ``\\"...\\"``: its
quotes are groups 2 and 3, or 4 and 5, kept around the mask) or a word."""
_KEY_VALUE_MASK = r"\g<1>\g<2>\g<4>" + MASK + r"\g<3>\g<5>"

# (pattern, replacement, core): the key-value forms keep the key so a reader sees what was hidden. The
# core is text every match holds and JSON escaping cannot change (no quote, backslash or control
# character): finding no core in a document's JSON text proves no string of it matches (``_clean``).
SECRET_PATTERNS: tuple[tuple[str, str, str], ...] = (
    (r"(?i)\bbearer\s+[A-Za-z0-9\-._~+/]+=*", "Bearer " + MASK, "(?i:bearer)"),
    (r"(?i)\bbasic\s+[A-Za-z0-9+/]{8,}=*", "Basic " + MASK, "(?i:basic)"),
    (r"\b(?:sk|pk|rk)[-_](?:live[-_]|test[-_])?[A-Za-z0-9_-]{16,}\b", MASK, "[spr]k[-_]"),
    (r"\bAKIA[0-9A-Z]{16}\b", MASK, "AKIA"),
    (r"\bgh[pousr]_[A-Za-z0-9]{20,}\b", MASK, "gh[pousr]_"),
    (r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*", MASK, "eyJ"),  # a JWT
    (r"(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", MASK, "-----BEGIN"),
    (r"(?i)(://[^/\s:@]+:)[^/\s@]+@", r"\g<1>" + MASK + "@", "://"),
    (r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}", MASK, "@"),
)
"""Bearer and basic credentials, API keys of known shapes, JWTs, private keys, passwords in URLs and
e-mail addresses; and (built beside them from the names) ``name=value`` / ``"name": "value"``."""

# Between two words of a name in JSON text: anything but a letter or digit, or an escaped control character.
_SEPARATOR = r"(?:[^A-Za-z0-9]|\\[bfnrt]|\\u[0-9A-Fa-f]{4})*"

ARGUMENTS: tuple[tuple[str, ...], ...] = ((),)
"""Where pointers apply in a tool's arguments or its structured result: at the root."""
FRAME: tuple[tuple[str, ...], ...] = (("params", "arguments"), ("result", "structuredContent"))
"""Where pointers apply in a whole JSON-RPC frame: a call's arguments, a result's structured content."""
_DETAIL_ANCHORS = ("/params/arguments", "/result/structuredContent", "/args", "")
"""Where a violation's ``path`` may start before the pointer part (tool input paths start at the arguments)."""
_CACHE_LIMIT = 4096  # key names remembered; cleared whole when full
_BATCH_FROM = 64  # strings in a document from which one search of them all comes cheaper than one each

# Words of a name: camelCase humps, ALLCAPS runs, lower-case runs and digits; anything else separates.
# Each alternative consumes its run or fails within it, so the search is linear in the name.
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


class PatternError(ValueError):
    """A redaction pattern RE2 cannot compile (back-references and look-around have no linear form)."""


def _re2() -> Any:
    """RE2, imported on the first pattern compiled (2.5 MiB resident: a run that never redacts, as
    ``serve`` over STDIO without a policy, never loads it)."""
    import re2

    return re2


def compile_pattern(pattern: str) -> Any:
    """``pattern`` compiled by RE2, or ``PatternError`` saying why not."""
    re2 = _re2()
    options = re2.Options()
    options.log_errors = False  # a bad configured pattern is reported once, as a setup error
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternError(reason) from None


def name_words(name: str) -> tuple[str, ...]:
    """The lower-cased words of a key or option name: ``db_password`` → (db, password), ``accessToken``
    → (access, token), ``X-Api-Key`` → (x, api, key), ``APIKey`` → (api, key)."""
    return tuple(word.lower() for word in _WORD.findall(name))


def _name_pattern(words: Sequence[str], between: str = "[^A-Za-z0-9]*") -> str:
    """Text that spells ``words`` with separators between them (``api[^A-Za-z0-9]*key``)."""
    return between.join(_re2().escape(word) for word in words)


def _key_value_pattern(names: Iterable[Sequence[str]]) -> str:
    """``name=value``, ``name: value`` and ``"name": "value"`` in text, for every secret name; the key
    (with its quote) is kept, the value masked."""
    alternatives = "|".join(_name_pattern(words, "[_.-]?") for words in names)
    return rf"""(?i)([A-Za-z0-9_.-]*(?:{alternatives})[A-Za-z0-9_.-]*\\*["']?\s*[:=]\s*){_VALUE}"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Redactor:
    """What to hide. ``redact`` returns a redacted copy and whether anything was replaced. Its
    patterns are compiled on first use (a policy's own, at ``build``: a bad one is refused there)."""

    pointers: tuple[tuple[str, ...], ...] = ()
    configured: tuple[str, ...] = ()  # key names given on top of ``SECRET_NAMES``
    own_patterns: tuple[str, ...] = ()  # patterns given on top of the built-in ones
    literals: tuple[str, ...] = ()  # values hidden wherever they appear (``with_literals``)
    _names: tuple[tuple[str, ...], ...] = ()  # the words of every secret name
    _single: frozenset[str] = frozenset()  # a secret name as one word (``apikey``, ``password``)
    _multi: frozenset[tuple[str, ...]] = frozenset()  # a secret name of several words
    _detail_pointers: tuple[tuple[str, ...], ...] = ()  # each pointer under each place a violation's path starts
    _keys: dict[str, bool] = field(default_factory=dict, compare=False)
    # Compiled on first use (``_compile``): every pattern with its replacement; every pattern at once
    # (a text it does not match needs none of them); in a document's JSON text, what every match and
    # every secret name holds (``None`` with a pattern of the policy's: it has no known core).
    patterns: tuple[tuple[Any, str], ...] = field(default=(), init=False, compare=False)
    any_pattern: Any = field(default=None, init=False, compare=False)
    any_core: Any = field(default=None, init=False, compare=False)

    @classmethod
    def build(
        cls,
        *,
        pointers: Iterable[str] = (),
        keys: Iterable[str] = (),
        patterns: Iterable[str] = (),
        literals: Iterable[str] = (),
    ) -> Redactor:
        """The policy's pointers, key names and patterns on top of the defaults (and literal values
        to hide). ``PatternError`` for a pattern RE2 cannot compile; ``ValueError`` for a bad pointer."""
        configured, own, pointers, literals = tuple(keys), tuple(patterns), tuple(pointers), tuple(literals)
        names = tuple(dict.fromkeys(w for w in (name_words(n) for n in (*SECRET_NAMES, *configured)) if w))
        redactor = cls(
            pointers=tuple(_tokens(p) for p in pointers),
            configured=configured,
            own_patterns=own,
            literals=literals,
            _names=names,
            _single=frozenset("".join(words) for words in names),
            _multi=frozenset(words for words in names if len(words) > 1),
            _detail_pointers=tuple((*_tokens(a), *_tokens(p)) for a in _DETAIL_ANCHORS for p in pointers),
        )
        if own:
            redactor._compile()  # a pattern of the policy's that RE2 cannot compile is refused now
        return redactor

    def _compile(self) -> Any:
        """Compile the patterns (once; RE2 imported then); ``any_pattern``."""
        if self.any_pattern is None:
            escape = _re2().escape
            sources = [(p, r) for p, r, _ in SECRET_PATTERNS]
            sources += [(_key_value_pattern(self._names), _KEY_VALUE_MASK), *((p, MASK) for p in self.own_patterns)]
            sources += [(escape(value), MASK) for value in self.literals]
            cores = [core for _, _, core in SECRET_PATTERNS]
            cores += ["(?i:" + _name_pattern(w, _SEPARATOR) + ")" for w in self._names]
            cores += [escape(jsonio.dumps(value).decode()[1:-1]) for value in self.literals]  # as JSON writes it
            patterns = tuple((compile_pattern(source), replacement) for source, replacement in sources)
            any_core = None if self.own_patterns else compile_pattern("|".join(cores))
            object.__setattr__(self, "patterns", patterns)  # frozen: set once, as a cache
            object.__setattr__(self, "any_core", any_core)
            object.__setattr__(self, "any_pattern", compile_pattern("|".join(f"(?:{s})" for s, _ in sources)))
        return self.any_pattern

    def with_literals(self, values: Iterable[str]) -> Redactor:
        """This redactor, also hiding each of ``values`` wherever it appears (a secret the command line
        gave an upstream, should the upstream print it). Values under 6 characters are too common."""
        added = [value for value in dict.fromkeys(values) if len(value) >= 6 and value not in self.literals]
        if not added:
            return self
        return Redactor.build(**{**self.spec(), "literals": [*self.literals, *added]})

    def spec(self) -> dict[str, list[str]]:
        """What ``build`` needs to make this redactor again (in another process): ``build(**spec())``."""
        return {
            "pointers": [pointer(tokens) for tokens in self.pointers],
            "keys": list(self.configured),
            "patterns": list(self.own_patterns),
            "literals": list(self.literals),
        }

    # -- names --------------------------------------------------------------------------------

    def secret_name(self, name: str) -> bool:
        """Whether a key (or option) named ``name`` holds a secret: its words contain a secret name's
        words in a row, or one word is a secret name written together (``apikey``). ``tokens`` is not
        ``token``: words are compared whole."""
        known = self._keys.get(name)
        if known is None:
            words = name_words(name)
            known = any(word in self._single for word in words) or any(
                words[i : i + len(multi)] == multi for multi in self._multi for i in range(len(words))
            )
            if len(self._keys) >= _CACHE_LIMIT:
                self._keys.clear()
            self._keys[name] = known
        return known

    def redact_command(self, command: Sequence[str]) -> tuple[str, tuple[str, ...]]:
        """A command line as it may be shown, and the secret values hidden from it: the value of an
        option named as a secret (``--token X``, ``--api-key=X``, ``PASSWORD=X``), then the patterns."""
        shown: list[str] = []
        hidden: list[str] = []
        masked_next = False
        for argument in command:
            if masked_next:
                shown.append(MASK)
                hidden.append(argument)
                masked_next = False
                continue
            name, equals, value = argument.partition("=")
            if equals and value and self.secret_name(name):
                shown.append(f"{name}={MASK}")
                hidden.append(value)
                continue
            masked_next = argument.startswith("-") and not equals and self.secret_name(argument)
            shown.append(argument)
        return self.redact_text(" ".join(shown))[0], tuple(hidden)

    # -- text and documents -------------------------------------------------------------------

    def redact_text(self, text: str) -> tuple[str, bool]:
        """``text`` with every secret pattern replaced (one search first: most texts need none)."""
        if not text or (self.any_pattern or self._compile()).search(text) is None:
            return text, False
        applied = False
        for pattern, replacement in self.patterns:
            text, count = pattern.subn(replacement, text)
            applied = applied or count > 0
        return text, applied

    def redact(self, value: Any, *, at: tuple[tuple[str, ...], ...] = ARGUMENTS) -> tuple[Any, bool]:
        """A redacted copy of a JSON value: key names, string patterns and violations' messages, then
        the pointers under each place of ``at`` (``ARGUMENTS``: the value is a tool's arguments or
        structured result; ``FRAME``: a whole JSON-RPC frame; ``()``: none, a record of our own).
        Without pointers, a value in which no pattern and no secret name appears anywhere is returned
        as it is (not copied)."""
        if not self.pointers and self._clean(value):
            return value, False
        copy, applied = self._walk(value, self._suspects(value))
        for tokens in [(*place, *tokens) for place in at for tokens in self.pointers]:
            copy, hit = _mask_at(copy, tokens)
            applied = applied or hit
        return copy, applied

    def redact_record(self, value: Any) -> tuple[Any, bool]:
        """A record of our own (an event, an error, a report entry): no pointer applies at its root."""
        return self.redact(value, at=())

    def redact_frame(self, value: Any) -> tuple[Any, bool]:
        """A whole JSON-RPC frame: the pointers apply to its call's arguments and its structured result."""
        return self.redact(value, at=FRAME)

    def _clean(self, value: Any) -> bool:
        """Whether nothing in ``value`` can need hiding: its JSON text (one C call) holds no pattern's
        core and no secret name, so no string, key or violation path of it does. ``False`` when that
        cannot be told: a pattern of the policy's (no core is known), or a value JSON cannot hold."""
        if self.any_pattern is None:
            self._compile()
        if self.any_core is None:
            return False
        try:
            text = jsonio.dumps(value).decode()
        except TypeError:
            return False
        return self.any_core.search(text) is None

    def _suspects(self, value: Any) -> frozenset[str] | None:
        """The strings of ``value`` a pattern may match, found by one search of them all, joined by
        newlines (``None``: search each one; few strings, or a pattern of the policy's, which may be
        anchored). A match across two strings flags both; one inside a string is always found (a
        match that runs on into it flags it too): none is missed, a few are searched for nothing."""
        if self.any_pattern is None:
            self._compile()
        if self.any_core is None:
            return None
        strings: list[str] = []
        _strings(value, strings.append)
        if len(strings) < _BATCH_FROM:
            return None
        starts, offset = [], 0
        for text in strings:
            starts.append(offset)
            offset += len(text) + 1
        suspects: set[str] = set()
        for match in self.any_pattern.finditer("\n".join(strings)):
            first = bisect_right(starts, match.start()) - 1
            last = bisect_right(starts, max(match.start(), match.end() - 1)) - 1
            suspects.update(strings[first : last + 1])
        return frozenset(suspects)

    def _walk(self, value: Any, suspects: frozenset[str] | None) -> tuple[Any, bool]:
        if isinstance(value, str):
            return (value, False) if suspects is not None and value not in suspects else self.redact_text(value)
        if isinstance(value, Mapping):
            return self._walk_object(value, suspects)
        if isinstance(value, (list, tuple)):
            applied = False
            items = []
            for item in value:
                redacted, hit = self._walk(item, suspects)
                items.append(redacted)
                applied = applied or hit
            return items, applied
        return value, False

    def _walk_object(self, value: Mapping[Any, Any], suspects: frozenset[str] | None) -> tuple[dict[Any, Any], bool]:
        applied = False
        out: dict[Any, Any] = {}
        hidden_detail = _is_detail(value) and self._hidden_path(value["path"])
        for key, item in value.items():
            if (isinstance(key, str) and self.secret_name(key)) or (hidden_detail and key == "msg"):
                out[key] = MASK  # a violation's message quotes the value it is about: never one hidden
                applied = True
                continue
            out[key], hit = self._walk(item, suspects)
            applied = applied or hit
        return out, applied

    def _hidden_path(self, path: str) -> bool:
        """Whether a violation at ``path`` is about a hidden value, or one holding it: a segment of the
        path is a secret name, or the path is on a pointer's way (above, at or below it)."""
        try:
            tokens = _tokens(path)
        except ValueError:
            return False
        if any(self.secret_name(token) for token in tokens):
            return True
        return any(tokens[: len(hidden)] == hidden[: len(tokens)] for hidden in self._detail_pointers)


def _strings(value: Any, add: Callable[[str], None]) -> None:
    """Every string of a JSON value (not its keys), depth first."""
    if isinstance(value, str):
        add(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            _strings(item, add)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _strings(item, add)


def _is_detail(value: Mapping[Any, Any]) -> bool:
    """A violation's detail: ``{"path": <pointer>, "msg": <text>, ...}``."""
    path = value.get("path")
    return isinstance(path, str) and isinstance(value.get("msg"), str) and (path == "" or path.startswith("/"))


def _tokens(pointer: str) -> tuple[str, ...]:
    if pointer == "":
        return ()
    if not pointer.startswith("/"):
        raise ValueError(f"not a JSON pointer: {pointer!r}")
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/"))


def _mask_at(value: Any, tokens: tuple[str, ...]) -> tuple[Any, bool]:
    """``value`` (already a fresh copy) with the member at ``tokens`` masked, if it exists."""
    if not tokens:
        return MASK, True
    head, rest = tokens[0], tokens[1:]
    if isinstance(value, dict) and head in value:
        value[head], hit = _mask_at(value[head], rest)
        return value, hit
    if isinstance(value, list) and head.isdigit() and int(head) < len(value):
        index = int(head)
        value[index], hit = _mask_at(value[index], rest)
        return value, hit
    return value, False
