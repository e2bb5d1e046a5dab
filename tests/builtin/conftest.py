"""Fixtures for the built-in tools: a workspace, a folder outside it, a git repository, a runner."""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from actors.builtin import BuiltinAdapter
from actors.tools import ToolRegistry, ToolResult, ToolRunner

Call = Callable[..., ToolResult]
"""``call("file-read", path="x")``: run ``builtin/<tool>`` with keyword inputs."""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the workspace with a secret in it, to be left untouched."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("top secret\n")
    return folder


@pytest.fixture
def adapter(workspace: Path) -> BuiltinAdapter:
    return BuiltinAdapter(workspace)


@pytest.fixture
def runner(adapter: BuiltinAdapter) -> ToolRunner:
    registry = ToolRegistry()
    adapter.register(registry)
    return ToolRunner(registry)


@pytest.fixture
def call(runner: ToolRunner) -> Call:
    def run(tool: str, **inputs: Any) -> ToolResult:
        return runner.execute(f"builtin/{tool}", inputs)

    return run


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` for test setup and checks; its output."""
    done = subprocess.run(
        ["git", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
    )
    return done.stdout


@pytest.fixture
def repo(workspace: Path) -> Path:
    """The workspace as a fresh git repository with a local identity and no commits."""
    git(workspace, "init", "--quiet", "--initial-branch=main")
    git(workspace, "config", "user.name", "Test Author")
    git(workspace, "config", "user.email", "author@example.com")
    git(workspace, "config", "commit.gpgsign", "false")
    return workspace


def snapshot(folder: Path) -> dict[str, tuple[str, int, str]]:
    """Every entry under ``folder`` (without following symlinks): kind, mode and content hash."""
    state: dict[str, tuple[str, int, str]] = {}
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        for name in [*dirnames, *filenames]:
            full = Path(dirpath, name)
            info = full.lstat()
            if full.is_symlink():
                state[str(full)] = ("link", info.st_mode, os.readlink(full))
            elif full.is_dir():
                state[str(full)] = ("dir", info.st_mode, "")
            else:
                state[str(full)] = ("file", info.st_mode, hashlib.sha256(full.read_bytes()).hexdigest())
    return state
