"""The ``mcp-actors`` command: list and call tools, run and check configurations, the demo.

The configuration is ``--config FILE``, else ``$MCP_ACTORS_CONFIG``, else ``./mcp.json``, else
the built-in default (the demo server and the built-in tools), so every command works out of
the box. Claude Desktop, Cursor and VS Code files work unchanged.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from actors.config import ConfigError, RuntimeConfig, load_config
from actors.runtime import Runtime, ServerStatus
from actors.tools import ToolResult, ToolSpec

__all__ = ["main", "resolve_config", "status_table"]

ENV_CONFIG = "MCP_ACTORS_CONFIG"


def resolve_config(path: str | None) -> tuple[RuntimeConfig, str]:
    """The configuration to use and where it came from (a path, or ``built-in default``)."""
    from actors.demo import default_config

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
                (s.last_error or "")[:60],
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
        failed = [s for s in rt.status() if s.last_error]
        for s in failed:
            print(f"warning: server {s.namespace!r}: {s.last_error}", file=sys.stderr)
    return 0


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
        print(f"error: {result.error_type}: {result.error}", file=sys.stderr)
        return 1
    out.write(result.text + "\n")
    return 0


def _run(args: argparse.Namespace, out: TextIO) -> int:
    config, source = resolve_config(args.config)
    interactive = out.isatty()
    with Runtime.start(config, handle_signals=True) as rt:
        out.write(f"mcp-actors: running {len(config.servers)} servers from {source}; Ctrl-C stops\n")
        try:
            while True:
                table = status_table(rt.status())
                if interactive:
                    out.write("\x1b[H\x1b[2J")
                out.write(time.strftime("%H:%M:%S") + "\n" + table + "\n")
                out.flush()
                time.sleep(args.interval)
        except KeyboardInterrupt:
            out.write("\nshutting down\n")
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
    out.write("ok\n")
    return 0


def _demo(args: argparse.Namespace, out: TextIO) -> int:
    from actors.demo import default_config

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
        say(f"3. A bad argument is refused before the server sees it:\n   {bad.error_type}: {bad.error}\n")

        from actors.runtime.messages import CallTool

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
        say(f"6. demo/crash kills the server process (pid {pid}) mid-call: {crash.error_type}: {crash.error}")
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
