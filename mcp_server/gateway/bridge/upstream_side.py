"""The upstream's side of a bridged session: a ``Session`` at the upstream's version and the two
chains that check each frame crossing there, against the upstream's own schema, with the run's
verdicts (report, enforce or observe) on what they refuse. No I/O and no translation here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from ...core import jsonio
from ...core.errors import CanonicalError, Rejection
from ...core.session import Session
from ...core.types import (
    CLIENT_TO_SERVER,
    REQUEST,
    SERVER_TO_CLIENT,
    Direction,
    Frame,
    Message,
)
from ...ledger.ledger import Ledger
from ...ledger.verdicts import Action
from ...registry.lockfile import LockCheck
from ...registry.versions import stateless_version
from ..config import GatewayConfig
from ..session import GatewayRun

__all__ = ["ASKS", "Heard", "UpstreamSide", "not_bridgeable"]

_LET_THROUGH = (Action.OBSERVED, Action.PASSED, Action.LATE)
# What a server asks its client (a server-to-client request before 2026-07-28, an input request of an
# InputRequiredResult since), and the client capability each needs: what a bridge carries across.
ASKS = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}


def not_bridgeable(feature: str) -> Rejection:
    """The refusal of what one era has and the other cannot carry, naming it (``data.feature``)."""
    return Rejection(
        CanonicalError.NOT_BRIDGEABLE,
        [{"path": "", "msg": "not_bridgeable", "feature": feature}],
        extra={"feature": feature},
    )


class Heard(NamedTuple):
    """An upstream frame as its side heard it: the message (or the refusal enforced), and the bytes
    it goes on as (a listing may have lost tools)."""

    verdict: Message | Rejection
    raw: bytes


class UpstreamSide:
    """What crosses between a bridge (or an aggregate) and its upstream, checked at the upstream's
    version. An aggregate's member side (``server``) also checks each call against its server's own
    tool schemas (``tool_schemas``), holds its listing to the lockfile (``lock``) and has the modes
    of its own tools (``config``)."""

    def __init__(
        self,
        run: GatewayRun,
        label: str,
        *,
        server: str | None = None,
        lock: LockCheck | None = None,
        config: GatewayConfig | None = None,
        tool_schemas: bool = False,
        listings_judged: bool = False,
    ) -> None:
        """``listings_judged``: the upstream is an aggregate, whose tools are judged at their servers."""
        registry = run.registry
        self.session = Session()
        self._registry = registry
        self.transport = f"upstream ({label})"
        self.ledger = Ledger(
            registry,
            config or run.config,
            run.report,
            session=self.session,
            limits=(run.max_frame_bytes, run.max_server_frame_bytes),
            lock_listing=lock,
            one_version=False,
            tool_schemas=tool_schemas,
            listings_judged=listings_judged,
        )
        self.verdicts, self._tools = self.ledger.verdicts, self.ledger.tools
        run.report.open_session(self.session, self.transport, server=server)
        self.carried = run.report.carried(self.session)  # what an aggregate routes past this side (ADR 38)

    def sending(self, document: Mapping[str, Any]) -> tuple[bytes, Message]:
        """A frame the bridge made for the upstream: its bytes, and the message it was checked as (a
        request is expected back). Refused at the upstream's version and enforced: ``Rejection``
        (the bridge answers its client with it); observed: sent all the same."""
        raw = jsonio.dumps(document)
        frame = Frame(raw, self.transport, self.session, None, CLIENT_TO_SERVER)
        # The frame was just made from ``document``: checked as parsed, not read back.
        verdict = self.ledger.check(frame, document if type(document) is dict else dict(document))
        if isinstance(verdict, Rejection):
            if self.ledger.judge(frame, verdict) not in _LET_THROUGH or verdict.message is None:
                raise verdict
            message = verdict.message
            self.verdicts.learn(frame, message, self._tools)
        else:
            message = verdict
            self.ledger.passed(frame, message)
        if message.kind is REQUEST and message.id is not None and message.method is not None:
            stated = stateless_version(message.params, self._registry) if self.session.version is None else None
            self.session.expect(CLIENT_TO_SERVER, message.id, message.method, message.tool, stated)
        return raw, message

    def heard(self, raw: bytes, size: int | None = None) -> Message | Rejection:
        """A frame of the upstream's, checked at its version: its message (a reply settles its
        request; a request of the upstream's is expected back), or the ``Rejection`` enforced."""
        return self.hear(raw, size).verdict

    def hear(self, raw: bytes, size: int | None = None, document: dict[str, Any] | None = None) -> Heard:
        """``heard``, saying too the bytes the frame goes on as (``document``: the frame, parsed already)."""
        frame = Frame(raw, self.transport, self.session, size, SERVER_TO_CLIENT)
        verdict = self.ledger.check(frame, document)
        if isinstance(verdict, Message):
            message = verdict
            learnt = self.ledger.passed(frame, message)
        elif self.ledger.judge(frame, verdict) not in _LET_THROUGH or verdict.message is None:
            return Heard(verdict, raw)
        else:
            message = verdict.message
            learnt = self.verdicts.learn(frame, message, self._tools)
        if learnt is not frame:  # a listing with tools left out (invalid, or not as locked)
            message = message._replace(document=jsonio.loads(learnt.raw))
        if message.kind is REQUEST:  # (a reply the check read as one settled its request already)
            self.ledger.went_on(SERVER_TO_CLIENT, message)
        return Heard(message, learnt.raw)

    def frame(self, direction: Direction, raw: bytes = b"") -> Frame:
        """A frame of this side, for the report (what the bridge did with one it made or heard)."""
        return Frame(raw, self.transport, self.session, len(raw), direction)

    def untranslated(self, message: Message, feature: str, direction: Direction, action: str, raw: bytes = b"") -> None:
        """What one era cannot carry, recorded as a ``not_bridgeable`` violation naming it."""
        errors = not_bridgeable(feature).errors
        self.verdicts.violation("not_bridgeable", self.frame(direction, raw), message, errors, action=action)

    def answering(self, document: Mapping[str, Any]) -> bytes:
        """A reply the bridge makes to a request of the upstream's (the client's answer, translated):
        checked like any frame sent, its request settled."""
        raw, message = self.sending(document)
        if message.id is not None:
            self.session.settle(SERVER_TO_CLIENT, message.id)
        return raw
