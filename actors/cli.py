"""The ``mcp-actors`` command: list and call tools, list and read resources, list and get
prompts, run and check configurations, log in to remote servers, the demo.

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
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from actors.config import ConfigError, RuntimeConfig, load_config
from actors.content import ContentText
from actors.demo import default_config
from actors.mcp.catalog import Catalog, PromptSpec, ResourceSpec, ResourceTemplateSpec
from actors.mcp.config import ServerConfig
from actors.runtime.schema_cache import SchemaCache
from actors.tools import ToolError, ToolResult, ToolSpec, duration_text, error_label

if TYPE_CHECKING:
    from actors.mcp.auth import TokenStore
    from actors.runtime import Runtime, ServerStatus

__all__ = ["ProgressBar", "main", "resolve_config", "status_table"]

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


def _start(config: RuntimeConfig, cache: SchemaCache | None = None) -> Runtime:
    """A runtime for one command (SIGTERM unwinds it), with the schema cache if given."""
    # Deferred: the actors, the event loop and OpenTelemetry load only for a command that runs
    # servers (this is the command's own thread), not for `--help`, `check` or a cached listing.
    from actors.runtime import Runtime  # noqa: PLC0415

    return Runtime.start(config, handle_signals=True, schema_cache=cache)


def _seen(config: RuntimeConfig, cache: SchemaCache) -> set[str]:
    """The servers whose lists the schema cache knows."""
    return {name for name, server in config.servers.items() if cache.load(server) is not None}


def _cache(args: argparse.Namespace) -> SchemaCache:
    """The schema cache a listing reads; with ``--no-cache`` one it only writes (a live listing
    that refreshes it)."""
    return SchemaCache(read=not args.no_cache)


def _cached(
    config: RuntimeConfig, cache: SchemaCache, namespace: str | None = None
) -> tuple[list[ToolSpec], list[Catalog]] | None:
    """Every tool and each server's catalog (sorted by namespace) as the schema cache knows them,
    with the built-in tools, for every server or the one ``namespace``; None if one was never
    seen (the runtime must start it) or ``namespace`` is no server (the runtime says so)."""
    if not cache.read or (namespace is not None and namespace not in config.servers):
        return None
    tools: list[ToolSpec] = []
    catalogs: list[Catalog] = []
    for name, server in sorted(config.servers.items()):
        if namespace is not None and name != namespace:
            continue
        known = cache.load(server)
        if known is None:
            return None
        tools += known.tools
        catalogs.append(known.catalog)
    if config.builtin.enabled and namespace is None:
        # Deferred: only a configuration with the built-in tools pays for their module.
        from actors.builtin import BuiltinAdapter  # noqa: PLC0415

        tools += BuiltinAdapter(config.builtin.workspace).discover()
    return sorted(tools, key=lambda t: t.name), catalogs


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
    cache = _cache(args)
    cached = _cached(config, cache)
    if cached is not None:
        # Every server has run before: answered from the cache, no server process starts.
        _write_tools(cached[0], args, out)
        return 0
    seen = _seen(config, cache)
    with _start(config, cache) as rt:
        _write_tools(rt.list_tools(timeout=args.timeout), args, out)
        return _listing_failures(rt, None, "tools", seen)


def _write_tools(tools: Sequence[ToolSpec], args: argparse.Namespace, out: TextIO) -> None:
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


def _call(args: argparse.Namespace, out: TextIO) -> int:
    arguments = _json_object(args.arguments, "arguments")
    if arguments is None:
        return 2
    config, _ = resolve_config(args.config)
    # Progress is drawn for a person at a terminal; piped or logged, it would be noise.
    bar = ProgressBar(sys.stderr) if sys.stderr.isatty() else None
    with _start(config) as rt:
        try:
            result = rt.call_tool(
                args.tool, arguments, timeout=args.timeout, progress=bar.update if bar else None
            )
        finally:
            if bar is not None:
                bar.close()
    return _print_result(result, args, out, "content")


def _json_object(text: str, what: str) -> dict[str, Any] | None:
    """``text`` parsed as a JSON object, or None after saying on stderr what is wrong with it."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        print(f"error: {what} are not JSON: {exc.msg} (at character {exc.pos})", file=sys.stderr)
        return None
    if not isinstance(value, dict):
        print(f"error: {what} must be a JSON object", file=sys.stderr)
        return None
    return value


