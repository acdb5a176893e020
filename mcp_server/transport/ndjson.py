"""NDJSON framing shared by the STDIO and Unix socket transports. Pure; no I/O.

A line longer than the frame limit is drained, not held: its bytes are counted and dropped,
and it comes out as an empty frame carrying its size, for the size guard to refuse.
"""

from __future__ import annotations

__all__ = ["LineSplitter"]


class LineSplitter:
    """Splits a byte stream into lines; memory stays bounded by ``limit`` whatever comes in."""

    __slots__ = ("_buffer", "_dropped", "_dropping", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buffer = bytearray()
        self._dropping = False
        self._dropped = 0

    def feed(self, chunk: bytes) -> list[tuple[bytes, int]]:
        """The complete lines in ``chunk`` (with what came before) as ``(raw, size)`` pairs.

        ``raw`` is empty when the line was over the limit; blank lines are skipped.
        """
        lines: list[tuple[bytes, int]] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end == -1:
                self._hold(chunk[start:])
                return lines
            self._finish(chunk[start:end], lines)
            start = end + 1

    def close(self) -> list[tuple[bytes, int]]:
        """At end of stream: the last line, if it had no newline."""
        lines: list[tuple[bytes, int]] = []
        if self._dropping or self._buffer:
            self._finish(b"", lines)
        return lines

    def _hold(self, segment: bytes) -> None:
        if self._dropping:
            self._dropped += len(segment)
            return
        self._buffer += segment
        if len(self._buffer) > self.limit + 1:  # +1: a trailing "\r" is not counted
            self._dropping = True
            self._dropped = len(self._buffer)
            self._buffer = bytearray()

    def _finish(self, segment: bytes, lines: list[tuple[bytes, int]]) -> None:
        if self._dropping:
            lines.append((b"", self._dropped + len(segment)))
            self._dropping = False
            self._dropped = 0
            return
        if self._buffer:
            self._buffer += segment
            line = bytes(self._buffer)
            self._buffer = bytearray()
        else:
            line = segment
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            return
        if len(line) > self.limit:
            lines.append((b"", len(line)))
        else:
            lines.append((line, len(line)))
