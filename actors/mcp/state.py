"""Where the user's state lives (the OAuth token store): light enough for any layer to ask.

`actors.mcp.auth` keeps the tokens there; the schema cache names that store among a remote
server's credentials (`actors.runtime.schema_cache`). Standard library only: `actors.mcp.auth`
imports the SDK, and knowing where its file is must not.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

__all__ = ["STATE_DIR_ENV", "TOKEN_FILE_NAME", "default_token_file", "state_dir"]

STATE_DIR_ENV: Final = "MCP_ACTORS_STATE_DIR"
"""The environment variable that moves the state folder (tests, sandboxes)."""

TOKEN_FILE_NAME: Final = "tokens.json"


def state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The folder for this user's state: ``$MCP_ACTORS_STATE_DIR``, else
    ``$XDG_STATE_HOME/mcp-actors``, else ``~/.local/state/mcp-actors``."""
    env = os.environ if environ is None else environ
    if env.get(STATE_DIR_ENV):
        return Path(env[STATE_DIR_ENV]).expanduser()
    base = env.get("XDG_STATE_HOME") or str(Path("~/.local/state").expanduser())
    return Path(base).expanduser() / "mcp-actors"


def default_token_file(environ: Mapping[str, str] | None = None) -> Path:
    """The file of the default `actors.mcp.auth.TokenStore`."""
    return state_dir(environ) / TOKEN_FILE_NAME
