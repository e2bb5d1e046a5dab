"""The grammar of the ``mcp-actors`` command: its commands, their arguments and their help.

Every option says what it does and its default; ``mcp-actors --help`` ends with examples.
"""

from __future__ import annotations

import argparse
import importlib.metadata
from collections.abc import Callable

from actors.cli.auth import add_auth_commands
from actors.cli.pins import add_pin_commands
from actors.cli.startup import ENV_CONFIG

__all__ = ["build_parser"]

_Command = Callable[..., argparse.ArgumentParser]
"""``command(name, help, adhoc=False)``: a command's parser, with its ``--config``."""

DESCRIPTION = """\
Run MCP servers as actors: list and call their tools, resources and prompts, check a
configuration, and serve every server as one MCP server to a host."""

EXAMPLES = """\
The configuration is --config FILE, else $MCP_ACTORS_CONFIG, else ./mcp.json, else the
built-in default (a demo server and the built-in tools); serve needs a file.

examples:
  mcp-actors tools                              every tool, from the schema cache when it can
  mcp-actors tools gh                           the tools of server gh, with their arguments
  mcp-actors call gh/list_repos owner=me        call a tool (key=value, or one JSON object)
  mcp-actors call fx/add '{"a": 1, "b": 2}'
  mcp-actors tools --command "uvx mcp-server-fetch"   a server without a config file
  mcp-actors call fetch url=https://example.com --command "uvx mcp-server-fetch"
  mcp-actors skills                             every skill the servers serve, by origin
  mcp-actors skills load gh pdf-processing      a skill's SKILL.md, verified against its entry
  mcp-actors check --json                       what is wrong with the configuration
  mcp-actors serve --config mcp.json            what a host's config entry runs

Each command's own options: mcp-actors COMMAND --help. Docs: docs/cli.md.
"""

_LIST_TIMEOUT = "seconds to wait for the servers' lists (default: %(default)s)"
_ANSWER_TIMEOUT = "seconds to wait for the answer (default: the server's callTimeout, 60 unless set)"
_NO_CACHE = "start every server and list live (the schema cache is refreshed, not read)"
_JSON_LIST = "machine-readable output (JSON, with MCP's field names)"
_JSON_RESULT = "print the whole ToolResult as JSON"


