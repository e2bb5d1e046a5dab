"""``call``, ``read`` and ``prompt``: one request to one server, its answer printed.

Arguments are ``key=value`` words or one JSON object (`actors.cli.arguments`); with an ad-hoc
server (``--command``/``--url``) a bare name is that server's.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from actors.cli.arguments import ArgumentsError, needs_schema, parse_arguments
from actors.cli.output import print_result
from actors.cli.progress import watching
from actors.cli.startup import command_config, start_runtime
from actors.config import RuntimeConfig
from actors.runtime.schema_cache import SchemaCache
from actors.tools import ToolSpec

if TYPE_CHECKING:
    from actors.runtime import Runtime

__all__ = ["call_command", "prompt_command", "read_command"]

_USAGE = 2
"""The exit status of arguments that cannot be read (argparse's own for a usage error)."""


def call_command(args: argparse.Namespace, out: TextIO) -> int:
    config, _ = command_config(args)
    name = _qualified(args.tool, config, args)
    typed = needs_schema(args.arguments)
    # JSON alone is read before anything starts; key=value words wait for the tool's schema.
    arguments = None if typed else _read(args.arguments)
    if not typed and arguments is None:
        return _USAGE
    with start_runtime(config) as rt, watching(rt) as progress:
        if arguments is None:
            arguments = _read(args.arguments, _schema(rt, config, name, args.timeout))
            if arguments is None:
                return _USAGE
        result = rt.call_tool(
            name, arguments, timeout=args.timeout, progress=progress.update if progress else None
        )
    return print_result(result, args, out, "content")


def read_command(args: argparse.Namespace, out: TextIO) -> int:
    config, _ = command_config(args)
    namespace = args.namespace or _adhoc_namespace(config, args)
    if namespace is None:
        print(
            f"error: read needs the server and the URI (mcp-actors read NS URI): only {args.uri!r}",
            file=sys.stderr,
        )
        return _USAGE
    with start_runtime(config) as rt, watching(rt):
        result = rt.read_resource(namespace, args.uri, timeout=args.timeout)
    return print_result(result, args, out, "contents")


def prompt_command(args: argparse.Namespace, out: TextIO) -> int:
    arguments = _read(args.arguments, what="prompt arguments")
    if arguments is None:
        return _USAGE
    wrong = sorted(name for name, value in arguments.items() if not isinstance(value, str))
    if wrong:
        print(f"error: prompt arguments must be text: {', '.join(wrong)}", file=sys.stderr)
        return _USAGE
    config, _ = command_config(args)
    with start_runtime(config) as rt, watching(rt):
        result = rt.get_prompt(_qualified(args.prompt, config, args), arguments, timeout=args.timeout)
    return print_result(result, args, out, "messages")


def _read(
    words: list[str], schema: dict[str, Any] | None = None, what: str = "arguments"
) -> dict[str, Any] | None:
    """The arguments of ``words``, or None after saying on stderr what is wrong with them."""
    try:
        return parse_arguments(words, schema, what)
    except ArgumentsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None


def _schema(rt: Runtime, config: RuntimeConfig, name: str, timeout: float | None) -> dict[str, Any] | None:
    """The input schema of tool ``name``: from the schema cache if it knows the server (no
    start), else from the server's list; None for a tool that is not there (the call says so)."""
    namespace = name.partition("/")[0]
    server = config.servers.get(namespace)
    known = SchemaCache().load(server) if server is not None else None
    tools: Sequence[ToolSpec] = known.tools if known is not None and known.tools is not None else ()
    if not any(tool.name == name for tool in tools):
        tools = rt.list_tools(namespace, timeout=timeout or 60.0)
    return next((dict(tool.input_schema) for tool in tools if tool.name == name), None)


def _qualified(name: str, config: RuntimeConfig, args: argparse.Namespace) -> str:
    """``name``, or ``NS/name`` for a bare name given to the ad-hoc server ``NS``."""
    namespace = _adhoc_namespace(config, args)
    return f"{namespace}/{name}" if namespace is not None and "/" not in name else name


def _adhoc_namespace(config: RuntimeConfig, args: argparse.Namespace) -> str | None:
    """The namespace of the server ``--command`` or ``--url`` names; None without one."""
    if getattr(args, "server_command", None) is None and getattr(args, "url", None) is None:
        return None
    return next(iter(config.servers))