def _print_result(result: ToolResult, args: argparse.Namespace, out: TextIO, field: str) -> int:
    """Print a result: as JSON with ``--json``; else the lines of its ``field`` (``content``,
    ``contents`` or ``messages``), or the classified error on stderr. The exit status."""
    if args.json:
        out.write(result.model_dump_json(indent=2) + "\n")
        return 0 if result.success else 1
    if not result.success:
        print(_error_line(result.error_type or "execution", result.error or ""), file=sys.stderr)
        return 1
    items = (result.output or {}).get(field)
    if not isinstance(items, list) or not items:
        # No MCP content (a built-in tool's output, or an empty answer): the output as text.
        out.write(result.text + "\n")
        return 0
    text = ContentText(Path(args.save) if args.save else None)
    render = {"content": text.blocks, "contents": text.contents, "messages": text.messages}[field]
    try:
        lines = render(items)
    except OSError as exc:
        print(f"error: cannot save to {args.save}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    out.write("".join(line + "\n" for line in lines))
    return 0


class ProgressBar:
    """A call's progress, redrawn in place on one terminal line and erased when the call ends.

    `update` runs on a host thread of the runtime while the command's thread waits for the
    answer; news that arrives after `close` is dropped.
    """

    WIDTH = 24

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._drawn = False
        self._closed = False
        try:
            columns = os.get_terminal_size(stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            columns = 0
        # A terminal whose size was never set (a fresh pty, some CI runners) says 0 columns.
        self._columns = columns if columns > 0 else 80

    def line(self, progress: float, total: float | None, message: str | None) -> str:
        """The bar for one update: ``[#####-------]  42% message``, or without a total the
        count so far."""
        if total is not None and total > 0:
            fraction = min(max(progress / total, 0.0), 1.0)
            filled = round(fraction * self.WIDTH)
            bar = f"[{'#' * filled}{'-' * (self.WIDTH - filled)}] {fraction:4.0%}"
        else:
            bar = f"[{_number(progress)}]"
        text = f"{bar} {message}" if message else bar
        return text[: max(self._columns - 1, 10)]

    def update(self, progress: float, total: float | None, message: str | None) -> None:
        with self._lock:
            if self._closed:
                return
            self._stream.write("\r\x1b[K" + self.line(progress, total, message))
            self._stream.flush()
            self._drawn = True

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._drawn:
                self._stream.write("\r\x1b[K")
                self._stream.flush()


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _resources(args: argparse.Namespace, out: TextIO) -> int:
    config, _ = resolve_config(args.config)
    cache = _cache(args)
    cached = _cached(config, cache, args.namespace)
    if cached is not None:
        catalogs = cached[1]
        resources = [r for c in catalogs for r in c.resources]
        _write_resources(resources, [t for c in catalogs for t in c.templates], args, out)
        return 0
    seen = _seen(config, cache)
    with _start(config, cache) as rt:
        if (status := _known(rt, args.namespace)) is not None:
            return status
        resources = rt.list_resources(args.namespace, timeout=args.timeout)
        templates = rt.list_resource_templates(args.namespace, timeout=args.timeout)
        _write_resources(resources, templates, args, out)
        return _listing_failures(rt, args.namespace, "resources", seen)


def _write_resources(
    resources: Sequence[ResourceSpec],
    templates: Sequence[ResourceTemplateSpec],
    args: argparse.Namespace,
    out: TextIO,
) -> None:
    if args.json:
        listing = {
            "resources": [_camel(r.model_dump(mode="json")) for r in resources],
            "resourceTemplates": [_camel(t.model_dump(mode="json")) for t in templates],
        }
        out.write(json.dumps(listing, indent=2, ensure_ascii=False) + "\n")
        return
    out.write(
        _table(
            ["server", "uri", "name", "mime type", "description"],
            [[r.namespace, r.uri, r.name, r.mime_type, _first_line(r.description)] for r in resources],
        )
        + "\n"
    )
    if templates:
        rows = [
            [t.namespace, t.uri_template, t.name, t.mime_type, _first_line(t.description)] for t in templates
        ]
        out.write("\n" + _table(["server", "template", "name", "mime type", "description"], rows) + "\n")


def _read(args: argparse.Namespace, out: TextIO) -> int:
    config, _ = resolve_config(args.config)
    with _start(config) as rt:
        result = rt.read_resource(args.namespace, args.uri, timeout=args.timeout)
    return _print_result(result, args, out, "contents")


def _prompts(args: argparse.Namespace, out: TextIO) -> int:
    config, _ = resolve_config(args.config)
    cache = _cache(args)
    cached = _cached(config, cache, args.namespace)
    if cached is not None:
        _write_prompts(sorted((p for c in cached[1] for p in c.prompts), key=lambda p: p.name), args, out)
        return 0
    seen = _seen(config, cache)
    with _start(config, cache) as rt:
        if (status := _known(rt, args.namespace)) is not None:
            return status
        _write_prompts(rt.list_prompts(args.namespace, timeout=args.timeout), args, out)
        return _listing_failures(rt, args.namespace, "prompts", seen)


def _write_prompts(prompts: Sequence[PromptSpec], args: argparse.Namespace, out: TextIO) -> None:
    if args.json:
        listing = [_camel(p.model_dump(mode="json")) for p in prompts]
        out.write(json.dumps(listing, indent=2, ensure_ascii=False) + "\n")
    else:
        rows = [[p.name, _prompt_arguments(p), _first_line(p.description)] for p in prompts]
        out.write(_table(["prompt", "arguments", "description"], rows) + "\n")


def _prompt(args: argparse.Namespace, out: TextIO) -> int:
    arguments = _json_object(args.arguments, "prompt arguments")
    if arguments is None:
        return 2
    wrong = sorted(name for name, value in arguments.items() if not isinstance(value, str))
    if wrong:
        print(f"error: prompt arguments must be text: {', '.join(wrong)}", file=sys.stderr)
        return 2
    config, _ = resolve_config(args.config)
    with _start(config) as rt:
        result = rt.get_prompt(args.prompt, arguments, timeout=args.timeout)
    return _print_result(result, args, out, "messages")


def _camel(fields: dict[str, Any]) -> dict[str, Any]:
    """A spec's fields named as MCP names them (``mime_type`` → ``mimeType``)."""
    return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): v for k, v in fields.items()}


