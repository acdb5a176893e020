"""A real HTTP backend on 127.0.0.1 that holds each POST until released: a deliberately slow request."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from .http_backend import serving

WAIT = 20.0


@dataclass
class HeldBackend:
    url: str
    arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


@contextmanager
def held_backend() -> Iterator[HeldBackend]:
    """POSTs answer 201 ``{"id":"asset-1"}`` once ``release`` is set; ``arrived`` tells one is held."""
    state = HeldBackend(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            state.arrived.set()
            state.release.wait(WAIT)
            body = b'{"id":"asset-1"}'
            self.send_response(201)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    with serving(Handler, state.release) as port:
        state.url = f"http://127.0.0.1:{port}"
        yield state
