"""What the commands print: the servers' status table, a tool's (or a read's, or a prompt's)
result, and the one line that says an error.

Errors read ``error: <error_type>: <message>``, the message without a label that repeats the
type, and with its seconds rounded as the runtime rounds them.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from actors.cli.tables import table
from actors.mcp.content import ContentText
from actors.tools import ToolResult, duration_text, error_label

if TYPE_CHECKING:
    from actors.runtime import ServerStatus

__all__ = [
    "error_line",
    "failure",
    "first_line",
    "print_result",
    "readable",
    "status_table",
]

# A number of seconds as the runtime writes it (``0.25s``, ``30.250000000000004 s``).
_SECONDS = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?) ?s\b")


def status_table(statuses: Sequence[ServerStatus]) -> str:
    """Servers as a table: state, pid, restarts, calls, in flight, last error."""
    return table(
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
                readable(s.last_error or "")[:60],
            ]
            for s in statuses
        ],
    )


def first_line(text: str | None) -> str:
    """A description's first line, cut for a table column."""
    return (text or "").strip().split("\n")[0][:70]


def print_result(result: ToolResult, args: argparse.Namespace, out: TextIO, field: str) -> int:
    """Print a result: as JSON with ``--json``; else the lines of its ``field`` (``content``,
    ``contents`` or ``messages``), or the classified error on stderr. The exit status."""
    if args.json:
        out.write(result.model_dump_json(indent=2) + "\n")
        return 0 if result.success else 1
    if not result.success:
        print(error_line(result.error_type or "execution", result.error or ""), file=sys.stderr)
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


def error_line(error_type: str, message: str) -> str:
    """``error: <error_type>: <message>``: what a command prints on stderr when it fails."""
    return f"error: {failure(error_type, message)}"


def failure(error_type: str, message: str) -> str:
    """``<error_type>: <message>``, the message without a label that repeats the type."""
    labels = {f"{error_label(error_type)}:", f"{error_type}:"}
    text = message.strip()
    while prefix := next((p for p in labels if text.startswith(p)), None):
        text = text.removeprefix(prefix).lstrip()
    return f"{error_type}: {readable(text)}"


def readable(text: str) -> str:
    """``text`` with its seconds rounded as the runtime rounds them: ``0.25 s``, not ``0.2500000001s``."""
    return _SECONDS.sub(lambda match: duration_text(float(match.group(1))), text)
