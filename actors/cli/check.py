"""``check``: a configuration validated, and each stdio server's command found as the runtime
would find it, without starting anything."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from actors.cli.auth import write_auth_lines
from actors.cli.package_pins import package_pin_warnings
from actors.cli.startup import resolve_config
from actors.mcp.config import ServerConfig

__all__ = ["check_command"]


def check_command(args: argparse.Namespace, out: TextIO) -> int:
    config, source = resolve_config(args.config)
    builtin = "on" if config.builtin.enabled else "off"
    out.write(f"{source}: {len(config.servers)} servers, built-in tools {builtin}\n")
    for server in config.servers.values():
        where = server.command if server.transport == "stdio" else server.url
        out.write(f"  {server.name}: {server.transport} {where}\n")
        if server.transport == "stdio":
            out.write(f"    boundary: {boundary_line(server)}\n")
    write_auth_lines(config, out)
    if config.access.policy is not None:
        # Deferred: the gateway (and Cedar) load only for a config that names a policy. A policy
        # that does not load is the config's error (`ConfigError`, naming the file and rule).
        from actors.gateway.access.policy_file import load_policy  # noqa: PLC0415

        policy = load_policy(config)
        if policy is not None:
            out.write(f"  access.policy: {policy.source}: {len(policy.rules)} rules\n")
    for warning in [*config.warnings, *package_pin_warnings(config.servers.values())]:
        out.write(f"warning: {warning}\n")
    missing = [problem for server in config.servers.values() if (problem := _command_problem(server))]
    missing += [problem for server in config.servers.values() if (problem := _sandbox_problem(server))]
    for problem in missing:
        print(f"error: {problem}", file=sys.stderr)
    if missing:
        return 1
    out.write("ok\n")
    return 0


def boundary_line(server: ServerConfig) -> str:
    """A stdio server's effective boundary, in one line (`actors.sandbox.boundary.describe`)."""
    from actors.sandbox.boundary import describe  # noqa: PLC0415 - loads only for stdio servers

    return describe(server.sandbox)


def _sandbox_problem(server: ServerConfig) -> str | None:
    """Why a server that asks for a sandbox would be refused here, or None."""
    if server.sandbox is None:
        return None
    from actors.sandbox.support import sandbox_support  # noqa: PLC0415

    support = sandbox_support()
    return None if support.bwrap else f"server {server.name!r} asks for a sandbox, but {support.problem}"


def _command_problem(server: ServerConfig) -> str | None:
    """Why a stdio server's command cannot run here (naming the server), or None: the runtime's
    own resolution (the server's ``PATH``, a path relative to its ``cwd``), so that ``check`` and
    a start never disagree."""
    if server.transport != "stdio" or not server.command:
        return None
    # Deferred: the transport modules load only when there is a command to check.
    from actors.mcp.sdk_options import StdioCommand  # noqa: PLC0415
    from actors.mcp.stdio_process import resolve_command  # noqa: PLC0415
    from actors.mcp.transport import StartRefused  # noqa: PLC0415

    try:
        command = StdioCommand(server.command, server.args, server.env, server.cwd)
        resolve_command(command, f"server {server.name!r}")
    except StartRefused as exc:
        problem = str(exc)
        if "PATH" in server.env:
            problem += f" (searched the server's PATH {server.env['PATH']!r})"
        return problem
    return None
