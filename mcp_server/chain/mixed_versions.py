"""Pipeline stage: a request of a session states no other version than the session's. Pure; no I/O.

A session keeps the version its handshake negotiated (spec basic/lifecycle); a request that states a
version of its own in ``_meta`` (2026-07-28's envelope) and names another is refused. The gateway's
client-to-server chain has this stage, after the schema check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.errors import CanonicalError, Rejection
from ..core.types import REQUEST, Frame, Message, MessageKind
from ..registry.versions import stated_version
from .stage import Document, Doubt, FastCheck, Id, Inspection, Kind, Name, Params

__all__ = ["MixedVersions", "other_version"]


def other_version(session_version: str | None, kind: MessageKind | None, params: Mapping[str, Any] | None) -> Any:
    """The version a request states for itself when it is not its session's (``None``: it states
    none, the session has none, or they agree)."""
    if kind is not REQUEST or session_version is None or params is None:
        return None
    stated = stated_version(params)
    return None if stated is None or stated == session_version else stated


class MixedVersions:
    __slots__ = ()

    def inspect(self, inspection: Inspection) -> None:
        message, session = inspection.message, inspection.frame.session
        stated = None if message is None else other_version(session.version, message.kind, message.params)
        if stated is not None:
            errors = [{"path": "/params/_meta", "msg": f"{stated} in a {session.version} session"}]
            raise Rejection(CanonicalError.MIXED_PROTOCOL_VERSIONS, errors, message=message)

    def fast_check(self, after: FastCheck, doubt: Doubt) -> FastCheck:
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
            # (a frame here has its params as a dict, and states a version only in its ``_meta``)
            if (
                params is not None
                and "_meta" in params
                and other_version(frame.session.version, kind, params) is not None
            ):
                return doubt(frame, document)
            return after(frame, document, kind, rid, method, params, version, tool)

        return check
