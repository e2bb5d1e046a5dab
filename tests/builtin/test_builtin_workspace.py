"""`Workspace`: path resolution, atomic writes, bounded reads and walking."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.builtin import InvalidInput, SandboxViolation, Workspace
from actors.builtin.pathmatch import PathPattern


def test_root_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a directory"):
        Workspace(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="not a directory"):
        Workspace(tmp_path / "file")


def test_root_is_resolved_through_symlinks(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    workspace = Workspace(tmp_path / "alias")
    assert workspace.root == real
    assert workspace.resolve(str(tmp_path / "alias" / "a.txt")) == real / "a.txt"


def test_resolve_without_following_the_final_symlink(workspace: Path, outside: Path) -> None:
    (workspace / "link").symlink_to(outside / "secret.txt")
    ws = Workspace(workspace)
    assert ws.resolve("link", follow_final_symlink=False) == workspace / "link"
    with pytest.raises(SandboxViolation, match="symlink"):
        ws.resolve("link")


def test_write_is_atomic_and_keeps_the_mode(workspace: Path) -> None:
    ws = Workspace(workspace)
    first = ws.write_bytes("deep/er/file.txt", b"one")
    assert first.created and first.bytes_written == 3 and first.path == "deep/er/file.txt"
    target = workspace / "deep" / "er" / "file.txt"
    target.chmod(0o640)
    second = ws.write_bytes("deep/er/file.txt", b"two")
    assert not second.created
    assert target.read_bytes() == b"two"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(os.listdir(target.parent)) == ["file.txt"]


def test_a_failed_write_leaves_the_file_and_no_temporary(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = Workspace(workspace)
    ws.write_bytes("f.txt", b"original")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk on fire"):
        ws.write_bytes("f.txt", b"new")
    assert (workspace / "f.txt").read_bytes() == b"original"
    assert os.listdir(workspace) == ["f.txt"]


def test_write_through_a_file_parent_is_invalid(workspace: Path) -> None:
    (workspace / "plain").write_text("x")
    with pytest.raises(InvalidInput, match="parent path is a file"):
        Workspace(workspace).write_bytes("plain/child.txt", b"x")


def test_reads_are_bounded(workspace: Path) -> None:
    (workspace / "big.bin").write_bytes(b"x" * 5000)
    ws = Workspace(workspace, max_read_bytes=1000)
    data, size = ws.read_bytes("big.bin")
    assert len(data) == 1000 and size == 5000


@pytest.mark.parametrize(
    ("setup", "message"),
    [("missing", "no such file"), ("folder", "is a directory"), ("fifo", "not a regular file")],
)
def test_only_regular_files_are_opened(workspace: Path, setup: str, message: str) -> None:
    if setup == "folder":
        (workspace / "target").mkdir()
    elif setup == "fifo":
        os.mkfifo(workspace / "target")  # opening it for reading must not hang
    with pytest.raises(InvalidInput, match=message):
        Workspace(workspace).read_bytes("target")


def test_walk_skips_git_and_is_sorted(workspace: Path) -> None:
    for name in ["b.txt", "a.txt", ".git/HEAD", "d/c.txt"]:
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(name)
    entries = [(e.path, e.kind) for e in Workspace(workspace).walk()]
    assert entries == [("a.txt", "file"), ("b.txt", "file"), ("d", "directory"), ("d/c.txt", "file")]


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("**/*", "a", True),
        ("**/*", "a/b/c.py", True),
        ("*.py", "a.py", True),
        ("*.py", "d/a.py", False),
        ("**/*.py", "d/e/a.py", True),
        ("d/**", "d/e/a.py", True),
        ("d/**/a.py", "d/a.py", True),
        ("?.txt", "ab.txt", False),
        ("[ab].txt", "b.txt", True),
        (".*", ".gitignore", True),
    ],
)
def test_path_patterns(pattern: str, path: str, expected: bool) -> None:
    assert PathPattern(pattern).matches(path) is expected


_segments = st.sampled_from(["a", "b", ".", "..", "", "~", "link", "up", "out", "\x00", "/"])


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(parts=st.lists(_segments, max_size=8), absolute=st.booleans())
def test_resolve_never_leaves_the_root(
    workspace: Path, outside: Path, parts: list[str], absolute: bool
) -> None:
    if not (workspace / "a").exists():
        (workspace / "a" / "b").mkdir(parents=True)
        (workspace / "link").symlink_to(outside)
        (workspace / "a" / "up").symlink_to("../..")
        (workspace / "out").symlink_to("/")
    ws = Workspace(workspace)
    path = ("/" if absolute else "") + "/".join(parts)
    try:
        real = ws.resolve(path)
    except SandboxViolation:
        return
    assert real == workspace or workspace in real.parents
    assert os.path.realpath(real) == str(real)
