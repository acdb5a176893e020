"""The policy engine: one for serve, the gateway, /execute and every outbound call.

Pure and synchronous: decisions are functions of the compiled policy and the call (the chain's
policy stage, ``chain/policy_check.py``, applies it to frames). No I/O; it never executes a tool.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.settings import SetupError
from ..registry.config import read_config
from ..registry.schemas import SchemaRegistry
from .redaction import PatternError, Redactor, compile_pattern

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "Globs",
    "Policy",
    "ToolRule",
    "denial",
    "load_policy",
    "outbound_reason",
]

DEFAULT_TIMEOUT_SECONDS = 30.0
_CACHE_LIMIT = 4096  # distinct names remembered per decision table; cleared whole when full


class Globs:
    """A list of fnmatch globs (``*``, ``?``, ``[seq]``, ``[!seq]``) compiled into one RE2 pattern, so
    a name of any length is matched in linear time (``None``: the list is absent). Names are matched
    exactly, case included: ``refund*`` does not match ``Refund`` (a tool of another name); only
    ``fold_case`` (host names) folds case."""

    __slots__ = ("pattern", "present")

    def __init__(self, globs: Iterable[str] | None, *, fold_case: bool = False) -> None:
        self.present = globs is not None
        parts = [_glob_pattern(g.lower() if fold_case else g) for g in globs or ()]
        self.pattern = compile_pattern("(?s)^(?:" + "|".join(parts) + ")$") if parts else None

    def matches(self, name: str) -> bool:
        return self.pattern is not None and self.pattern.search(name) is not None


def _glob_pattern(glob: str) -> str:
    """One fnmatch glob as RE2 syntax (as ``fnmatch.translate``: an unclosed ``[`` is a literal)."""
    import re2  # as the pattern is compiled: a run with no glob loads no RE2

    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        char = glob[i]
        i += 1
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[" and (end := _class_end(glob, i)) is not None:
            out.append(_class_pattern(glob[i:end]))
            i = end + 1
        else:
            out.append(re2.escape(char))
    return "".join(out)


_NEVER = "[^\\x00-\\x{10FFFF}]"  # a class no character is in


def _class_pattern(body: str) -> str:
    """A ``[...]`` body as RE2, as ``fnmatch`` reads it: ``-`` between two characters a range, a
    reversed range left out (RE2 refuses one), nothing left a class that never matches."""
    chunks = _ranges(body) if "-" in body else [body]
    kept = "-".join(chunks)
    if not kept or kept == "!":  # every range reversed: no character, or (negated) any
        return "(?s:.)" if kept else _NEVER
    negate = kept.startswith("!")
    if negate:
        chunks[0] = chunks[0][1:]
    escaped = "-".join("".join(c if c.isalnum() else "\\" + c for c in chunk) for chunk in chunks)
    return ("[^" if negate else "[") + escaped + "]"


def _ranges(body: str) -> list[str]:
    """``body`` cut at each ``-`` that makes a range (not a first one, nor one just after a range),
    reversed ranges merged away: what ``fnmatch`` joins back with ``-``."""
    chunks: list[str] = []
    start, at = 0, 2 if body.startswith("!") else 1
    while (at := body.find("-", at)) >= 0:
        chunks.append(body[start:at])
        start, at = at + 1, at + 3
    if body[start:]:
        chunks.append(body[start:])
    else:
        chunks[-1] += "-"
    for k in range(len(chunks) - 1, 0, -1):
        if chunks[k - 1][-1] > chunks[k][0]:
            chunks[k - 1] = chunks[k - 1][:-1] + chunks[k][1:]
            del chunks[k]
    return chunks


def _class_end(glob: str, start: int) -> int | None:
    """Where the ``[...]`` opened before ``start`` closes (a ``]`` first, or after ``!``, is literal)."""
    i = start + (1 if glob[start : start + 1] == "!" else 0)
    i += 1 if glob[i : i + 1] == "]" else 0
    end = glob.find("]", i)
    return None if end < 0 else end


def outbound_reason(url: str, method: str, methods: frozenset[str] | None, domains: Globs) -> str | None:
    """Why a hop to ``url`` with ``method`` breaks a list of HTTP methods (``None``: any) or of
    domain globs (absent: any); ``None`` when it keeps to both."""
    if methods is not None and method.upper() not in methods:
        return "http_method_not_allowed"
    if domains.present and not domains.matches((urlsplit(url).hostname or "").lower()):
        return "domain_not_allowed"
    return None


def _denial(cache: dict[str, str | None], name: str, deny: Globs, allow: Globs, kind: str) -> str | None:
    """Why ``name`` (a method or a tool) is refused: denied by a glob, or missing from an allow
    list; ``None`` when it may pass. The decision goes in ``cache`` (the lists never change)."""
    if deny.matches(name):
        reason: str | None = f"{kind}_denied"
    elif allow.present and not allow.matches(name):
        reason = f"{kind}_not_allowed"
    else:
        reason = None
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[name] = reason
    return reason


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRule:
    """The per-tool settings that apply to one tool (the first ``[[tool]]`` whose glob matches)."""

    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    approval: bool = False
    max_argument_bytes: int | None = None
    max_result_bytes: int | None = None


def denial(error: CanonicalError, path: str, msg: str, **extra: Any) -> Rejection:
    """A policy refusal: a catalogue member with ``policy_violation: true`` in ``error.data``."""
    return Rejection(error, [{"path": path, "msg": msg}], extra={"policy_violation": True, **extra})


@dataclass(frozen=True, slots=True, kw_only=True)
class Policy:
    """A compiled policy. The empty policy allows everything and redacts the default secrets."""

    method_allow: Globs = field(default_factory=lambda: Globs(None))
    method_deny: Globs = field(default_factory=lambda: Globs(None))
    tool_allow: Globs = field(default_factory=lambda: Globs(None))
    tool_deny: Globs = field(default_factory=lambda: Globs(None))
    domains: Globs = field(default_factory=lambda: Globs(None))
    http_methods: frozenset[str] | None = None
    max_bytes: Mapping[str, int] = field(default_factory=dict)
    tool_rules: tuple[tuple[Globs, ToolRule], ...] = ()
    default_rule: ToolRule = ToolRule()
    approval_deadline_seconds: float = 300.0
    approval_by_elicitation: bool = True
    redactor: Redactor = field(default_factory=Redactor.build)
    sanitise_results: bool = False
    rule_count: int = 0
    version: str = ""  # the policy document's fingerprint: an approval is granted under one version
    _methods: dict[str, str | None] = field(default_factory=dict)
    _tools: dict[str, str | None] = field(default_factory=dict)
    _rules: dict[str, ToolRule] = field(default_factory=dict)

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> Policy:
        """Compile a policy document already valid against ``schemas/policy.schema.json``."""
        methods, tools = document.get("methods", {}), document.get("tools", {})
        outbound, limits = document.get("outbound", {}), document.get("limits", {})
        approval, redaction = document.get("approval", {}), document.get("redaction", {})
        timeout = float(document.get("default_timeout_seconds", DEFAULT_TIMEOUT_SECONDS))
        default = ToolRule(timeout_seconds=timeout)
        rules = tuple(
            (
                Globs([entry["match"]]),
                ToolRule(
                    timeout_seconds=float(entry.get("timeout_seconds", timeout)),
                    approval=bool(entry.get("approval", False)),
                    max_argument_bytes=entry.get("max_argument_bytes"),
                    max_result_bytes=entry.get("max_result_bytes"),
                ),
            )
            for entry in document.get("tool", [])
        )
        count = sum(len(part.get(k, ())) for part in (methods, tools) for k in ("allow", "deny"))
        count += len(outbound.get("domains", ())) + len(outbound.get("methods", ())) + len(limits) + len(rules)
        return cls(
            method_allow=Globs(methods.get("allow")),
            method_deny=Globs(methods.get("deny")),
            tool_allow=Globs(tools.get("allow")),
            tool_deny=Globs(tools.get("deny")),
            domains=Globs(outbound.get("domains"), fold_case=True),
            http_methods=frozenset(outbound["methods"]) if "methods" in outbound else None,
            max_bytes={
                direction: limits[f"{direction}_bytes"]
                for direction in ("client_to_server", "server_to_client")
                if f"{direction}_bytes" in limits
            },
            tool_rules=rules,
            default_rule=default,
            approval_deadline_seconds=float(approval.get("deadline_seconds", 300.0)),
            approval_by_elicitation=bool(approval.get("elicitation", True)),
            redactor=Redactor.build(
                pointers=redaction.get("pointers", ()),
                keys=redaction.get("keys", ()),
                patterns=redaction.get("patterns", ()),
            ),
            sanitise_results=bool(redaction.get("sanitise_results", False)),
            rule_count=count,
            version=jsonio.fingerprint(document),
        )

    # -- decisions: the reason for a denial, or None ------------------------------------

    def method_denial(self, method: str) -> str | None:
        cache = self._methods  # per frame: a known name costs one lookup
        return (
            cache[method] if method in cache else _denial(cache, method, self.method_deny, self.method_allow, "method")
        )

    def tool_denial(self, tool: str) -> str | None:
        cache = self._tools
        return cache[tool] if tool in cache else _denial(cache, tool, self.tool_deny, self.tool_allow, "tool")

    def rule_for(self, tool: str) -> ToolRule:
        table = self._rules
        rule = table.get(tool)
        if rule is None:
            rule = next((r for globs, r in self.tool_rules if globs.matches(tool)), self.default_rule)
            if len(table) >= _CACHE_LIMIT:
                table.clear()
            table[tool] = rule
        return rule

    def outbound_denial(self, url: str, method: str) -> str | None:
        """Why an outbound HTTP call to ``url`` with ``method`` is refused (every hop of a redirect too)."""
        return outbound_reason(url, method, self.http_methods, self.domains)

    def check_outbound(self, url: str, method: str) -> None:
        reason = self.outbound_denial(url, method)
        if reason is not None:
            raise denial(CanonicalError.POLICY_DENIED, "/outbound", reason, domain=urlsplit(url).hostname or "")

    def check_call(self, tool: str, argument_bytes: int) -> ToolRule:
        """The tool is allowed and its arguments within its limit; returns its rule (or raises)."""
        reason = self.tool_denial(tool)
        if reason is not None:
            raise denial(CanonicalError.POLICY_DENIED, "/params/name", reason)
        rule = self.rule_for(tool)
        if rule.max_argument_bytes is not None and argument_bytes > rule.max_argument_bytes:
            raise denial(CanonicalError.POLICY_DENIED, "/params/arguments", "arguments_too_large")
        return rule

    def check_result(self, tool: str, result_bytes: int) -> None:
        limit = self.rule_for(tool).max_result_bytes
        if limit is not None and result_bytes > limit:
            raise denial(CanonicalError.POLICY_DENIED, "/result", "result_too_large")

    def check_size(self, direction: str, size: int) -> None:
        """A payload outside the chain (``/execute``) within the policy's size for ``direction``."""
        limit = self.max_bytes.get(direction)
        if limit is not None and size > limit:
            raise denial(CanonicalError.POLICY_DENIED, "", "payload_too_large", limit=limit)

    def check_limits(self, max_frame_bytes: int, max_server_frame_bytes: int | None = None) -> None:
        """Every size the policy sets lies under the frame limit of its direction (or ``SetupError``):
        what a client sends under ``max_frame_bytes``, results under ``max_server_frame_bytes``
        (the same limit when not given)."""
        server = max_frame_bytes if max_server_frame_bytes is None else max_server_frame_bytes
        sizes = [
            (size, server if direction == "server_to_client" else max_frame_bytes)
            for direction, size in self.max_bytes.items()
        ]
        for _, rule in self.tool_rules:
            sizes += [(size, max_frame_bytes) for size in (rule.max_argument_bytes,) if size is not None]
            sizes += [(size, server) for size in (rule.max_result_bytes,) if size is not None]
        over = [(size, limit) for size, limit in sizes if size > limit]
        if over:
            raise SetupError(f"policy: a size limit of {over[0][0]} bytes exceeds the frame limit {over[0][1]}")


def load_policy(path: Path, registry: SchemaRegistry) -> Policy:
    """Read and validate a TOML or JSON policy file; a bad file is a ``SetupError`` naming where."""
    document = read_config(path, what="policy", schema="policy.schema.json", registry=registry)
    for index, pattern in enumerate(document.get("redaction", {}).get("patterns", [])):
        # RE2 runs any pattern it accepts in linear time: a catastrophic one is harmless. It has no
        # back-references nor look-around, which have no linear form: such a pattern is refused.
        try:
            compile_pattern(pattern)
        except PatternError as exc:
            raise SetupError(
                f"policy {path}: at /redaction/patterns/{index}: not a pattern RE2 runs in linear time: {exc}"
            ) from None
    return Policy.from_document(document)
