"""The ``mcp-actors`` command: list and call tools, list and read resources, list and get
prompts, run and check configurations, log in to remote servers, the demo.

This module is the command line: its parser (``--help`` prints the first line above) and
`main`, which hands the parsed arguments to the command's own module.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from actors.cli.auth import add_auth_commands, login_command, logout_command, status_command
from actors.cli.calls import call_command, prompt_command, read_command
from actors.cli.check import check_command
from actors.cli.demo import demo_command
from actors.cli.listing import prompts_command, resources_command, tools_command
from actors.cli.output import error_line
from actors.cli.pins import add_pin_commands, approve_command, pins_command
from actors.cli.serve import run_command, serve_command
from actors.cli.startup import ENV_CONFIG, config_file
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
        from actors.gateway import command as gateway_command  # noqa: PLC0415  (see actors.cli.serve)

        gateway_command.add_arguments(serve)
        gateway_command.add_arguments(run)
    command("check", "validate a configuration and say what is wrong")
    add_auth_commands(command)
    add_pin_commands(command)
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


def _version() -> str:
    try:
        return importlib.metadata.version("mcp-actors")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"
