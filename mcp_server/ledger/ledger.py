"""One session's ledger: its ``Session``, the tools its upstream listed, its two chains and the run's
verdicts. Each frame is checked, judged and learnt from here, by the live gateway, by its bridges
(the upstream's side) and by ``check`` on a capture: the same verdicts on the same frames because it
is the same code. No I/O.
"""

from __future__ import annotations

from typing import Any

from ..chain.compose import Chain, build_chain
from ..chain.error_boundary import contain
from ..chain.policy_check import PolicyCheck
from ..core.errors import Rejection
from ..core.session import Session, duplicate_request
from ..core.types import (
    CLIENT_TO_SERVER,
    REQUEST,
    RESPONSE,
    SERVER_TO_CLIENT,
    Direction,
    Frame,
    Message,
)
from ..observe.report import ConformanceReport
from ..registry.lockfile import LockCheck
from ..registry.schemas import SchemaRegistry
from ..registry.tools import UpstreamTools
from .modes import Mode, Modes
from .verdicts import Action, Verdicts

__all__ = ["GOES_ON", "Ledger"]

GOES_ON = (Action.OBSERVED, Action.PASSED)
"""The refusals whose frame goes on to its peer all the same (observe mode, a rule turned off)."""


class Ledger:
    """The books of one session: ``check`` a frame (a reply, valid or refused, settles its request),
    ``judge`` a refusal, learn from what ``passed``, and ``went_on`` for a request on its way."""

    __slots__ = ("chains", "session", "tools", "verdicts")

    def __init__(
        self,
        registry: SchemaRegistry,
        modes: Modes,
        report: ConformanceReport,
        *,
        session: Session | None = None,
        tools: UpstreamTools | None = None,
        limits: tuple[int, int],
        lock: LockCheck | None = None,
        lock_listing: LockCheck | None = None,
        policies: tuple[PolicyCheck | None, PolicyCheck | None] = (None, None),
        one_version: bool = True,
        tool_schemas: bool = True,
        logged: bool = True,
        quarantine: bool = True,
        listings_judged: bool = False,
    ) -> None:
        """``limits``: the frame limits of what the client and the server send; ``lock``: the tool
        lockfile, held to the listing and to each call (``lock_listing``: to the listing only);
        ``policies``: the policy's stage of each direction; ``one_version``: a session keeps the version
        it began with; ``tool_schemas``: calls and results are checked against their tools' schemas;
        ``logged``: each violation is a warning on stderr too; ``quarantine``: the upstream's frames that
        are no JSON-RPC are its stdout polluted (a live process's), not frames of a capture;
        ``listings_judged``: as ``Verdicts`` says."""
        self.session = session if session is not None else Session()  # (an empty Session is falsy)
        self.tools = tools if tools is not None else UpstreamTools(registry)
        self.verdicts = Verdicts(
            modes,
            report,
            registry,
            lock or lock_listing,
            logged=logged,
            quarantine=quarantine,
            listings_judged=listings_judged,
        )
        schemas = self.tools if tool_schemas else None
        inbound = build_chain(
            registry,
            CLIENT_TO_SERVER,
            tools=schemas,
            max_frame_bytes=limits[0],
            policy=policies[0],
            one_version=one_version,
            lock=lock,
        )
        outbound = build_chain(registry, SERVER_TO_CLIENT, tools=schemas, max_frame_bytes=limits[1], policy=policies[1])
        self.chains = {CLIENT_TO_SERVER: inbound, SERVER_TO_CLIENT: outbound}

    @property
    def report(self) -> ConformanceReport:
        return self.verdicts.report

    @property
    def modes(self) -> Modes:
        return self.verdicts.modes

    def check(self, frame: Frame, document: dict[str, Any] | None = None) -> Message | Rejection:
        """The chain's verdict on ``frame`` (``document``: the frame already parsed, as ``check`` reads
        it); a reply read as the answer to a waiting request, valid or refused, settles it (an
        ``initialize`` reply, the session's version with it); a request under an id its sender's
        earlier one still waits on is refused (``DUPLICATE_REQUEST_ID``, ADR 43)."""
        chain: Chain = self.chains[frame.direction]
        try:
            verdict: Message | Rejection = (
                chain.check(frame) if document is None else chain.check_parsed(frame, document)
            )
        except Exception as failure:
            verdict = contain(failure)
        read = verdict if isinstance(verdict, Message) else verdict.message
        request = self.session.answered(frame.direction, read)
        if request is not None and request.method == "initialize" and read is not None and read.kind is RESPONSE:
            # Valid or refused, the reply says the version the session goes on at (ADR 42).
            self.verdicts.handshake(frame, read, request.version)
        if (
            read is not None
            and read.kind is REQUEST
            and read.id is not None
            and self.session.in_flight(frame.direction, read.id)
        ):
            return duplicate_request(read.id, read)  # its reply could not be told from the first's (ADR 43)
        return verdict

    def judge(self, frame: Frame, rejection: Rejection) -> Action:
        """What becomes of a refused frame, counted in the report."""
        return self.verdicts.judge(frame, rejection)

    def passed(self, frame: Frame, message: Message) -> Frame:
        """A valid frame: what it teaches the session (version, tools, cancellations), and its count.
        Returns the frame to deliver (a listing with tools enforce mode hides is a new one)."""
        verdicts = self.verdicts
        frame = verdicts.learn(frame, message, self.tools)
        verdicts.report.frame(frame.direction, message.method, message.kind, self.session)
        return frame

    def went_on(self, direction: Direction, message: Message | None) -> None:
        """A request delivered to its peer (valid, or refused and let through) waits for its answer."""
        if message is not None and message.kind is REQUEST and message.id is not None and message.method is not None:
            self.session.follow(direction, message)

    def observed(self, direction: Direction, tool: str | None = None) -> bool:
        """Whether a refusal of what goes in ``direction`` (about ``tool``) is only observed."""
        return self.modes.mode_for(direction, tool) is Mode.OBSERVE
