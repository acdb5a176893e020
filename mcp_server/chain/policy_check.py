"""Pipeline stage 4: the policy, before anything is validated further or executed.

Size per direction, method allow/deny, tool allow/deny and argument size, and a result's size for
the tool it answers. Pure; no I/O. Its fast check passes, from a table filled as frames come, the
(method, tool) pairs the policy has nothing to say about; every other frame is ``inspect``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.types import CLIENT_TO_SERVER, NOTIFICATION, REQUEST, Direction, Frame, Message
from ..execution.policy import Policy, denial
from .classify import called_tool
from .stage import Document, Doubt, FastCheck, Id, Inspection, Kind, Name, Params

__all__ = ["PolicyCheck", "needs_approval"]


def needs_approval(policy: Policy, method: str | None, tool: str | None) -> bool:
    """A ``tools/call`` (of ``tool``) that the policy holds for its user's approval."""
    return method == "tools/call" and tool is not None and policy.rule_for(tool).approval


class PolicyCheck:
    """``tool_methods`` are tools a server also answers as methods of their own name; the tool rules
    govern those calls too. ``can_hold(frame, message)`` says whether something behind the chain can
    hold a call for approval (default: yes); where it cannot, a call whose tool needs approval is denied:
    approval fails closed."""

    __slots__ = ("_quiet", "can_hold", "direction", "limit", "policy", "result_limits", "tool_methods")

    def __init__(
        self,
        policy: Policy,
        direction: Direction,
        *,
        tool_methods: frozenset[str] = frozenset(),
        can_hold: Callable[[Frame, Message], bool] | None = None,
    ) -> None:
        self.policy = policy
        self.direction = direction
        self.tool_methods = tool_methods
        self.can_hold = can_hold
        self.limit = policy.max_bytes.get("client_to_server" if direction is CLIENT_TO_SERVER else "server_to_client")
        self.result_limits = any(rule.max_result_bytes is not None for _, rule in policy.tool_rules)
        self._quiet: dict[tuple[str, str | None], bool] = {}

    def _governed(self, method: str, tool: str | None) -> str | None:
        """The tool whose rules govern a request of ``method`` (``tool``: the one a call names)."""
        return tool if method == "tools/call" else method if method in self.tool_methods else None

    def _nothing_to_say(self, method: str, tool: str | None) -> bool:
        """Whether no request of ``method`` (calling ``tool``) can be refused or held, whatever its size
        within the limit: what ``_inspect`` checks for one, found to apply to none."""
        policy = self.policy
        if policy.method_denial(method) is not None:
            return False
        name = self._governed(method, tool)
        if name is None:
            return method != "tools/call"  # a call that names no tool: the schema check refuses it
        limited = policy.rule_for(name).max_argument_bytes is not None
        return policy.tool_denial(name) is None and not limited and not needs_approval(policy, method, tool)

    def fast_check(self, after: FastCheck, doubt: Doubt) -> FastCheck:
        limit, result_limits, quiet, nothing_to_say = self.limit, self.result_limits, self._quiet, self._nothing_to_say

        def check(
            frame: Frame,
            document: Document,
            kind: Kind,
            rid: Id,
            method: Name,
            params: Params,
            version: Name,
            tool: Name,
        ) -> Message | None:
            if limit is not None and (len(frame.raw) if frame.size is None else frame.size) > limit:
                return doubt(frame, document)
            if method is not None and (kind is REQUEST or kind is NOTIFICATION):
                said = quiet.get((method, tool))
                if said is None:
                    said = quiet[(method, tool)] = nothing_to_say(method, tool)
                if not said:
                    return doubt(frame, document)
            elif kind is not None and result_limits:  # a reply: only a tool's result limit could refuse it
                return doubt(frame, document)
            return after(frame, document, kind, rid, method, params, version, tool)

        return check

    def inspect(self, inspection: Inspection) -> None:
        try:
            self._inspect(inspection.frame, inspection.message)
        except Rejection as rejection:
            if rejection.message is None:
                rejection.message = inspection.message
            raise

    def _inspect(self, frame: Frame, message: Message | None) -> None:
        limit = self.policy.max_bytes.get(frame.direction.value)
        if limit is not None:
            size = frame.size if frame.size is not None else len(frame.raw)
            if size > limit:
                rejection = denial(CanonicalError.POLICY_DENIED, "", "payload_too_large", limit=limit)
                rejection.message = self._answered(frame, message)
                raise rejection
        if message is None:
            return
        if message.kind is not REQUEST and message.kind is not NOTIFICATION:
            if self.result_limits and message.id is not None:
                self._check_result(frame, message)
            return
        method = message.method
        if method is None:
            return
        reason = self.policy.method_denial(method)
        if reason is not None:
            raise denial(CanonicalError.POLICY_DENIED, "/method", reason)
        tool = called_tool(method, message.params)
        name = self._governed(method, tool)
        if name is None:
            return
        params = message.params or {}
        self._check_call(name, params.get("arguments") if method == "tools/call" else message.params, frame)
        hold = self.can_hold
        if hold is not None and needs_approval(self.policy, method, tool) and not hold(frame, message):
            raise denial(CanonicalError.POLICY_DENIED, "/params/name", "approval_unavailable")

    def _answered(self, frame: Frame, message: Message | None) -> Message | None:
        """A denied response names the request it answered (a gateway then answers that request in its
        place); any other message is returned as it is."""
        if message is None or message.id is None or message.kind is REQUEST or message.kind is NOTIFICATION:
            return message
        pending = frame.session.peek(frame.direction.opposite, message.id)
        return message if pending is None else message._replace(method=pending.method, tool=pending.tool)

    def _check_call(self, tool: str, arguments: Any, frame: Frame) -> None:
        limit = self.policy.rule_for(tool).max_argument_bytes
        # The arguments are measured only when the whole frame could be over the tool's limit.
        size = len(jsonio.dumps(arguments)) if limit is not None and len(frame.raw) > limit else 0
        self.policy.check_call(tool, size)

    def _check_result(self, frame: Frame, message: Message) -> None:
        """A tool's result within the tool's ``max_result_bytes`` (a gateway sees results as frames)."""
        assert message.id is not None
        pending = frame.session.peek(frame.direction.opposite, message.id)
        if pending is None or pending.tool is None:
            return
        limit = self.policy.rule_for(pending.tool).max_result_bytes
        size = frame.size if frame.size is not None else len(frame.raw)
        if limit is not None and size > limit:
            rejection = denial(CanonicalError.POLICY_DENIED, "/result", "result_too_large")
            rejection.message = self._answered(frame, message)
            raise rejection
