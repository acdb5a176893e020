"""Pipeline stage 4: the policy, before anything is validated further or executed.

Size per direction, method allow/deny, tool allow/deny and argument size, and a result's size for
the tool it answers. Pure; no I/O. ``fast_allows`` says, from tables, which frames the policy has
nothing to say about, so the compiled path runs this stage only for the others.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.types import CLIENT_TO_SERVER, NOTIFICATION, REQUEST, Direction, Frame, Message
from ..execution.policy import Policy, denial
from .stage import Inspection

__all__ = ["PolicyCheck"]


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

    def fast_allows(self, size: int, method: str | None, tool: str | None) -> bool:
        """Whether the policy certainly allows a request or notification of ``method`` (calling
        ``tool``) of ``size`` bytes; ``False`` sends the frame down the diagnostic path."""
        if self.limit is not None and size > self.limit:
            return False
        if method is None:
            return not self.result_limits
        quiet = self._quiet.get((method, tool))
        if quiet is None:
            quiet = self._quiet[(method, tool)] = self._nothing_to_say(method, tool)
        return quiet

    def _nothing_to_say(self, method: str, tool: str | None) -> bool:
        policy = self.policy
        if policy.method_denial(method) is not None:
            return False
        name = tool if method == "tools/call" else method if method in self.tool_methods else None
        if name is None:
            return method != "tools/call"
        rule = policy.rule_for(name)
        return policy.tool_denial(name) is None and not rule.approval and rule.max_argument_bytes is None

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
        if method == "tools/call":
            params = message.params or {}
            name = params.get("name")
            if isinstance(name, str):
                self._check_call(name, params.get("arguments"), frame)
                hold = self.can_hold
                if hold is not None and self.policy.rule_for(name).approval and not hold(frame, message):
                    raise denial(CanonicalError.POLICY_DENIED, "/params/name", "approval_unavailable")
        elif method in self.tool_methods:
            self._check_call(method, message.params, frame)

    def _answered(self, frame: Frame, message: Message | None) -> Message | None:
        """A denied response settles the request it answered and names it (a gateway then answers
        that request in its place); any other message is returned as it is."""
        if message is None or message.id is None or message.kind is REQUEST or message.kind is NOTIFICATION:
            return message
        pending = frame.session.settle(frame.direction.opposite, message.id)
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
