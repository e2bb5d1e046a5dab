"""``check``: a configuration validated, and each stdio server's command found as the runtime
would find it, without starting anything."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from actors.cli.auth import auth_states, write_auth_lines
from actors.cli.package_pins import package_pin_warnings
from actors.cli.startup import command_config
from actors.config import ConfigError, RuntimeConfig
from actors.mcp.config import ServerConfig

__all__ = ["check_command"]


def check_command(args: argparse.Namespace, out: TextIO) -> int:
    try:
        config, source = command_config(args)
    except ConfigError as exc:
        if not args.json:
            raise  # `main` prints it: every problem, per server and key; status 2
        problems = [p.model_dump() for p in exc.problems]
        _dump({"source": exc.source, "ok": False, "errors": problems, "warnings": []}, out)
        return 2
    found = [(s.name, problem) for s in config.servers.values() if (problem := _command_problem(s))]
    found += [(s.name, problem) for s in config.servers.values() if (problem := _sandbox_problem(s))]
    errors = [problem for _, problem in found]
    warnings = [*config.warnings, *package_pin_warnings(config.servers.values())]
    policy = _policy(config)
    if args.json:
        logins, store_problem = auth_states(config)
        report = {
            "source": source,
            "ok": not errors,
            "builtin": config.builtin.enabled,
            "servers": [
                _server_report(server, logins.get(server.name)) for server in config.servers.values()
            ],
            "policy": None if policy is None else {"file": policy[0], "rules": policy[1]},
            "errors": [{"server": name, "key": None, "message": problem} for name, problem in found],
            "warnings": [*warnings, *([store_problem] if store_problem else [])],
        }
        _dump(report, out)
        return 1 if errors else 0
    builtin = "on" if config.builtin.enabled else "off"
    out.write(f"{source}: {len(config.servers)} servers, built-in tools {builtin}\n")
    for server in config.servers.values():
        where = server.command if server.transport == "stdio" else server.url
        out.write(f"  {server.name}: {server.transport} {where}\n")
        if server.transport == "stdio":
            out.write(f"    boundary: {boundary_line(server)}\n")
    write_auth_lines(config, out)
    if policy is not None:
        out.write(f"  access.policy: {policy[0]}: {policy[1]} rules\n")
    for warning in warnings:
        out.write(f"warning: {warning}\n")
    for problem in errors:
        print(f"error: {problem}", file=sys.stderr)
    if errors:
        return 1
    out.write("ok\n")
    return 0


def _policy(config: RuntimeConfig) -> tuple[str, int] | None:
    """The access policy's file and its number of rules; None without one."""
    if config.access.policy is None:
        return None
    # Deferred: the gateway (and Cedar) load only for a config that names a policy. A policy
    # that does not load is the config's error (`ConfigError`, naming the file and rule).
    from actors.gateway.access.policy_file import load_policy  # noqa: PLC0415

    policy = load_policy(config)
    return None if policy is None else (str(policy.source), len(policy.rules))


def _server_report(server: ServerConfig, auth: str | None) -> dict[str, Any]:
    """One server as ``check --json`` shows it."""
    report: dict[str, Any] = {"name": server.name, "transport": server.transport}
    if server.transport == "stdio":
        report |= {"command": server.command, "args": list(server.args), "boundary": boundary_line(server)}
    else:
        report |= {"url": server.url, "auth": auth}
    return report


def _dump(report: dict[str, Any], out: TextIO) -> None:
    out.write(json.dumps(report, indent=2, ensure_ascii=False) + "\n")


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
