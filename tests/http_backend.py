"""A real HTTP backend on 127.0.0.1 for the HTTP-backed tools: echo, slow, failing and redirect endpoints."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

WAIT = 20.0


@dataclass
class Backend:
    url: str = ""
    port: int = 0
    received: list[dict[str, Any]] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)  # a /slow request is held
    release: threading.Event = field(default_factory=threading.Event)


@contextmanager
def http_backend() -> Iterator[Backend]:
    """``/echo…`` answers 200 with what it got; ``/slow`` holds until ``release``; ``/fail`` is 500;
    ``/redirect?to=URL`` is a 302 to URL. Every request is kept in ``received``."""
    state = Backend()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: a client may reuse its connection

        def _answer(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            parts = urlsplit(self.path)
            seen = {
                "method": self.command,
                "path": parts.path,
                "query": {k: v[0] for k, v in parse_qs(parts.query).items()},
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": json.loads(body) if body else None,
                "client_port": self.client_address[1],
            }
            state.received.append(seen)
            if parts.path == "/slow":
                state.arrived.set()
                state.release.wait(WAIT)
            if parts.path == "/redirect":
                self.send_response(302)
                self.send_header("Location", seen["query"]["to"])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 500 if parts.path == "/fail" else 200
            payload = json.dumps({"echo": {k: seen[k] for k in ("method", "path", "query", "body")}}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def handle_one_request(self) -> None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a client that gave up waiting
                super().handle_one_request()

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _answer

        def log_message(self, *args: Any) -> None:
            pass

    with serving(Handler, state.release) as port:
        state.port, state.url = port, f"http://127.0.0.1:{port}"
        yield state


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], release: threading.Event) -> Iterator[int]:
    """``handler`` served on an ephemeral loopback port (yielded) until the block ends; then
    ``release`` lets any held request finish and the server stops."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_port
    finally:
        release.set()
        server.shutdown()
        server.server_close()
