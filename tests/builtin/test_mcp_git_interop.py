"""Interop: the real ``mcp-server-git``, listed through the official SDK, gets repository slots."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from actors.mcp.slots import infer_resource_slots

SERVER = Path(sys.executable).parent / "mcp-server-git"


async def _list_tools(repo: Path) -> list[Any]:
    params = StdioServerParameters(command=str(SERVER), args=["--repository", str(repo)])
    # "legacy" skips the discovery probe, which this server would make us wait out.
    async with Client(params, mode="legacy") as client:
        with anyio.fail_after(30):
            listed = await client.list_tools()
    return list(listed.tools)


@pytest.mark.skipif(
    not SERVER.exists() or shutil.which("git") is None, reason="mcp-server-git or git missing"
)
def test_mcp_server_git_tools_get_a_repository_slot(repo: Path) -> None:
    tools = anyio.run(_list_tools, repo)
    with_repo_path = [t for t in tools if "repo_path" in (t.input_schema or {}).get("properties", {})]
    assert len(with_repo_path) >= 5, [t.name for t in tools]
    assert {"git_status", "git_log", "git_commit"} <= {t.name for t in with_repo_path}
    for tool in with_repo_path:
        slots = {s.name: s for s in infer_resource_slots(tool.input_schema)}
        repository = slots["repository"]
        assert (repository.resource_type, repository.access, repository.binding, repository.parameter) == (
            "git-checkout",
            "read_write",
            "contextual",
            "repo_path",
        )


@pytest.mark.skipif(
    not SERVER.exists() or shutil.which("git") is None, reason="mcp-server-git or git missing"
)
def test_mcp_server_git_registered_through_the_adapter_carries_repository_slots(repo: Path) -> None:
    from actors.mcp.config import ServerConfig
    from actors.testing import BlockingAdapter
    from actors.tools import ToolRegistry

    config = ServerConfig(
        name="git", command=str(SERVER), args=("--repository", str(repo)), protocol="legacy"
    )
    adapter = BlockingAdapter(config)
    registry = ToolRegistry()
    try:
        adapter.connect(timeout=30)
        specs = adapter.register(registry, "git")
    finally:
        adapter.disconnect()
    status = registry.get("git/git_status")
    assert status is not None
    assert status.source == "mcp"
    assert [(s.name, s.parameter) for s in status.resource_slots] == [("repository", "repo_path")]
    assert status.capabilities.read_only
    assert registry.get("git/git_commit") is not None
    assert registry.get("git/git_commit").capabilities.writes  # type: ignore[union-attr]
    assert sum(1 for s in specs if any(slot.name == "repository" for slot in s.resource_slots)) >= 5
