"""``serve`` (and its former name ``run``): every server served as one MCP server by the
gateway, which loads (the SDK's server side, Starlette, uvicorn) only to serve.

Unlike the other commands, ``serve`` has no built-in default: without a configuration file it
refuses (exit 2). A host entry ``{"command": "mcp-actors", "args": ["serve"]}`` that names no
file is a mistake, and the host, not the user, picks the folder it runs in (often ``/`` or the
home folder): the built-in default would give the model tools that write files and commit
there, and a harmless stand-in (the demo server alone) would hide the mistake behind a
connection that works. Either way one line on stderr, never stdout (the MCP stream of stdio),
says which file is served or why nothing is.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TextIO

from actors.cli.startup import ENV_CONFIG, config_file
from actors.config import load_config
from actors.mcp.served import served, serving

__all__ = ["run_command", "serve_command"]


def run_command(args: argparse.Namespace, out: TextIO) -> int:
    # `run` used to show a status table and serve nothing; it serves now, under its new name.
    print("mcp-actors: `run` is `serve` now; see `mcp-actors serve --help`", file=sys.stderr)
    return serve_command(args, out)


def serve_command(args: argparse.Namespace, out: TextIO) -> int:
    path = config_file(args.config)
    if path is None:
        print(
            f"error: no configuration to serve: pass --config FILE, set ${ENV_CONFIG} or put an mcp.json"
            f" in {os.getcwd()} (serve has no built-in default: its tools would write files here)",
            file=sys.stderr,
        )
        return 2
    if os.path.realpath(path) in served():
        # Started, through however many steps, by an mcp-actors that serves this same file: each
        # gateway would start the next (`actors.mcp.served`).
        print(
            f"error: {Path(path).resolve()} is already served by the mcp-actors that started this one"
            " (a config that serves itself, through a script or another file): not serving it again",
            file=sys.stderr,
        )
        return 2
    config = load_config(path)
    print(f"mcp-actors serve: serving {Path(path).resolve()}", file=sys.stderr)
    # Deferred: the gateway loads only to serve (see the module's docstring).
    from actors.gateway import command as gateway_command  # noqa: PLC0415

    with serving(path):
        return gateway_command.serve(args, config)