def _prompt_arguments(prompt: PromptSpec) -> str:
    """``city, [state]``: the optional ones in brackets."""
    return ", ".join(a.name if a.required else f"[{a.name}]" for a in prompt.arguments) or "-"


def _first_line(text: str | None) -> str:
    return (text or "").strip().split("\n")[0][:70]


def _known(rt: Runtime, namespace: str | None) -> int | None:
    """None if ``namespace`` is None or a configured server; else exit status 1, said on stderr."""
    if namespace is None or rt.status(namespace):
        return None
    # Worded as the runtime words an unknown namespace for a read or a prompt.
    known = ", ".join(s.namespace for s in rt.status()) or "none"
    message = f"no server for namespace {namespace!r} (known: {known})"
    print(_error_line("not_found", message), file=sys.stderr)
    return 1


def _listing_failures(rt: Runtime, namespace: str | None, what: str, seen: set[str]) -> int:
    """Say on stderr which servers could not be listed (they did not start); the exit status.
    A server in ``seen`` was listed from the schema cache: it was not started, and need not be."""
    failed = [
        s
        for s in rt.status(namespace)
        if s.state == "failed" or (s.tools is None and s.namespace not in seen)
    ]
    for s in failed:
        reason = _readable(s.last_error or f"it is {s.state}")
        print(f"error: server {s.namespace!r} did not list its {what}: {reason}", file=sys.stderr)
    return 1 if failed else 0


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
    # `run` used to show a status table and serve nothing; it serves now, under its new name.
    print("mcp-actors: `run` is `serve` now; see `mcp-actors serve --help`", file=sys.stderr)
    return _serve(args, out)


def _serve(args: argparse.Namespace, out: TextIO) -> int:
    config, _ = resolve_config(args.config)
    # Deferred: the gateway (the SDK's server side, Starlette, uvicorn) loads only to serve.
    from actors.gateway import command as gateway_command  # noqa: PLC0415

    return gateway_command.serve(args, config)


def _check(args: argparse.Namespace, out: TextIO) -> int:
    config, source = resolve_config(args.config)
    builtin = "on" if config.builtin.enabled else "off"
    out.write(f"{source}: {len(config.servers)} servers, built-in tools {builtin}\n")
    for server in config.servers.values():
        where = server.command if server.transport == "stdio" else server.url
        out.write(f"  {server.name}: {server.transport} {where}\n")
    _write_auth_lines(config, out)
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


