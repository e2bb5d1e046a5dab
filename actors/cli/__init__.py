"""The ``mcp-actors`` command: list and call tools, list and read resources, list and get
prompts, run and check configurations, log in to remote servers, the demo.

The configuration is ``--config FILE``, else ``$MCP_ACTORS_CONFIG``, else ``./mcp.json``, else
the built-in default (the demo server and the built-in tools), so every command but ``serve``
works out of the box (``serve`` refuses: `actors.cli.serve`). Claude Desktop, Cursor and VS Code
files work unchanged.

One module per part: `parser` (the command line's grammar and help), `command` (`main`),
`startup` (the configuration a command uses and the runtime it starts), `adhoc` (a server
named by ``--command``/``--url``), `listing` (``tools``, ``resources``, ``prompts``), `calls`
(``call``, ``read``, ``prompt``), `arguments` (``key=value`` words typed by a schema), `output`
(results, error lines), `tables` (Rich tables), `progress` (Rich progress on a terminal),
`check`, `auth` (``login``, ``logout``, ``status``), `pins` (``approve``, ``pins
held|write|check``), `serve` (``serve``, ``run``) and `demo`. A command
that runs no server imports no actor, event loop or SDK.
"""

from actors.cli.command import main
from actors.cli.output import status_table
from actors.cli.progress import TerminalProgress
from actors.cli.startup import resolve_config

__all__ = ["TerminalProgress", "main", "resolve_config", "status_table"]
