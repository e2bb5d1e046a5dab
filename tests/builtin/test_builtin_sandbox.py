"""Escape attempts against every file tool (and the git tools): all refused, nothing touched."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from actors.tools import ErrorType

from .conftest import Call, snapshot

# (id, path); "{outside}" is replaced by the folder beside the workspace.
ESCAPES = [
    ("dotdot", "../x"),
    ("dotdot-to-etc", "../../etc/passwd"),
    ("dotdot-after-a-folder", "sub/../../outside/secret.txt"),
    ("absolute-etc", "/etc/passwd"),
    ("absolute-outside", "{outside}/secret.txt"),
    ("symlink-to-etc", "link_to_etc/passwd"),
    ("symlinked-parent-dir", "link_to_outside/secret.txt"),
    ("symlinked-parent-dir-new-file", "link_to_outside/new.txt"),
    ("file-symlink-outside", "secret_link"),
    ("dangling-symlink-outside", "dangling"),
    ("relative-symlink-up", "sub/up/outside/secret.txt"),
    ("nul-byte", "inside.txt\x00../../etc/passwd"),
    ("home", "~/.bashrc"),
    ("home-of-user", "~root/.ssh/authorized_keys"),
]

GLOB_ESCAPES = ["../*", "../../**/*", "/etc/*", "**/../../*", "sub/../../*", "a\x00b"]

REFUSAL_WORDS = ("outside the workspace", "NUL byte", "home-relative", "'..'", "absolute")


@pytest.fixture
def sandbox(workspace: Path, outside: Path) -> Path:
    """A workspace holding every kind of way out."""
    (workspace / "inside.txt").write_text("hello inside\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "file.txt").write_text("in sub\n")
    (workspace / "link_to_etc").symlink_to("/etc")
    (workspace / "link_to_outside").symlink_to(outside)
    (workspace / "secret_link").symlink_to(outside / "secret.txt")
    (workspace / "dangling").symlink_to(outside / "not_yet.txt")
    (workspace / "sub" / "up").symlink_to(Path("..") / "..")
    return workspace


def _path(template: str, outside: Path) -> str:
    return template.replace("{outside}", str(outside))


def _assert_refused(result: Any) -> None:
    assert not result.success
    assert result.error_type == ErrorType.VALIDATION, result.error
    assert any(word in result.error for word in REFUSAL_WORDS), result.error


@pytest.mark.parametrize("tool", ["file-read", "file-write", "file-edit", "file-list", "file-search"])
@pytest.mark.parametrize("template", [t for _, t in ESCAPES], ids=[c for c, _ in ESCAPES])
def test_escape_is_refused_and_touches_nothing(
    call: Call, sandbox: Path, outside: Path, tool: str, template: str
) -> None:
    path = _path(template, outside)
    probe = f"mcp-actors-probe-{uuid.uuid4().hex}"
    if tool == "file-write":
        # Should the sandbox ever fail, a write aimed at /etc must create a harmless new file.
        path = path.replace("passwd", probe)
    inputs: dict[str, Any] = {
        "file-read": {"path": path},
        "file-write": {"path": path, "content": "pwned\n"},
        "file-edit": {"path": path, "old_text": "top secret", "new_text": "pwned"},
        "file-list": {"path": path},
        "file-search": {"path": path, "pattern": "secret"},
    }[tool]
    outside_before, workspace_before = snapshot(outside), snapshot(sandbox)

    result = call(tool, **inputs)

    _assert_refused(result)
    assert snapshot(outside) == outside_before
    assert snapshot(sandbox) == workspace_before
    assert not (Path("/etc") / probe).exists()
    assert "top secret" not in str(result.output)


@pytest.mark.parametrize("tool", ["file-list", "file-search"])
@pytest.mark.parametrize("pattern", GLOB_ESCAPES)
def test_glob_escape_is_refused(call: Call, sandbox: Path, tool: str, pattern: str) -> None:
    inputs = {"pattern": pattern} if tool == "file-list" else {"pattern": "secret", "glob": pattern}
    result = call(tool, **inputs)
    _assert_refused(result)


GIT_ESCAPES = [
    (case, template)
    for case, template in ESCAPES
    # git names a symlink itself, never its target, so a final symlink is no way out there.
    if case not in ("file-symlink-outside", "dangling-symlink-outside")
]


@pytest.mark.parametrize("tool", ["git-diff", "git-log", "git-commit"])
@pytest.mark.parametrize("template", [t for _, t in GIT_ESCAPES], ids=[c for c, _ in GIT_ESCAPES])
@pytest.mark.usefixtures("repo")
def test_git_path_escape_is_refused(
    call: Call, sandbox: Path, outside: Path, tool: str, template: str
) -> None:
    path = _path(template, outside)
    inputs: dict[str, Any] = {
        "git-diff": {"path": path},
        "git-log": {"path": path},
        "git-commit": {"message": "escape", "paths": [path]},
    }[tool]
    outside_before = snapshot(outside)
    result = call(tool, **inputs)
    _assert_refused(result)
    assert snapshot(outside) == outside_before


def test_paths_inside_are_accepted(call: Call, sandbox: Path) -> None:
    (sandbox / "inner_link").symlink_to("sub/file.txt")
    for path in ["inside.txt", "./inside.txt", "sub/../inside.txt", str(sandbox / "inside.txt")]:
        result = call("file-read", path=path)
        assert result.success, (path, result.error)
        assert result.output is not None and result.output["path"] == "inside.txt"
    linked = call("file-read", path="inner_link")
    assert linked.success and linked.output is not None
    assert linked.output["path"] == "sub/file.txt"


def test_listing_hides_symlinks_leading_outside(call: Call, sandbox: Path) -> None:
    result = call("file-list")
    assert result.success and result.output is not None
    paths = {e["path"] for e in result.output["entries"]}
    assert {"inside.txt", "sub", "sub/file.txt"} <= paths
    assert not paths & {"link_to_etc", "link_to_outside", "secret_link", "dangling", "sub/up"}
    search = call("file-search", pattern="secret")
    assert search.success and search.output is not None
    assert search.output["matches"] == []


@pytest.mark.parametrize(
    "path", [".git/config", ".git/hooks/pre-commit", "sub/.git/x", ".GIT/config", ".git"]
)
def test_writes_into_dot_git_are_refused(call: Call, repo: Path, path: str) -> None:
    before = snapshot(repo)
    for tool, inputs in [
        ("file-write", {"path": path, "content": "x"}),
        ("file-edit", {"path": path, "old_text": "[core]", "new_text": "[core]\n\tfsmonitor = evil"}),
    ]:
        result = call(tool, **inputs)
        assert not result.success
        assert result.error_type == ErrorType.VALIDATION
        assert ".git" in (result.error or "")
    assert snapshot(repo) == before


def test_workspace_root_itself_is_not_a_file(call: Call, workspace: Path) -> None:
    for path in [".", str(workspace)]:
        result = call("file-write", path=path, content="x")
        assert result.error_type == ErrorType.VALIDATION
    assert os.listdir(workspace) == []
