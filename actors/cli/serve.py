"""``serve`` (and its former name ``run``): every server served as one MCP server by the
gateway, which loads (the SDK's server side, Starlette, uvicorn) only to serve."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from actors.cli.startup import resolve_config

__all__ = ["run_command", "serve_command"]


def run_command(args: argparse.Namespace, out: TextIO) -> int:
    # `run` used to show a status table and serve nothing; it serves now, under its new name.
    print("mcp-actors: `run` is `serve` now; see `mcp-actors serve --help`", file=sys.stderr)
    return serve_command(args, out)


def serve_command(args: argparse.Namespace, out: TextIO) -> int:
    config, _ = resolve_config(args.config)
    # Deferred: the gateway loads only to serve (see the module's docstring).
    from actors.gateway import command as gateway_command  # noqa: PLC0415

    return gateway_command.serve(args, config)
