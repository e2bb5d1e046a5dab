"""Every command here keeps its schema cache in the test's own folder, not the user's."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def own_schema_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "schema-cache"
    monkeypatch.setenv("MCP_ACTORS_CACHE_DIR", str(folder))
    return folder
