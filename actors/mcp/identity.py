"""`identity_key`: what makes two configurations the same server, as a short digest.

How the server is reached (transport, command, arguments, the names of its environment
variables, folder, URL) and nothing secret: values of the environment are left out. The pins
(`actors.pins.pin_key`) and the schema cache (`SchemaCache.key`, which adds the tool filter)
key their entries by it, so the two stay the same for the same server.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from actors.mcp.config import ServerConfig

__all__ = ["identity_key"]


def identity_key(config: ServerConfig, **more: Any) -> str:
    """24 hex digits of SHA-256 over the server's identity, with ``more`` (JSON) beside it."""
    identity = {
        "transport": config.transport,
        "command": config.command,
        "args": list(config.args),
        "env": sorted(config.env),
        "cwd": config.cwd,
        "url": config.url,
        **more,
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:24]
