"""The commands that examine one upstream through a gateway session with a scripted client: ``doctor``
(every protocol version, its tools, every frame, in one go), ``lock`` (its tools recorded in a
lockfile) and ``login`` (the gateway's OAuth login to it, ahead of time)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from ..core.settings import Settings, SetupError, seconds
from .common import HEADER_HELP, declare_upstream_command

__all__ = ["DOCTOR_USAGE", "LOCK_USAGE", "declare_doctor", "declare_lock", "declare_login", "doctor", "lock", "login"]

DOCTOR_USAGE = (
    "mcp-server doctor [--format text|json] [--timeout SECONDS] [--config FILE] [--policy FILE] "
    "(--upstream URL | [--] COMMAND ...)"
)
LOCK_USAGE = "mcp-server lock [--output FILE] [--server NAME] [--timeout SECONDS] (--upstream URL | [--] COMMAND ...)"


def declare_doctor(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--upstream", metavar="URL", help="a Streamable HTTP MCP endpoint (else the command after --)")
    parser.add_argument("--timeout", default="10", help="seconds each request waits at most (10)")
    parser.add_argument("--format", choices=["text", "json"], default="text", help="the verdict's form (text)")
    parser.add_argument("--config", type=Path, help="gateway configuration (JSON or TOML): rules turned off")
    parser.add_argument("--policy", type=Path, help="execution policy, TOML or JSON (or MCP_POLICY_FILE)")
    parser.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'", help=HEADER_HELP)
    declare_upstream_command(parser)


def declare_lock(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--upstream", metavar="URL", help="a Streamable HTTP MCP endpoint (else the command after --)")
    parser.add_argument("--output", type=Path, default=Path("mcp.lock.json"), help="the lockfile (mcp.lock.json)")
    parser.add_argument("--server", metavar="NAME", help="its entry's key (default: the server's serverInfo.name)")
    parser.add_argument("--timeout", default="10", help="seconds each request waits at most (10)")
    parser.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'", help=HEADER_HELP)
    declare_upstream_command(parser)


def declare_login(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--upstream", metavar="URL", required=True, help="the Streamable HTTP MCP endpoint")
    parser.add_argument("--config", type=Path, help="gateway configuration (JSON or TOML): its oauth table")


def lock(args: argparse.Namespace, command: list[str], environ: Mapping[str, str]) -> int:
    from ..gateway import lock as locking
    from ..gateway import startup

    settings = Settings.from_env(environ)
    gateway = startup.prepare(
        settings, environ, None, upstream_url=args.upstream, command=command, mode="observe", headers=args.header
    )
    timeout = seconds(args.timeout, name="--timeout")
    return locking.run_lock(gateway, url=args.upstream, output=args.output, server=args.server, timeout=timeout)


def doctor(args: argparse.Namespace, command: list[str], environ: Mapping[str, str]) -> int:
    from ..gateway import doctor as doctoring
    from ..gateway import startup

    settings = Settings.from_env(environ)
    gateway = startup.prepare(
        settings,
        environ,
        None,
        upstream_url=args.upstream,
        command=command,
        config_path=args.config,
        mode="observe",  # everything passes, so that everything is seen and counted
        policy_path=args.policy,
        headers=args.header,
    )
    timeout = seconds(args.timeout, name="--timeout")
    return doctoring.run_doctor(gateway, url=args.upstream, command=command, timeout=timeout, format=args.format)


def login(args: argparse.Namespace, command: list[str], environ: Mapping[str, str]) -> int:
    """``mcp-server login``: the gateway's OAuth login to an upstream now, its tokens kept for later runs."""
    import asyncio

    from ..gateway import startup

    settings = Settings.from_env(environ)
    gateway = startup.prepare(
        settings, environ, None, upstream_url=args.upstream, command=[], config_path=args.config, interactive=True
    )
    if gateway.login is None:
        raise SetupError(
            "nothing to log in with: the oauth extra is needed (pip install 'mcp-server[oauth]'), and no "
            "Authorization header or oauth.enabled = false may be configured"
        )
    from ..execution.upstream_login import UpstreamLogin, login_now

    login = gateway.login.now()  # the SDK's login, made now
    assert isinstance(login, UpstreamLogin)
    return asyncio.run(login_now(login, gateway.upstream_name))
