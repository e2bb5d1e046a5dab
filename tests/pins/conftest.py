"""The drifting server (tests/servers/drifting_server.py) as a runtime's server, and its pins."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from actors.pins import FilePinStore
from tests.runtime.conftest import stdio_server

NS = "dr"


_SAID = {
    "description": "Echo the text.",
    "read_only": True,
    "prompt": "Greet someone.",
    "template": "A note.",
}


def drifting(**saying: Any) -> dict[str, Any]:
    """An entry of the drifting server saying ``saying`` (``description="..."``, ``read_only=False``
    ...: its ``DRIFT_*`` variables; ``file=path``: read what it says from that file instead).

    Every entry sets the same variables (their values differ): the names of a server's
    environment variables are part of what makes it the same server (`actors.pins.pin_key`)."""
    said = {**_SAID, "extra": "", "file": "", **saying}
    env = {
        f"DRIFT_{key.upper()}": str(value).lower() if isinstance(value, bool) else str(value)
        for key, value in said.items()
    }
    return stdio_server("drifting_server", env=env)


def config(entry: dict[str, Any], **server: Any) -> dict[str, Any]:
    return {"mcpServers": {NS: {**entry, **server}}, "builtin": {"enabled": False}}


@pytest.fixture
def store(tmp_path: Path) -> FilePinStore:
    return FilePinStore(tmp_path / "pins")
