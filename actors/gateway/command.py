"""``mcp-actors serve``: the gateway from the command line.

A host's config entry ``{"command": "mcp-actors", "args": ["serve", "--config", "..."]}``
starts it over stdio (the default); ``--http HOST:PORT`` serves Streamable HTTP instead.
Nothing but MCP ever goes to stdout: logs go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import TextIO

import anyio

from actors.config import RuntimeConfig
from actors.gateway.gateway import Gateway
from actors.gateway.serve import HTTPRefused, is_loopback, serve_http, serve_stdio
from actors.runtime.schema_cache import SchemaCache

__all__ = ["ENV_TOKEN", "add_arguments", "serve"]

logger = logging.getLogger(__name__)

ENV_TOKEN = "MCP_ACTORS_TOKEN"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``serve`` (beside ``--config``)."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--stdio", action="store_true", help="serve one client on stdin/stdout (the default)")
    where.add_argument("--http", metavar="HOST:PORT", help="serve Streamable HTTP on HOST:PORT (path /mcp)")
    parser.add_argument(
        "--token-file", metavar="FILE", help=f"the bearer token clients must send (default: ${ENV_TOKEN})"
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="do not keep what servers list on disk (the schema cache)"
    )
    parser.add_argument("--log-level", default="WARNING", help="log level on stderr (default WARNING)")


def _address(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--http wants HOST:PORT, got {value!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def _token(path: str | None) -> str | None:
    if path:
        return Path(path).read_text(encoding="utf-8").strip() or None
    return os.environ.get(ENV_TOKEN) or None


def serve(args: argparse.Namespace, config: RuntimeConfig, err: TextIO | None = None) -> int:
    """Run the gateway until the client goes away (stdio) or a signal (HTTP); an exit status."""
    err = err or sys.stderr
    logging.basicConfig(
        stream=err, level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s"
    )
    cache = None if args.no_cache else SchemaCache()
    try:
        address = _address(args.http) if args.http else None
        token = _token(args.token_file)
        if address is not None and not is_loopback(address[0]) and not token:
            raise HTTPRefused(
                f"serving on {address[0]} (not loopback) needs a bearer token: "
                f"set ${ENV_TOKEN} or --token-file"
            )
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=err)
        return 2
    with Gateway(config, schema_cache=cache) as gateway:
        try:
            if address is None:
                anyio.run(serve_stdio, gateway)
            else:
                anyio.run(serve_http, gateway, address[0], address[1], token)
        except KeyboardInterrupt:
            pass
    return 0
