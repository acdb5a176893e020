"""The spans of the calls a gateway session relays upstream (W3C trace context, and OpenTelemetry's
export when on): an observer of the session. It is told what the session did (a call relayed, answered,
cancelled, timed out, ended with the session) where the session logs it, and never decides anything;
the one thing it adds to a frame is the trace context the call carries upstream.
"""

from __future__ import annotations

from ..core import jsonio
from ..core.types import Frame, Message, RequestId
from ..observe.tracing import Span, Tracer, incoming

__all__ = ["CallSpans"]


class CallSpans:
    """Open spans by the id of their call, each with the verdict it ends with when the upstream answers."""

    __slots__ = ("_open", "tracer")

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self._open: dict[RequestId, tuple[Span, str]] = {}

    def wanted(self, frame: Frame, message: Message) -> bool:
        """A request gets a span when spans are exported, or when it carries its caller's context."""
        return self.tracer.always or frame.headers is not None or bool(message.params and "_meta" in message.params)

    def start(self, frame: Frame, message: Message) -> tuple[Frame, Message, Span | None]:
        """A request with the caller's trace context (``_meta`` or the HTTP header), or any request
        while spans are exported: the gateway's span, its child, goes upstream as the call's parent
        in ``_meta.traceparent`` (and the HTTP upstream's header)."""
        params = message.params
        if (params is not None and type(params) is not dict) or type(message.document) is not dict:
            return frame, message, None  # a refused frame's odd shape, passed on as it came (observe)
        meta = params.get("_meta") if params is not None else None
        assert message.method is not None
        span = self.tracer.start(incoming(meta, frame.headers), message.method, message.tool)
        if span is None:
            return frame, message, None
        carried = {**(params or {}), "_meta": span.meta(meta if type(meta) is dict else None)}
        document = {**message.document, "params": carried}
        size = len(frame.raw) if frame.size is None else frame.size  # the log counts the bytes that came
        frame = frame._replace(raw=jsonio.dumps(document), size=size)
        return frame, message._replace(params=carried, document=document), span

    def relayed(self, span: Span, message: Message, answered_here: bool, verdict: str = "relayed") -> None:
        """An exported span ends with its call's answer (``verdict``: relayed, or observed: a violation
        passed on); a call answered here (its approval refused) ends it now."""
        if answered_here:
            self.tracer.end(span, "enforced", error=True)
        elif self.tracer.always and message.id is not None:
            self._open[message.id] = (span, verdict)

    def answered(self, request_id: RequestId, ending: str | None, *, error: bool) -> None:
        """The span of the call ``request_id`` ends: answered by the upstream (``ending`` ``None``: its
        verdict stands), or in its place (``answered``, ``timeout``, ``cancelled``, the session's end)."""
        if not self._open:
            return
        started = self._open.pop(request_id, None)
        if started is not None:
            span, verdict = started
            self.tracer.end(span, ending or verdict, error=error)

    def end_all(self, reason: str) -> None:
        """The session ends (``reason``): every span still open ends with it."""
        for request_id in list(self._open):
            self.answered(request_id, reason, error=True)
