"""What every command starts from: the configuration it uses and, for a command that runs
servers, a runtime of its own.

The configuration is ``--config FILE``, else ``$MCP_ACTORS_CONFIG``, else ``./mcp.json``, else
the built-in default (the demo server and the built-in tools), so every command works out of
the box; all but ``serve``, which has no default (`actors.cli.serve` says why). A command
that takes ``--command`` or ``--url`` runs that one server instead (`actors.cli.adhoc`).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from actors.cli.adhoc import adhoc_entry
from actors.config import ConfigError, RuntimeConfig, load_config
from actors.demo import default_config
from actors.mcp.config import ConfigProblem
from actors.pins import FilePinStore
from actors.runtime.schema_cache import SchemaCache

if TYPE_CHECKING:
    from actors.runtime import Runtime

__all__ = ["ENV_CONFIG", "command_config", "config_file", "resolve_config", "start_runtime"]

ENV_CONFIG = "MCP_ACTORS_CONFIG"


def config_file(path: str | None) -> str | None:
    """The configuration file a command uses (``path``, else ``$MCP_ACTORS_CONFIG``, else
    ``./mcp.json``), or None when there is none and the built-in default would be used."""
    chosen = path or os.environ.get(ENV_CONFIG)
    if chosen:
        return chosen
    return "mcp.json" if Path("mcp.json").is_file() else None


def resolve_config(path: str | None) -> tuple[RuntimeConfig, str]:
    """The configuration to use and where it came from (a path, or ``built-in default``)."""
    chosen = config_file(path)
    if chosen is not None:
        return load_config(chosen), chosen
    return load_config(default_config()), "built-in default"


def command_config(args: argparse.Namespace) -> tuple[RuntimeConfig, str]:
    """The configuration a command uses: its ad-hoc server (``--command`` or ``--url``,
    `actors.cli.adhoc`) if it names one, else `resolve_config` of its ``--config``."""
    command, url = getattr(args, "server_command", None), getattr(args, "url", None)
    if command is None and url is None:
        return resolve_config(getattr(args, "config", None))
    try:
        name, entry = adhoc_entry(command, url, getattr(args, "name", None))
    except ValueError as exc:
        problem = ConfigProblem(server=None, key=None, message=str(exc))
        raise ConfigError([problem], "the command line") from None
    config = {"mcpServers": {name: entry}, "builtin": {"enabled": False}}
    return load_config(config), f"the command line ({name})"


def start_runtime(config: RuntimeConfig, cache: SchemaCache | None = None) -> Runtime:
    """A runtime for one command (SIGTERM unwinds it), with the schema cache if given, and the
    pins of the state folder (`actors.pins`): what a server holds is held for every command."""
    # Deferred: the actors, the event loop and OpenTelemetry load only for a command that runs
    # servers (this is the command's own thread), not for `--help`, `check` or a cached listing.
    from actors.runtime import Runtime  # noqa: PLC0415

    return Runtime.start(config, handle_signals=True, schema_cache=cache, pins=FilePinStore())
