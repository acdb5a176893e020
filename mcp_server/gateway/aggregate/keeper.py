"""How an aggregate keeps each server going: started, initialized with the client's ``initialize`` at
the client's version (the server answers with its own), its lists fetched, watched (its end, a ping
it leaves unanswered, frames it stops reading), and when it fails, taken down and started again
after a wait that doubles per failure. Each server's life is a task of its own: one that fails,
hangs or never starts holds up no other.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from .capabilities import LISTS
from .lists import KINDS
from .member import Hello, Member, State
from .servers import AggregateOptions

__all__ = ["Owner", "fetch_lists", "keep"]

log = logging.getLogger("mcp_server.gateway")


class Owner(Protocol):
    """What the aggregate does when a server's life turns."""

    async def greeted(self) -> Hello:
        """The client's ``initialize``, once it came."""

    def up(self, member: Member) -> None:
        """The server answers and its lists are in: its tools join."""

    def down(self, member: Member, reason: str) -> None:
        """The server failed (``reason``): its tools go, what it was answering is answered."""

    def resume(self, member: Member) -> list[tuple[str, Mapping[str, Any]]]:
        """The requests that put a restarted server back as the client left it (log level, subscriptions)."""

    async def heard(self, member: Member, raw: bytes, size: int | None) -> None:
        """A frame of the server's."""


class Failed(Exception):
    """A server's start, handshake or lists did not succeed (the message says how)."""


async def keep(member: Member, owner: Owner, options: AggregateOptions) -> None:
    """The server's life, over and over, until the aggregate closes (this task is cancelled)."""
    wait = options.restart_seconds
    while True:
        try:
            reason = await _life(member, owner, options)
            wait = options.restart_seconds  # it was up: the next failure starts the waits again
        except Failed as failure:
            reason = str(failure)
        except (ConnectionError, OSError) as failure:  # it stopped reading what the aggregate asked
            reason = f"{type(failure).__name__}: {failure}"
        except Exception as failure:  # a fault of its own must end no other server's life
            log.exception("aggregate: server %r failed", member.name)
            reason = f"{type(failure).__name__}: {failure}"
        log.warning("aggregate: server %r is down (%s); starting it again in %.1f s", member.name, reason, wait)
        member.state = State.DOWN
        owner.down(member, reason)
        await member.stop()
        await asyncio.sleep(wait)
        wait = min(wait * 2, options.restart_max_seconds)


async def _life(member: Member, owner: Owner, options: AggregateOptions) -> str:
    """One life: started, initialized, listed, up until it fails; returns why it ended."""
    member.state = State.STARTING
    member.start()
    assert member.connection is not None
    try:
        await asyncio.wait_for(member.connection.open(), options.answer_seconds)
    except Exception as failure:  # SetupError: the command cannot be run; TimeoutError
        raise Failed(f"did not start: {failure or type(failure).__name__}") from None
    member.tasks += [asyncio.ensure_future(_pump(member, owner)), asyncio.ensure_future(member.write_all())]
    hello = await owner.greeted()
    await _initialize(member, hello, owner, options.answer_seconds)
    fetched = await fetch_lists(member, options.answer_seconds)
    if fetched is None:
        raise Failed("a list refused")
    member.lists = fetched
    member.state = State.UP
    owner.up(member)
    log.info("aggregate: server %r is up (protocol %s)", member.name, member.result.get("protocolVersion"))
    return await _until_down(member, options.health_seconds)


async def _initialize(member: Member, hello: Hello, owner: Owner, seconds: float) -> None:
    """``initialize`` at the client's version with its capabilities and name; ``initialized``; then
    what the client had set before a restart (its log level, its subscriptions)."""
    params = {"protocolVersion": hello.version, "capabilities": dict(hello.capabilities), "clientInfo": hello.info}
    try:
        result = await member.ask("initialize", params, seconds)
    except TimeoutError:
        raise Failed(f"no answer to initialize in {seconds:g} s") from None
    if result is None:
        raise Failed("initialize refused, or the server ended")
    member.result = result
    member.notify("notifications/initialized")
    for method, request in owner.resume(member):
        try:
            await member.ask(method, request, seconds)
        except TimeoutError:
            raise Failed(f"no answer to {method} in {seconds:g} s") from None


async def fetch_lists(
    member: Member, seconds: float, only: str | None = None
) -> dict[str, Sequence[Mapping[str, Any]]] | None:
    """The server's lists (or the one capability ``only``'s), every page, by result key; ``None``
    when it refused one (``Failed`` when it left one unanswered for ``seconds``)."""
    capabilities = member.capabilities
    fetched: dict[str, Sequence[Mapping[str, Any]]] = {}
    for method, (key, capability) in KINDS.items():
        if capability not in LISTS or not isinstance(capabilities.get(capability), Mapping):
            continue
        if only is not None and capability != only:
            continue
        items = await _every_page(member, method, key, seconds)
        if items is None:
            return None
        fetched[key] = items
    return fetched


async def _every_page(member: Member, method: str, key: str, seconds: float) -> list[Mapping[str, Any]] | None:
    items: list[Mapping[str, Any]] = []
    params: dict[str, Any] = {}
    seen: set[str] = set()
    while True:
        try:
            result = await member.ask(method, params, seconds)
        except TimeoutError:
            raise Failed(f"no answer to {method} in {seconds:g} s") from None
        if result is None:
            return None
        page = result.get(key)
        items += [item for item in page if isinstance(item, Mapping)] if isinstance(page, list) else []
        cursor = result.get("nextCursor")
        if not isinstance(cursor, str) or cursor in seen:  # the end, or a server going round in circles
            return items
        seen.add(cursor)
        params = {"cursor": cursor}


async def _until_down(member: Member, seconds: float) -> str:
    """Wait until the server fails: its frames end, it stops reading, or it leaves a ping unanswered
    for ``seconds`` (asked only after ``seconds`` without a frame of its)."""
    pump, writer = member.tasks  # as ``_life`` started them
    loop = asyncio.get_running_loop()
    while True:
        quiet = member.heard_at + seconds - loop.time()
        if quiet > 0:
            await asyncio.wait({pump, writer}, timeout=quiet, return_when=asyncio.FIRST_COMPLETED)
        if pump.done():
            return "its connection ended"
        if member.stuck or writer.done():
            return "it stopped reading"
        if loop.time() - member.heard_at < seconds:
            continue
        try:
            await member.ask("ping", {}, seconds)
        except TimeoutError:
            return f"no answer to ping in {seconds:g} s"
        except ConnectionError:
            return "it stopped reading"


async def _pump(member: Member, owner: Owner) -> None:
    """Every frame the server sends, handed to the aggregate, until its connection ends."""
    connection = member.connection
    assert connection is not None
    loop = asyncio.get_running_loop()
    member.heard_at = loop.time()
    try:
        async for received in connection.frames():  # (replies are read by the aggregate's own ids)
            member.heard_at = loop.time()
            await owner.heard(member, received[0], received[1])
    except Exception:  # a fault in one frame's handling ends this server's life only
        log.exception("aggregate: a frame of server %r could not be handled", member.name)
