"""Pipeline stage: a ``tools/call`` calls a tool the lockfile allows (``--lock``). Pure; no I/O.

What the lockfile allows follows the upstream's listings (``registry/lockfile.py``): a tool locked,
and listed as it was locked. The stage comes after the schema check and before the tool-listed one:
a tool the lockfile does not hold is refused as such even before it is listed.
"""

from __future__ import annotations

from ..core.errors import CanonicalError, Rejection
from ..core.types import REQUEST, Frame, Message, MessageKind
from ..registry.lockfile import LockCheck
from .stage import Document, Doubt, FastCheck, Id, Inspection, Kind, Name, Params

__all__ = ["ToolLock", "lock_refusal", "locked_out"]


def locked_out(lock: LockCheck, kind: MessageKind | None, method: str | None, tool: str | None) -> bool:
    """A ``tools/call`` request of a tool ``lock`` does not allow (not locked, or listed otherwise)."""
    return kind is REQUEST and method == "tools/call" and tool is not None and not lock.allows(tool)


def lock_refusal(message: Message) -> Rejection:
    """The refusal of a call ``locked_out`` says the lockfile does not allow."""
    errors = [{"path": "/params/name", "msg": f"{message.tool!r} is not in the lockfile as the upstream lists it"}]
    return Rejection(CanonicalError.TOOL_NOT_LOCKED, errors, message=message)


class ToolLock:
    __slots__ = ("lock",)

    def __init__(self, lock: LockCheck) -> None:
        self.lock = lock

    def inspect(self, inspection: Inspection) -> None:
        message = inspection.message
        if message is not None and locked_out(self.lock, message.kind, message.method, message.tool):
            raise lock_refusal(message)

    def fast_check(self, after: FastCheck, doubt: Doubt) -> FastCheck:
        lock = self.lock

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
            if tool is not None and locked_out(lock, kind, method, tool):
                return doubt(frame, document)
            return after(frame, document, kind, rid, method, params, version, tool)

        return check
