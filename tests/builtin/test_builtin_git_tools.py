"""The four git tools on a real repository made in tmp_path."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from actors.builtin import BuiltinAdapter
from actors.tools import ErrorType, ToolRegistry, ToolResult, ToolRunner

from .conftest import Call, git


def ok(result: ToolResult) -> dict[str, Any]:
    assert result.success, result.error
    assert result.output is not None
    return result.output


def _runner_for(adapter: BuiltinAdapter) -> Call:
    registry = ToolRegistry()
    adapter.register(registry)
    runner = ToolRunner(registry)
    return lambda tool, **inputs: runner.execute(f"builtin/{tool}", inputs)


GIT_CALLS = [
    ("git-status", {}),
    ("git-diff", {}),
    ("git-log", {}),
    ("git-commit", {"message": "m", "all": True}),
]


@pytest.mark.parametrize(("tool", "inputs"), GIT_CALLS)
def test_not_a_repository_is_a_clear_error(
    call: Call, workspace: Path, tool: str, inputs: dict[str, Any]
) -> None:
    result = call(tool, **inputs)
    assert not result.success
    assert result.error_type == ErrorType.EXECUTION
    assert "is not a git repository" in (result.error or "")


@pytest.mark.parametrize(("tool", "inputs"), GIT_CALLS)
def test_an_enclosing_repository_is_not_used(tmp_path: Path, tool: str, inputs: dict[str, Any]) -> None:
    outer = tmp_path / "outer"
    (outer / "ws").mkdir(parents=True)
    git(outer, "init", "--quiet")
    (outer / "ws" / "f.txt").write_text("x")
    call = _runner_for(BuiltinAdapter(outer / "ws"))
    result = call(tool, **inputs)
    assert result.error_type == ErrorType.EXECUTION
    assert "is not a git repository" in (result.error or "")
    assert git(outer, "status", "--porcelain") == "?? ws/\n"


def test_inherited_git_dir_is_ignored(
    call: Call, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "--quiet")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    (repo / "mine.txt").write_text("x")
    assert [e["path"] for e in ok(call("git-status"))["entries"]] == ["mine.txt"]


def test_status_reports_every_kind_of_change(call: Call, repo: Path) -> None:
    empty = ok(call("git-status"))
    assert empty["branch"] == "main" and empty["clean"] is True and empty["entries"] == []
    (repo / "a.txt").write_text("a\n")
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", ".")
    git(repo, "commit", "--quiet", "-m", "base")
    (repo / "a.txt").write_text("changed\n")
    git(repo, "mv", "b.txt", "c.txt")
    (repo / "new file.txt").write_text("n\n")
    out = ok(call("git-status"))
    assert out["branch"] == "main" and out["clean"] is False
    entries = {e["path"]: e for e in out["entries"]}
    assert entries["a.txt"]["worktree"] == "M"
    assert entries["c.txt"]["index"] == "R" and entries["c.txt"]["orig_path"] == "b.txt"
    assert entries["new file.txt"]["index"] == "?"


def test_diff_unstaged_staged_and_by_path(call: Call, repo: Path) -> None:
    (repo / "a.txt").write_text("one\n")
    (repo / "b.txt").write_text("bee\n")
    git(repo, "add", ".")
    git(repo, "commit", "--quiet", "-m", "base")
    (repo / "a.txt").write_text("two\n")
    (repo / "b.txt").write_text("bzz\n")
    git(repo, "add", "b.txt")
    unstaged = ok(call("git-diff"))
    assert "-one\n+two" in unstaged["diff"] and "b.txt" not in unstaged["diff"]
    staged = ok(call("git-diff", staged=True))
    assert "-bee\n+bzz" in staged["diff"] and staged["staged"] is True
    only_a = ok(call("git-diff", path="a.txt"))
    assert "a.txt" in only_a["diff"] and only_a["path"] == "a.txt"
    assert ok(call("git-diff", path="b.txt"))["diff"] == ""


def test_diff_output_is_bounded(repo: Path) -> None:
    adapter = BuiltinAdapter(repo)
    adapter.context.git.max_output_bytes = 200
    call = _runner_for(adapter)
    (repo / "big.txt").write_text("x\n" * 10)
    git(repo, "add", ".")
    git(repo, "commit", "--quiet", "-m", "base")
    (repo / "big.txt").write_text("y\n" * 1000)
    out = ok(call("git-diff"))
    assert out["truncated"] is True and len(out["diff"].encode()) <= 200


def test_log_lists_commits_newest_first(call: Call, repo: Path) -> None:
    assert ok(call("git-log")) == {"commits": [], "count": 0, "truncated": False}
    for i in range(3):
        (repo / f"f{i}.txt").write_text(str(i))
        git(repo, "add", ".")
        git(repo, "commit", "--quiet", "-m", f"commit {i}")
    out = ok(call("git-log", max_count=2))
    assert [c["subject"] for c in out["commits"]] == ["commit 2", "commit 1"]
    first = out["commits"][0]
    assert first["author"] == "Test Author" and first["email"] == "author@example.com"
    assert first["commit"] == git(repo, "rev-parse", "HEAD").strip()
    assert [c["subject"] for c in ok(call("git-log", path="f0.txt"))["commits"]] == ["commit 0"]


def test_commit_paths_then_all(call: Call, repo: Path) -> None:
    (repo / "a.txt").write_text("a")
    (repo / "b.txt").write_text("b")
    out = ok(call("git-commit", message="Add a\n\nLonger body.", paths=["a.txt"]))
    assert out["files"] == ["a.txt"] and out["summary"] == "Add a"
    assert out["commit"] == git(repo, "rev-parse", "HEAD").strip()
    assert git(repo, "status", "--porcelain") == "?? b.txt\n"
    (repo / "a.txt").unlink()
    everything = ok(call("git-commit", message="-starts with a dash", all=True))
    assert sorted(everything["files"]) == ["a.txt", "b.txt"]
    assert git(repo, "log", "-1", "--format=%s").strip() == "-starts with a dash"
    assert git(repo, "status", "--porcelain") == ""


@pytest.mark.parametrize(
    ("inputs", "words"),
    [
        ({"message": "m"}, "nothing to commit"),
        ({"message": "m", "paths": ["a.txt"], "all": True}, "either paths or all"),
        ({"message": "m", "paths": ["never-existed.txt"]}, "cannot stage"),
        ({"message": "   "}, "blank"),
        ({"message": ""}, "message"),
    ],
)
def test_commit_refusals(call: Call, repo: Path, inputs: dict[str, Any], words: str) -> None:
    (repo / "a.txt").write_text("a")
    result = call("git-commit", **inputs)
    assert result.error_type == ErrorType.VALIDATION
    assert words in (result.error or ""), result.error
    assert git(repo, "status", "--porcelain") == "?? a.txt\n"


def test_commit_without_identity_fails_with_gits_message(
    call: Call, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git(workspace, "init", "--quiet")
    # No identity from anywhere: an empty HOME, no system config, no email guessing.
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(name, raising=False)
    git(workspace, "config", "user.useConfigOnly", "true")
    (workspace / "a.txt").write_text("a")
    result = call("git-commit", message="m", all=True)
    assert result.error_type == ErrorType.EXECUTION
    assert "git commit failed" in (result.error or "")


def test_git_runs_without_prompts_and_hooks_are_killed_on_timeout(repo: Path) -> None:
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(
        '#!/bin/sh\necho "$GIT_TERMINAL_PROMPT $$" > .git/hook-ran\nif [ -f .git/slow ]; then sleep 30; fi\n'
    )
    hook.chmod(0o755)
    adapter = BuiltinAdapter(repo, git_timeout=1.0)
    call = _runner_for(adapter)
    (repo / "a.txt").write_text("a")
    ok(call("git-commit", message="fast", all=True))
    prompt, _pid = (repo / ".git" / "hook-ran").read_text().split()
    assert prompt == "0"

    (repo / ".git" / "slow").write_text("")
    (repo / "b.txt").write_text("b")
    started = time.monotonic()
    result = call("git-commit", message="slow", all=True)
    assert result.error_type == ErrorType.TIMEOUT
    assert time.monotonic() - started < 10
    hook_pid = int((repo / ".git" / "hook-ran").read_text().split()[1])
    deadline = time.monotonic() + 5
    while _alive(hook_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(hook_pid), "the hook outlived the timeout"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_missing_git_executable(repo: Path) -> None:
    adapter = BuiltinAdapter(repo)
    adapter.context.git.executable = "definitely-not-a-git-binary"
    result = _runner_for(adapter)("git-status")
    assert result.error_type == ErrorType.EXECUTION
    assert "not installed" in (result.error or "")


def test_workspace_files_and_git_agree(call: Call, repo: Path) -> None:
    ok(call("file-write", path="src/main.py", content="print('hi')\n"))
    assert [e["path"] for e in ok(call("git-status"))["entries"]] == ["src/"]
    ok(call("git-commit", message="add main", paths=["src/main.py"]))
    ok(call("file-edit", path="src/main.py", old_text="hi", new_text="hello"))
    assert "+print('hello')" in ok(call("git-diff"))["diff"]
    assert os.path.exists(repo / "src" / "main.py")
