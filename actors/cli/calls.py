"""``call``, ``read`` and ``prompt``: one request to one server, its answer printed."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from actors.cli.output import print_result
from actors.cli.progress import ProgressBar
from actors.cli.startup import resolve_config, start_runtime

__all__ = ["call_command", "prompt_command", "read_command"]


def call_command(args: argparse.Namespace, out: TextIO) -> int:
    arguments = _json_object(args.arguments, "arguments")
    if arguments is None:
        return 2
    config, _ = resolve_config(args.config)
    # Progress is drawn for a person at a terminal; piped or logged, it would be noise.
    bar = ProgressBar(sys.stderr) if sys.stderr.isatty() else None
    with start_runtime(config) as rt:
        try:
            result = rt.call_tool(
                args.tool, arguments, timeout=args.timeout, progress=bar.update if bar else None
            )
        finally:
            if bar is not None:
                bar.close()
    return print_result(result, args, out, "content")


def read_command(args: argparse.Namespace, out: TextIO) -> int:
    config, _ = resolve_config(args.config)
    with start_runtime(config) as rt:
        result = rt.read_resource(args.namespace, args.uri, timeout=args.timeout)
    return print_result(result, args, out, "contents")


def prompt_command(args: argparse.Namespace, out: TextIO) -> int:
    arguments = _json_object(args.arguments, "prompt arguments")
    if arguments is None:
        return 2
    wrong = sorted(name for name, value in arguments.items() if not isinstance(value, str))
    if wrong:
        print(f"error: prompt arguments must be text: {', '.join(wrong)}", file=sys.stderr)
        return 2
    config, _ = resolve_config(args.config)
    with start_runtime(config) as rt:
        result = rt.get_prompt(args.prompt, arguments, timeout=args.timeout)
    return print_result(result, args, out, "messages")


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