def _demo(args: argparse.Namespace, out: TextIO) -> int:
    def say(text: str) -> None:
        out.write(text + "\n")
        out.flush()

    config = load_config(default_config(args.workspace))
    say("mcp-actors demo: the built-in default configuration (the demo server + built-in tools)\n")
    with _start(config) as rt:
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

        from actors.runtime.messages import CallTool  # noqa: PLC0415  (see _start)

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


def _parser(serve_arguments: bool = True) -> argparse.ArgumentParser:
    """The command line: the commands and their arguments (``serve``'s only if
    ``serve_arguments``: they import the gateway)."""
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
    tools.add_argument(
        "--no-cache",
        action="store_true",
        help="start every server and list live (the schema cache is refreshed, not read)",
    )
    call = command("call", "call one tool and print its result")
    call.add_argument("tool", metavar="NS/TOOL")
    call.add_argument("arguments", nargs="?", default="{}", metavar="JSON")
    call.add_argument("--timeout", type=float, default=None, metavar="S")
    call.add_argument("--json", action="store_true", help="print the whole ToolResult as JSON")
    call.add_argument("--save", metavar="DIR", help="save images, audio and binary resources to files in DIR")
    resources = command("resources", "list the resources and resource templates of every server, or of NS")
    resources.add_argument("namespace", nargs="?", metavar="NS")
    resources.add_argument("--json", action="store_true", help="machine-readable output")
    resources.add_argument("--timeout", type=float, default=60.0, metavar="S")
    resources.add_argument(
        "--no-cache",
        action="store_true",
        help="start every server and list live (the schema cache is refreshed, not read)",
    )
    read = command("read", "read one resource and print its contents")
    read.add_argument("namespace", metavar="NS")
    read.add_argument("uri", metavar="URI")
    read.add_argument("--timeout", type=float, default=None, metavar="S")
    read.add_argument("--json", action="store_true", help="print the whole ToolResult as JSON")
    read.add_argument("--save", metavar="DIR", help="save binary contents to files in DIR")
    prompts = command("prompts", "list the prompts of every server, or of NS, with their arguments")
    prompts.add_argument("namespace", nargs="?", metavar="NS")
    prompts.add_argument("--json", action="store_true", help="machine-readable output")
    prompts.add_argument("--timeout", type=float, default=60.0, metavar="S")
    prompts.add_argument(
        "--no-cache",
        action="store_true",
        help="start every server and list live (the schema cache is refreshed, not read)",
    )
    prompt = command("prompt", "get one prompt filled in with arguments and print its messages")
    prompt.add_argument("prompt", metavar="NS/NAME")
    prompt.add_argument("arguments", nargs="?", default="{}", metavar="JSON", help="an object of text values")
    prompt.add_argument("--timeout", type=float, default=None, metavar="S")
    prompt.add_argument("--json", action="store_true", help="print the whole ToolResult as JSON")
    prompt.add_argument("--save", metavar="DIR", help="save images and audio to files in DIR")
    serve = command("serve", "serve every server as one MCP server (stdio or --http)")
    run = command("run", "the former name of serve: the same command")
    if serve_arguments:
        from actors.gateway import command as gateway_command  # noqa: PLC0415  (see _serve)

        gateway_command.add_arguments(serve)
        gateway_command.add_arguments(run)
    command("check", "validate a configuration and say what is wrong")
    _add_auth_commands(command)
    demo = commands.add_parser("demo", help="show the runtime at work on the built-in default configuration")
    demo.add_argument("--workspace", default=".", help="folder for the built-in tools")
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command; return its exit status."""
    out = out or sys.stdout
    words = list(sys.argv[1:] if argv is None else argv)
    # The command is the first word that is not an option: the gateway's arguments (and its
    # imports) are needed for `serve` and for the top-level help only.
    named = next((word for word in words if not word.startswith("-")), None)
    args = _parser(serve_arguments=named in (None, "serve", "run")).parse_args(words)
    handlers = {
        "tools": _tools,
        "call": _call,
        "resources": _resources,
        "read": _read,
        "prompts": _prompts,
        "prompt": _prompt,
        "run": _run,
        "serve": _serve,
        "check": _check,
        "demo": _demo,
        "login": _login,
        "logout": _logout,
        "status": _status,
    }
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


# ---- logins to remote servers (actors.mcp.auth) ------------------------------------------------


def _add_auth_commands(command: Callable[[str, str], argparse.ArgumentParser]) -> None:
    login_command = command("login", "log in to a remote server (OAuth): open the browser, store the tokens")
    login_command.add_argument("namespace", metavar="NS")
    login_command.add_argument(
        "--no-browser", action="store_true", help="only print the URL to open (in a browser on this machine)"
    )
    login_command.add_argument(
        "--timeout", type=float, default=300.0, metavar="S", help="how long to wait for the login"
    )
    command("logout", "forget the stored login of a remote server").add_argument("namespace", metavar="NS")
    command("status", "list the configured servers and whether each remote one has a login")


def _login(args: argparse.Namespace, out: TextIO) -> int:
    config, _ = resolve_config(args.config)
    server = _remote_server(config, args.namespace)
    if server is None:
        return 1

    def show(url: str) -> None:
        out.write(f"Open this URL to log in to {server.name}:\n  {url}\n")
        out.flush()

    # Deferred (as in _auth_of): the login machinery loads the SDK's auth and HTTP client.
    from actors.mcp.auth import AuthError, TokenStore, login  # noqa: PLC0415

    try:
        result = login(
            server, TokenStore(), open_browser=not args.no_browser, timeout=args.timeout, on_url=show
        )
    except AuthError as exc:
        print(_error_line("auth", str(exc)), file=sys.stderr)
        return 1
    asked = "" if result.authorization_url is not None else " (not asked: no login was needed)"
    out.write(f"{server.name}: auth: {result.status}{asked}\n")
    return 0 if result.status == "ok" else 1


def _logout(args: argparse.Namespace, out: TextIO) -> int:
    config, _ = resolve_config(args.config)
    server = _remote_server(config, args.namespace)
    if server is None:
        return 1
    from actors.mcp.auth import TokenStore, logout  # noqa: PLC0415  (see _auth_of)

    forgot = logout(server, TokenStore())
    out.write(f"{server.name}: logged out\n" if forgot else f"{server.name}: no login was stored\n")
    return 0


def _remote_server(config: RuntimeConfig, namespace: str) -> ServerConfig | None:
    """The remote server ``namespace``, or None after saying on stderr why there is none."""
    server = config.servers.get(namespace)
    if server is None:
        known = ", ".join(config.servers) or "none"
        print(_error_line("not_found", f"no server {namespace!r} (servers: {known})"), file=sys.stderr)
        return None
    if server.transport == "stdio":
        print(
            _error_line("validation", f"server {namespace!r} runs locally (stdio): it has no login"),
            file=sys.stderr,
        )
        return None
    return server


def _status(args: argparse.Namespace, out: TextIO) -> int:
    config, source = resolve_config(args.config)
    from actors.mcp.auth import TokenStore  # noqa: PLC0415  (see _auth_of)

    store = TokenStore()
    rows = [[s.name, s.transport, _auth_of(s, store) or "-"] for s in config.servers.values()]
    out.write(f"{source}\n" + _table(["server", "transport", "auth"], rows) + "\n")
    if store.problem:
        out.write(f"warning: the token store {store.path} cannot be read: {store.problem}\n")
    return 0


def _write_auth_lines(config: RuntimeConfig, out: TextIO) -> None:
    """``  NS: auth: ok / expired / needs login`` for each remote server, read from the token store."""
    from actors.mcp.auth import TokenStore  # noqa: PLC0415  (see _auth_of)

    store = TokenStore()
    for server in config.servers.values():
        auth = _auth_of(server, store)
        if auth is None:
            continue
        hint = f" (run `mcp-actors login {server.name}`)" if auth in ("expired", "needs login") else ""
        out.write(f"  {server.name}: auth: {auth}{hint}\n")
    if store.problem:
        out.write(f"warning: the token store {store.path} cannot be read: {store.problem}\n")


def _auth_of(server: ServerConfig, store: TokenStore) -> str | None:
    """A remote server's ``ok``, ``expired`` or ``needs login`` (read from ``store``, on the
    command's thread); ``header`` when its config sends its own credentials; None for stdio."""
    if server.transport == "stdio" or not server.url:
        return None
    if server.oauth is None and any(name.lower() == "authorization" for name in server.headers):
        return "header"
    # Deferred: the login machinery loads the SDK's auth and HTTP client (hundreds of ms), which
    # the commands that never log in (a cached listing above all) should not pay for.
    from actors.mcp.auth import auth_status  # noqa: PLC0415

    status: str = auth_status(server, store)
    return status
