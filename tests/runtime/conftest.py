"""Configurations of real MCP servers (the SDK fixture servers in tests/servers) for runtime tests."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def stdio_server(module: str = "fixture_server", *args: str, **lifecycle: Any) -> dict[str, Any]:
    """An ``mcpServers`` entry that runs ``tests/servers/<module>.py`` over stdio."""
    return {
        "command": sys.executable,
        "args": ["-m", f"tests.servers.{module}", *args],
        "cwd": str(ROOT),
        **lifecycle,
    }


def config(servers: dict[str, dict[str, Any]], **top: Any) -> dict[str, Any]:
    return {"mcpServers": servers, "builtin": {"enabled": False}, **top}


@pytest.fixture
def marker_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "markers"
    folder.mkdir()
    return folder
