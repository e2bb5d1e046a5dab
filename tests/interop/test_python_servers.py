"""``mcp-server-time`` and ``mcp-server-git`` (PyPI, on the Python SDK) over stdio, through the
Runtime and the registry actor, in both protocol eras.

What these servers showed us: both speak the handshake era and 2026-07-28. ``legacy`` gets
2025-11-25, ``auto`` discovers 2026-07-28 at once (no stall) and a ``2026-07-28`` pin works.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from actors import Runtime, ToolResult
from actors.mcp.sdk_transport import SDKTransport
from actors.runtime.messages import CallTool
from tests.interop.conftest import config, pypi_server

ERAS = {"legacy": "2025-11-25", "auto": "2026-07-28", "2026-07-28": "2026-07-28"}


def call(
    rt: Runtime, namespace: str, tool: str, arguments: dict[str, Any], timeout: float = 20
) -> ToolResult:
    message = CallTool(namespace=namespace, tool=tool, arguments=arguments, timeout=timeout)
    rt.registry.tell(message)
    result: ToolResult = message.reply.result(timeout=timeout + 5)
    return result


class AnsweredProbes:
    """Counts the health probes the server answered (`SDKTransport.probe` returning)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self.changed = threading.Condition()
        probe = SDKTransport.probe

        async def counted(transport: SDKTransport) -> None:
            await probe(transport)
            with self.changed:
                self.count += 1
                self.changed.notify_all()

        monkeypatch.setattr(SDKTransport, "probe", counted)

    def wait_for(self, count: int, timeout: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.count >= count, timeout)


@pytest.mark.parametrize("protocol", list(ERAS))
def test_time_server_in_each_era(protocol: str, monkeypatch: pytest.MonkeyPatch) -> None:
    probes = AnsweredProbes(monkeypatch)
    entry = {
        "command": pypi_server("mcp-server-time"),
        "args": ["--local-timezone", "UTC"],
        "protocol": protocol,
        "healthCheckInterval": 0.2,
    }
    with Runtime.start(config({"time": entry})) as rt:
        assert {spec.tool_name for spec in rt.list_tools("time")} == {"get_current_time", "convert_time"}
        status = rt.status("time")[0]
        assert status.protocol_version == ERAS[protocol], status

        now = call(rt, "time", "get_current_time", {"timezone": "Asia/Tokyo"})
        assert now.success, now
        assert now.output is not None
        assert now.output["structuredContent"]["timezone"] == "Asia/Tokyo"
        assert now.output["structuredContent"]["datetime"].endswith("+09:00")

        converted = call(
            rt,
            "time",
            "convert_time",
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Kolkata"},
        )
        assert converted.output is not None
        assert converted.output["structuredContent"]["target"]["datetime"].endswith("17:30:00+05:30")

        unknown = call(rt, "time", "get_current_time", {"timezone": "Mars/Olympus_Mons"})
        assert unknown.error_type == "server_error", unknown
        assert "Invalid timezone" in (unknown.error or "")
        assert call(rt, "time", "get_current_time", {}).error_type == "validation"

        # Health probes (ping, or server/discover on 2026-07-28) keep passing while it idles:
        # three more are answered (every 0.2 s; the bound is only for a runtime that never probes).
        answered = probes.count
        assert probes.wait_for(answered + 3, timeout=60), f"{probes.count - answered} probes answered"
        status = rt.status("time")[0]
        assert (status.state, status.health_check_failures, status.restarts) == ("running", 0, 0), status


@pytest.mark.parametrize("protocol", list(ERAS))
def test_git_server_in_each_era(protocol: str, git_repo: Path) -> None:
    entry = {
        "command": pypi_server("mcp-server-git"),
        "args": ["--repository", str(git_repo)],
        "protocol": protocol,
    }
    repo = str(git_repo)
    with Runtime.start(config({"git": entry})) as rt:
        tools = {spec.tool_name for spec in rt.list_tools("git")}
        assert {
            "git_status",
            "git_log",
            "git_add",
            "git_commit",
            "git_diff_unstaged",
            "git_create_branch",
        } <= tools
        assert rt.status("git")[0].protocol_version == ERAS[protocol]

        assert "nothing to commit" in (call(rt, "git", "git_status", {"repo_path": repo}).text or "")
        (git_repo / "README.md").write_text("hello\nworld\n")
        diff = call(rt, "git", "git_diff_unstaged", {"repo_path": repo})
        assert "+world" in (diff.text or ""), diff
        assert call(rt, "git", "git_add", {"repo_path": repo, "files": ["README.md"]}).success
        assert "+world" in (call(rt, "git", "git_diff_staged", {"repo_path": repo}).text or "")
        committed = call(rt, "git", "git_commit", {"repo_path": repo, "message": "second commit"})
        assert committed.success, committed
        log = call(rt, "git", "git_log", {"repo_path": repo, "max_count": 5})
        assert "second commit" in (log.text or "") and "first commit" in (log.text or ""), log
        assert call(rt, "git", "git_create_branch", {"repo_path": repo, "branch_name": "feature"}).success
        assert "feature" in (
            call(rt, "git", "git_branch", {"repo_path": repo, "branch_type": "local"}).text or ""
        )

        outside = call(rt, "git", "git_status", {"repo_path": str(git_repo.parent)})
        assert outside.error_type == "server_error", outside
        assert "outside the allowed repository" in (outside.error or "")
        assert call(rt, "git", "git_log", {"repo_path": repo, "max_count": "five"}).error_type == "validation"
        assert rt.status("git")[0].restarts == 0


def test_auto_is_not_taught_legacy_by_a_pinned_legacy_session() -> None:
    command = pypi_server("mcp-server-time")
    servers = {
        "pinned": {"command": command, "protocol": "legacy"},
        "auto": {"command": command, "protocol": "auto"},
    }
    with Runtime.start(config(servers)) as rt:
        assert rt.start_server("pinned").protocol_version == "2025-11-25"
        assert rt.start_server("auto").protocol_version == "2026-07-28"
