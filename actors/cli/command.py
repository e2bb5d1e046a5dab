"""`main`: the ``mcp-actors`` command, which hands its parsed arguments (`actors.cli.parser`)
to the command's own module, and turns what stops a command into its exit status.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from actors.cli.auth import login_command, logout_command, status_command
from actors.cli.calls import call_command, prompt_command, read_command
from actors.cli.check import check_command
from actors.cli.demo import demo_command
from actors.cli.listing import prompts_command, resources_command, tools_command
from actors.cli.output import error_line
from actors.cli.parser import build_parser
from actors.cli.pins import approve_command, pins_command
from actors.cli.serve import run_command, serve_command
from actors.cli.skills import skills_command
from actors.cli.startup import config_file
from actors.config import ConfigError
from actors.mcp.served import serving
from actors.tools import ToolError

__all__ = ["main"]

# Each command's function: its arguments and the stream for its output in, its exit status out.
_COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO], int]] = {
    "tools": tools_command,
    "call": call_command,
    "resources": resources_command,
    "read": read_command,
    "prompts": prompts_command,
    "prompt": prompt_command,
    "skills": skills_command,
    "run": run_command,
    "serve": serve_command,
    "check": check_command,
    "demo": demo_command,
    "login": login_command,
    "logout": logout_command,
    "status": status_command,
    "approve": approve_command,
    "pins": pins_command,
}


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command; return its exit status."""
    out = out or sys.stdout
    words = list(sys.argv[1:] if argv is None else argv)
    # The command is the first word that is not an option: the gateway's arguments (and its
    # imports) are needed for `serve` and for the top-level help only.
    named = next((word for word in words if not word.startswith("-")), None)
    args = build_parser(serve_arguments=named in (None, "serve", "run")).parse_args(words)
    # The servers a command starts know which file it serves (`actors.mcp.served`); `serve`
    # first checks that no process up the chain serves it already.
    marked = config_file(args.config) if "config" in args and args.command not in ("serve", "run") else None
    try:
        with serving(marked):
            return _COMMANDS[args.command](args, out)
    except KeyboardInterrupt:
        # Ctrl-C: the runtime's `with` block stopped its servers on the way out; nothing to add.
        return 130
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ToolError as exc:
        # A request to the runtime itself that got no answer (listing, status).
        print(error_line(exc.error_type, f"{exc.tool_name}: {exc.details}"), file=sys.stderr)
        return 1
