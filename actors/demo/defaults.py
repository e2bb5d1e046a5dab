"""The built-in default configuration: the demo server plus the built-in tools."""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["default_config"]


def default_config(workspace: str = ".") -> dict[str, Any]:
    """An ``mcpServers`` configuration that needs nothing but this package."""
    return {
        "mcpServers": {
            "demo": {
                "command": sys.executable,
                "args": ["-m", "actors.demo.server"],
                "idleTimeout": 300,
                "healthCheckInterval": 10,
                "restartBackoff": 0.2,
            },
        },
        "builtin": {"enabled": True, "workspace": workspace},
    }