def build_parser(serve_arguments: bool = True) -> argparse.ArgumentParser:
    """The command line (``serve``'s own options only if ``serve_arguments``: they import the
    gateway)."""
    parser = argparse.ArgumentParser(
        prog="mcp-actors",
        description=DESCRIPTION,
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"mcp-actors {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str, *, adhoc: bool = False) -> argparse.ArgumentParser:
        """A command with ``--config``; with ``adhoc``, ``--command``/``--url`` in its place."""
        sub = commands.add_parser(name, help=help_text, description=help_text)
        source = sub.add_mutually_exclusive_group() if adhoc else sub
        source.add_argument(
            "--config", metavar="FILE", help=f"config file (default: ${ENV_CONFIG}, ./mcp.json, built-in)"
        )
        if adhoc:
            source.add_argument(
                "--command",
                dest="server_command",
                metavar="CMD",
                help='one stdio server instead of a config file, e.g. "npx -y @scope/server"',
            )
            source.add_argument(
                "--url", metavar="URL", help="one Streamable HTTP server instead of a config file"
            )
            sub.add_argument(
                "--name",
                metavar="NS",
                help="the namespace of the --command or --url server (default: from its package or host)",
            )
        return sub

    _lists(command)
    _requests(command)
    _skills(command)
    serve = command("serve", "serve every server as one MCP server (stdio or --http)")
    run = command("run", "the former name of serve: the same command")
    if serve_arguments:
        from actors.gateway import command as gateway_command  # noqa: PLC0415  (see actors.cli.serve)

        gateway_command.add_arguments(serve)
        gateway_command.add_arguments(run)
    check = command("check", "validate a configuration and say what is wrong", adhoc=True)
    check.add_argument("--json", action="store_true", help="machine-readable output")
    add_auth_commands(command)
    add_pin_commands(command)
    demo = commands.add_parser("demo", help="show the runtime at work on the built-in default configuration")
    demo.add_argument("--workspace", default=".", help="folder for the built-in tools (default: .)")
    return parser


_LISTS = {
    "tools": "list the namespaced tools with their arguments and capabilities",
    "resources": "list the resources and resource templates of every server, or of NS",
    "prompts": "list the prompts of every server, or of NS, with their arguments",
}


def _lists(command: _Command) -> None:
    """``tools``, ``resources`` and ``prompts``: one set of options."""
    for name, help_text in _LISTS.items():
        listing = command(name, help_text, adhoc=True)
        listing.add_argument("namespace", nargs="?", metavar="NS", help=f"only the {name} of this server")
        listing.add_argument("--json", action="store_true", help=_JSON_LIST)
        listing.add_argument("--timeout", type=float, default=60.0, metavar="S", help=_LIST_TIMEOUT)
        listing.add_argument("--no-cache", action="store_true", help=_NO_CACHE)


def _requests(command: _Command) -> None:
    """``call``, ``read`` and ``prompt``."""
    call = command("call", "call one tool and print its result", adhoc=True)
    call.add_argument("tool", metavar="NS/TOOL", help="the tool (just TOOL with --command or --url)")
    call.add_argument(
        "arguments",
        nargs="*",
        default=[],  # else argparse calls the words required in its usage error
        metavar="KEY=VALUE",
        help="the arguments: key=value words typed by the tool's schema, or one JSON object",
    )
    call.add_argument("--timeout", type=float, default=None, metavar="S", help=_ANSWER_TIMEOUT)
    call.add_argument("--json", action="store_true", help=_JSON_RESULT)
    call.add_argument("--save", metavar="DIR", help="save images, audio and binary resources to files in DIR")

    read = command("read", "read one resource and print its contents", adhoc=True)
    read.add_argument(
        "namespace", nargs="?", metavar="NS", help="the server (not needed with --command or --url)"
    )
    read.add_argument("uri", metavar="URI", help="the resource's URI")
    read.add_argument("--timeout", type=float, default=None, metavar="S", help=_ANSWER_TIMEOUT)
    read.add_argument("--json", action="store_true", help=_JSON_RESULT)
    read.add_argument("--save", metavar="DIR", help="save binary contents to files in DIR")

    prompt = command("prompt", "get one prompt filled in with arguments and print its messages", adhoc=True)
    prompt.add_argument("prompt", metavar="NS/NAME", help="the prompt (just NAME with --command or --url)")
    prompt.add_argument(
        "arguments",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="its arguments: key=value words, or one JSON object",
    )
    prompt.add_argument("--timeout", type=float, default=None, metavar="S", help=_ANSWER_TIMEOUT)
    prompt.add_argument("--json", action="store_true", help=_JSON_RESULT)
    prompt.add_argument("--save", metavar="DIR", help="save images and audio to files in DIR")


def _skills(command: _Command) -> None:
    """``skills [NS]``, ``skills load NS SKILL`` and ``skills read NS SKILL FILE``."""
    skills = command(
        "skills",
        "list the skills the servers serve; load one (its verified SKILL.md) or read one of its files",
        adhoc=True,
    )
    skills.usage = (
        "%(prog)s [NS] [SOURCE] [--json] [--timeout S]\n"
        "       %(prog)s load [NS] SKILL [SOURCE] [--json] [--timeout S]\n"
        "       %(prog)s read [NS] SKILL FILE [SOURCE] [--json] [--timeout S] [--save DIR]\n"
        "SOURCE: --config FILE | --command CMD | --url URL [--name NS]"
    )
    skills.add_argument(
        "words",
        nargs="*",
        default=[],
        metavar="WORD",
        help="NS: only the skills of this server; load: print a skill's SKILL.md, verified; read:"
        " print one file of a skill (a path in it, or a URI), verified. SKILL: the skill's URI,"
        " its path or its name. NS may be left out with --command or --url",
    )
    skills.add_argument("--json", action="store_true", help=f"{_JSON_LIST}; load and read: {_JSON_RESULT}")
    skills.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="S",
        help="seconds to wait for each answer (default: 60 for a listing, else the server's callTimeout)",
    )
    skills.add_argument("--save", metavar="DIR", help="read: save a binary file to DIR")


def _version() -> str:
    try:
        return importlib.metadata.version("mcp-actors")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"
