"""The ``mcp-actors`` command: list and call tools, run and check configurations, the demo.

The configuration is ``--config FILE``, else ``$MCP_ACTORS_CONFIG``, else ``./mcp.json``, else
the built-in default (the demo server and the built-in tools), so every command works out of
the box. Claude Desktop, Cursor and VS Code files work unchanged.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from actors.config import ConfigError, RuntimeConfig, load_config
from actors.demo import default_config
from actors.mcp.config import ServerConfig
from actors.mcp.sdk_options import StdioCommand
from actors.mcp.stdio_process import resolve_command
from actors.mcp.transport import StartRefused
from actors.runtime import Runtime, ServerStatus
from actors.runtime.messages import CallTool, StartServer
from actors.tools import ToolError, ToolResult, ToolSpec, duration_text, error_label

__all__ = ["main", "resolve_config", "status_table"]

ENV_CONFIG = "MCP_ACTORS_CONFIG"

# A number of seconds as the runtime writes it (``0.25s``, ``30.250000000000004 s``).
_SECONDS = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?) ?s\b")


def resolve_config(path: str | None) -> tuple[RuntimeConfig, str]:
    """The configuration to use and where it came from (a path, or ``built-in default``)."""
    chosen = path or os.environ.get(ENV_CONFIG)
    if chosen:
        return load_config(chosen), chosen
    if Path("mcp.json").is_file():
        return load_config("mcp.json"), "mcp.json"
    return load_config(default_config()), "built-in default"


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers], *[["" if c is None else str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def status_table(statuses: Sequence[ServerStatus]) -> str:
    """Servers as a table: state, pid, restarts, calls, in flight, last error."""
    return _table(
        ["server", "state", "transport", "pid", "restarts", "calls", "errors", "in-flight", "last error"],
        [
            [
                s.namespace,
                s.state,
                s.transport,
                s.pid or "-",
                s.restarts,
                s.calls,
                s.errors,
                s.in_flight,
                _readable(s.last_error or "")[:60],
            ]
            for s in statuses
        ],
    )


def _capabilities(spec: ToolSpec) -> str:
    caps = spec.capabilities
    flags = [name for name, on in (("read-only", caps.read_only), ("writes", caps.writes)) if on]
    return ",".join(flags) or "-"


def _tools(args: argparse.Namespace, out: TextIO) -> int:
    config, _ = resolve_config(args.config)
    with Runtime.start(config, handle_signals=True) as rt:
        tools = rt.list_tools(timeout=args.timeout)
        if args.json:
            json.dump(
                [
                    {
                        "name": t.name,
                        "description": t.description,
                        "source": t.source,
                        "capabilities": t.capabilities.model_dump(),
                        "inputSchema": t.input_schema,
                    }
                    for t in tools
                ],
                out,
                indent=2,
            )
            out.write("\n")
        else:
            out.write(
                _table(
                    ["tool", "source", "capabilities", "description"],
                    [[t.name, t.source, _capabilities(t), t.description.split("\n")[0][:70]] for t in tools],
                )
                + "\n"
            )
        # A server whose tools are unknown after the listing failed to start or to list them.
        failed = [s for s in rt.status() if s.tools is None or s.state == "failed"]
        for s in failed:
            reason = _readable(s.last_error or f"it is {s.state}")
            print(f"error: server {s.namespace!r} did not list its tools: {reason}", file=sys.stderr)
    return 1 if failed else 0


def _call(args: argparse.Namespace, out: TextIO) -> int:
    try:
        arguments = json.loads(args.arguments)
    except json.JSONDecodeError as exc:
        print(f"error: arguments are not JSON: {exc.msg} (at character {exc.pos})", file=sys.stderr)
        return 2
    if not isinstance(arguments, dict):
        print("error: arguments must be a JSON object", file=sys.stderr)
        return 2
    config, _ = resolve_config(args.config)
    with Runtime.start(config, handle_signals=True) as rt:
        result = rt.call_tool(args.tool, arguments, timeout=args.timeout)
    return _print_result(result, args.json, out)


def _print_result(result: ToolResult, as_json: bool, out: TextIO) -> int:
    if as_json:
        out.write(result.model_dump_json(indent=2) + "\n")
        return 0 if result.success else 1
    if not result.success:
        print(_error_line(result.error_type or "execution", result.error or ""), file=sys.stderr)
        return 1
    out.write(result.text + "\n")
    return 0


def _error_line(error_type: str, message: str) -> str:
    return f"error: {_failure(error_type, message)}"


def _failure(error_type: str, message: str) -> str:
    """``<error_type>: <message>``, the message without a label that repeats the type."""
    labels = {f"{error_label(error_type)}:", f"{error_type}:"}
    text = message.strip()
    while prefix := next((p for p in labels if text.startswith(p)), None):
        text = text.removeprefix(prefix).lstrip()
    return f"{error_type}: {_readable(text)}"


def _readable(text: str) -> str:
    """``text`` with its seconds rounded as the runtime rounds them: ``0.25 s``, not ``0.2500000001s``."""
    return _SECONDS.sub(lambda match: duration_text(float(match.group(1))), text)


def _run(args: argparse.Namespace, out: TextIO) -> int:
    config, source = resolve_config(args.config)
    interactive = out.isatty()
    with Runtime.start(config, handle_signals=True) as rt:
        out.write(f"mcp-actors: running {len(config.servers)} servers from {source}; Ctrl-C stops\n")
        try:
            for server in config.servers.values():
                if not server.lazy_start:
                    # No call will start a server that may not start lazily: start it now.
                    rt.registry.tell(StartServer(server.name))
            while True:
                table = status_table(rt.status())
                if interactive:
                    out.write("\x1b[H\x1b[2J")
                out.write(time.strftime("%H:%M:%S") + "\n" + table + "\n")
                out.flush()
                time.sleep(args.interval)
        except (KeyboardInterrupt, SystemExit):
            # Ctrl-C, or SIGTERM (which the runtime turns into SystemExit): a requested stop.
            out.write("\nshutting down\n")
            out.flush()
    out.write("stopped\n")
    return 0


def _check(args: argparse.Namespace, out: TextIO) -> int:
    config, source = resolve_config(args.config)
    builtin = "on" if config.builtin.enabled else "off"
    out.write(f"{source}: {len(config.servers)} servers, built-in tools {builtin}\n")
    for server in config.servers.values():
        where = server.command if server.transport == "stdio" else server.url
        out.write(f"  {server.name}: {server.transport} {where}\n")
    for warning in config.warnings:
        out.write(f"warning: {warning}\n")
    missing = [problem for server in config.servers.values() if (problem := _command_problem(server))]
    for problem in missing:
        print(f"error: {problem}", file=sys.stderr)
    if missing:
        return 1
    out.write("ok\n")
    return 0


def _command_problem(server: ServerConfig) -> str | None:
    """Why a stdio server's command cannot run here (naming the server), or None: the runtime's
    own resolution (the server's ``PATH``, a path relative to its ``cwd``), so that ``check`` and
    a start never disagree."""
    if server.transport != "stdio" or not server.command:
        return None
    try:
        command = StdioCommand(server.command, server.args, server.env, server.cwd)
        resolve_command(command, f"server {server.name!r}")
    except StartRefused as exc:
        problem = str(exc)
        if "PATH" in server.env:
            problem += f" (searched the server's PATH {server.env['PATH']!r})"
        return problem
    return None


def _demo(args: argparse.Namespace, out: TextIO) -> int:
    def say(text: str) -> None:
        out.write(text + "\n")
        out.flush()

    config = load_config(default_config(args.workspace))
    say("mcp-actors demo: the built-in default configuration (the demo server + built-in tools)\n")
    with Runtime.start(config, handle_signals=True) as rt:
        say("1. Started. No server process runs until its first call (lazy start):")
        say(status_table(rt.status()) + "\n")
        started = time.monotonic()
        result = rt.call_tool("demo/echo", {"text": "hello from an actor"}, timeout=30)
        waited = (time.monotonic() - started) * 1000
        say(f"2. demo/echo -> {result.text!r} ({waited:.0f} ms: the server started on this first call)")
        result = rt.call_tool("demo/add", {"a": 2, "b": 40}, timeout=30)
        say(f"   demo/add {{a: 2, b: 40}} -> {result.text} ({result.duration_ms:.1f} ms)")
        say(status_table(rt.status()) + "\n")

        bad = rt.call_tool("demo/add", {"a": "two"}, timeout=30)
        refused = _failure(bad.error_type or "", bad.error or "")
        say(f"3. A bad argument is refused before the server sees it:\n   {refused}\n")

        started = time.monotonic()
        calls = [CallTool(namespace="demo", tool="sleep", arguments={"seconds": 0.5}) for _ in range(16)]
        for call in calls:
            rt.registry.tell(call)
        done = [c.reply.result(timeout=30) for c in calls]
        say(
            f"4. 16 calls of a 0.5 s tool, sent with tell to the registry actor: "
            f"{sum(r.success for r in done)} ok in {time.monotonic() - started:.2f}s "
            "(one session, multiplexed)\n"
        )

        tools = rt.list_tools()
        say(f"5. {len(tools)} tools across namespaces: " + ", ".join(t.name for t in tools) + "\n")
        listed = rt.call_tool("builtin/file-list", {"pattern": "*.md"}, timeout=30)
        say(f"   builtin/file-list *.md -> {listed.text[:200] if listed.success else listed.error}\n")

        pid = rt.status("demo")[0].pid
        crash = rt.call_tool("demo/crash", {}, timeout=30)
        crashed = _failure(crash.error_type or "", crash.error or "")
        say(f"6. demo/crash kills the server process (pid {pid}) mid-call: {crashed}")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            status = rt.status("demo")[0]
            if status.state == "running" and status.pid != pid:
                break
            time.sleep(0.05)
        say(f"   the supervisor restarted it: pid {status.pid}, restarts {status.restarts}")
        result = rt.call_tool("demo/now", {}, timeout=30)
        say(f"   demo/now -> {result.text}")
        say(status_table(rt.status()) + "\n")

        say("7. Stop on request (idle servers stop by themselves after idleTimeout):")
        rt.stop_server("demo")
        say(status_table(rt.status()) + "\n")
    say("8. Shut down: no server process is left.")
    return 0


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command; return its exit status."""
    out = out or sys.stdout
    parser = argparse.ArgumentParser(prog="mcp-actors", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"mcp-actors {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument(
            "--config", metavar="FILE", help=f"config file (default: ${ENV_CONFIG}, ./mcp.json, built-in)"
        )
        return sub

    tools = command("tools", "list the namespaced tools with their capabilities")
    tools.add_argument("--json", action="store_true", help="machine-readable output")
    tools.add_argument("--timeout", type=float, default=60.0, metavar="S")
    call = command("call", "call one tool and print its result")
    call.add_argument("tool", metavar="NS/TOOL")
    call.add_argument("arguments", nargs="?", default="{}", metavar="JSON")
    call.add_argument("--timeout", type=float, default=None, metavar="S")
    call.add_argument("--json", action="store_true", help="print the whole ToolResult as JSON")
    run = command("run", "run the servers in the foreground with a live status table")
    run.add_argument("--interval", type=float, default=1.0, metavar="S")
    command("check", "validate a configuration and say what is wrong")
    demo = commands.add_parser("demo", help="show the runtime at work on the built-in default configuration")
    demo.add_argument("--workspace", default=".", help="folder for the built-in tools")

    args = parser.parse_args(argv)
    handlers = {"tools": _tools, "call": _call, "run": _run, "check": _check, "demo": _demo}
    try:
        return handlers[args.command](args, out)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ToolError as exc:
        # A request to the runtime itself that got no answer (listing, status).
        print(_error_line(exc.error_type, f"{exc.tool_name}: {exc.details}"), file=sys.stderr)
        return 1


def _version() -> str:
    try:
        return importlib.metadata.version("mcp-actors")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"
