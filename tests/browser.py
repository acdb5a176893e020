"""A real headless Chromium for the tests, driven over the DevTools protocol on a pipe (no port,
no extra package). Installed from the distribution's packages when missing and possible."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .distro import find_program

WAIT = 20.0


def find_chromium() -> tuple[str | None, str]:
    """The Chromium executable, installed with ``apt-get`` (as root) when missing; else ``None`` and why."""
    return find_program("chromium", "chromium", "chromium-browser")


def _onto_3_and_4(reading: int, writing: int) -> None:
    """In the browser's process, before it starts: its pipe ends as fds 3 and 4 (moved out of the
    way first, should either already be 3 or 4)."""
    high_reading, high_writing = fcntl.fcntl(reading, fcntl.F_DUPFD, 10), fcntl.fcntl(writing, fcntl.F_DUPFD, 10)
    os.dup2(high_reading, 3)
    os.dup2(high_writing, 4)


class Page:
    """One browser tab over the DevTools pipe: commands answered in turn, events collected."""

    def __init__(self, executable: str, profile: Path) -> None:
        to_browser, self._to_browser = os.pipe()
        self._from_browser, from_browser = os.pipe()
        # The browser reads fd 3 and writes fd 4 (--remote-debugging-pipe).
        self.process = subprocess.Popen(
            [executable, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
             "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(3, 4),
            preexec_fn=lambda: _onto_3_and_4(to_browser, from_browser),
        )  # fmt: skip
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send a command; return its result once it comes (events meanwhile are kept)."""
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if self.session is not None and not method.startswith("Target."):
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next:
                assert "error" not in reply, reply
                return dict(reply.get("result", {}))
            self.events.append(reply)

    def wait_for(self, method: str) -> dict[str, Any]:
        while True:
            for event in self.events:
                if event.get("method") == method:
                    return event
            self.events.append(self._read())

    def _read(self) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            assert left > 0 and select.select([self._from_browser], [], [], left)[0], "the browser went quiet"
            chunk = os.read(self._from_browser, 1 << 20)
            assert chunk, "the browser closed its pipe"
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\0", 1)
        return dict(json.loads(line))

    def open(self, url: str, width: int) -> None:
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1, mobile=False)
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")

    def dom(self) -> str:
        found = self.call("Runtime.evaluate", expression="document.documentElement.outerHTML", returnByValue=True)
        return str(found["result"]["value"])

    def screenshot(self, path: Path) -> None:
        """The whole page as a PNG."""
        size = self.call("Page.getLayoutMetrics")["cssContentSize"]
        shot = self.call(
            "Page.captureScreenshot",
            format="png",
            captureBeyondViewport=True,
            clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
        )
        path.write_bytes(base64.b64decode(shot["data"]))

    def console_errors(self) -> list[str]:
        """What the page's console said at error level: exceptions, console.error, failed loads."""
        errors = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                errors.append(str(params.get("exceptionDetails", {}).get("text")))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                errors.append(str(params.get("args")))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                errors.append(str(params["entry"].get("text")))
        return errors

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._to_browser)  # the browser ends when its pipe closes
        try:
            self.process.wait(WAIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._from_browser)


@contextlib.contextmanager
def page(executable: str) -> Iterator[Page]:
    with tempfile.TemporaryDirectory(prefix="mcp-browser-") as profile:
        opened = Page(executable, Path(profile))
        try:
            yield opened
        finally:
            opened.close()
