"""The five file tools on real files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from actors.builtin import BuiltinAdapter
from actors.tools import ErrorType, ToolRegistry, ToolResult, ToolRunner

from .conftest import Call


def ok(result: ToolResult) -> dict[str, Any]:
    assert result.success, result.error
    assert result.output is not None
    return result.output


def invalid(result: ToolResult, words: str) -> None:
    assert not result.success
    assert result.error_type == ErrorType.VALIDATION
    assert words in (result.error or ""), result.error


# ---- file-read ----


def test_read_whole_file(call: Call, workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\ntwo\nthree\n")
    out = ok(call("file-read", path="a.txt"))
    assert out["content"] == "one\ntwo\nthree\n"
    assert out["line_count"] == 3 and out["size_bytes"] == 14
    assert out["truncated"] is False and out["next_offset"] is None


def test_read_lines_by_offset_and_limit(call: Call, workspace: Path) -> None:
    (workspace / "a.txt").write_text("".join(f"line {i}\n" for i in range(10)))
    out = ok(call("file-read", path="a.txt", offset=3, limit=2))
    assert out["content"] == "line 3\nline 4\n"
    assert out["next_offset"] == 5
    last = ok(call("file-read", path="a.txt", offset=8, limit=5))
    assert last["content"] == "line 8\nline 9\n" and last["next_offset"] is None
    beyond = ok(call("file-read", path="a.txt", offset=50))
    assert beyond["content"] == "" and beyond["line_count"] == 0 and beyond["next_offset"] is None


def test_read_of_a_last_line_without_newline(call: Call, workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\ntwo")
    out = ok(call("file-read", path="a.txt"))
    assert out["content"] == "one\ntwo" and out["line_count"] == 2


def _small_runner(workspace: Path, max_read_bytes: int) -> Call:
    registry = ToolRegistry()
    BuiltinAdapter(workspace, max_read_bytes=max_read_bytes).register(registry)
    runner = ToolRunner(registry)
    return lambda tool, **inputs: runner.execute(f"builtin/{tool}", inputs)


def test_huge_file_is_truncated_with_a_marker(workspace: Path) -> None:
    (workspace / "huge.txt").write_text("".join(f"{i:07d}\n" for i in range(200_000)))  # 1.6 MB
    call = _small_runner(workspace, max_read_bytes=4096)
    out = ok(call("file-read", path="huge.txt"))
    assert out["truncated"] is True
    assert out["size_bytes"] == 1_600_000
    body, marker = out["content"].split("\n[... truncated", 1)
    assert len(body.encode()) <= 4096
    assert "offset=" in marker
    assert out["next_offset"] == 512  # 4096 bytes are 512 whole 8-byte lines
    following = ok(call("file-read", path="huge.txt", offset=out["next_offset"], limit=1))
    assert following["content"] == "0000512\n"


def test_single_overlong_line_moves_on(workspace: Path) -> None:
    (workspace / "wide.txt").write_text("x" * 10_000 + "\nnext\n")
    call = _small_runner(workspace, max_read_bytes=100)
    out = ok(call("file-read", path="wide.txt"))
    assert out["truncated"] is True and out["next_offset"] == 1
    assert ok(call("file-read", path="wide.txt", offset=1))["content"] == "next\n"


def test_read_non_utf8_replaces_bad_bytes(call: Call, workspace: Path) -> None:
    (workspace / "latin.txt").write_bytes(b"caf\xe9\n")
    assert ok(call("file-read", path="latin.txt"))["content"] == "caf\ufffd\n"


@pytest.mark.parametrize(
    ("inputs", "words"),
    [
        ({"path": "missing.txt"}, "no such file"),
        ({"path": "folder"}, "is a directory"),
        ({"path": "a.txt", "offset": -1}, "offset"),
        ({"path": "a.txt", "extra": 1}, "Additional properties"),
        ({}, "'path' is a required property"),
    ],
)
def test_read_bad_inputs(call: Call, workspace: Path, inputs: dict[str, Any], words: str) -> None:
    (workspace / "folder").mkdir()
    (workspace / "a.txt").write_text("x")
    invalid(call("file-read", **inputs), words)


# ---- file-write ----


def test_write_creates_parents_and_replaces(call: Call, workspace: Path) -> None:
    out = ok(call("file-write", path="new/dir/f.txt", content="héllo\n"))
    assert out == {"path": "new/dir/f.txt", "bytes_written": 7, "created": True}
    assert (workspace / "new/dir/f.txt").read_text() == "héllo\n"
    again = ok(call("file-write", path="new/dir/f.txt", content=""))
    assert again["created"] is False
    assert (workspace / "new/dir/f.txt").read_text() == ""
    assert sorted(p.name for p in (workspace / "new/dir").iterdir()) == ["f.txt"]


def test_write_follows_a_symlink_inside(call: Call, workspace: Path) -> None:
    (workspace / "real.txt").write_text("old")
    (workspace / "alias.txt").symlink_to("real.txt")
    ok(call("file-write", path="alias.txt", content="new"))
    assert (workspace / "alias.txt").is_symlink()
    assert (workspace / "real.txt").read_text() == "new"


def test_write_over_a_directory_is_invalid(call: Call, workspace: Path) -> None:
    (workspace / "folder").mkdir()
    invalid(call("file-write", path="folder", content="x"), "is a directory")


# ---- file-edit ----


def test_edit_replaces_one_exact_span(call: Call, workspace: Path) -> None:
    (workspace / "code.py").write_bytes(b"def f():\r\n    return 1\r\n")
    out = ok(call("file-edit", path="code.py", old_text="return 1", new_text="return 2"))
    assert out["replacements"] == 1
    assert (workspace / "code.py").read_bytes() == b"def f():\r\n    return 2\r\n"


@pytest.mark.parametrize(
    ("content", "old_text", "words"),
    [
        ("alpha beta", "gamma", "does not occur"),
        ("x = 1\nx = 1\n", "x = 1", "more than once"),
        ("aaa", "aa", "more than once"),
    ],
)
def test_edit_refuses_absent_or_ambiguous_text(
    call: Call, workspace: Path, content: str, old_text: str, words: str
) -> None:
    (workspace / "f.txt").write_text(content)
    invalid(call("file-edit", path="f.txt", old_text=old_text, new_text="Z"), words)
    assert (workspace / "f.txt").read_text() == content


def test_edit_replace_all(call: Call, workspace: Path) -> None:
    (workspace / "f.txt").write_text("x = 1\nx = 1\ny = 1\n")
    out = ok(call("file-edit", path="f.txt", old_text="x = 1", new_text="x = 2", replace_all=True))
    assert out["replacements"] == 2
    assert (workspace / "f.txt").read_text() == "x = 2\nx = 2\ny = 1\n"


def test_edit_refuses_binary_and_oversized_files(workspace: Path) -> None:
    (workspace / "bin.dat").write_bytes(b"\xff\xfeabc")
    (workspace / "big.txt").write_text("abc" + "x" * 200)
    call = _small_runner(workspace, max_read_bytes=100)
    invalid(call("file-edit", path="bin.dat", old_text="abc", new_text="d"), "not UTF-8")
    invalid(call("file-edit", path="big.txt", old_text="abc", new_text="d"), "more than the 100 bytes")
    assert (workspace / "big.txt").read_text().startswith("abc")


def test_edit_of_missing_file_or_empty_old_text(call: Call, workspace: Path) -> None:
    invalid(call("file-edit", path="nope.txt", old_text="a", new_text="b"), "no such file")
    (workspace / "f.txt").write_text("abc")
    invalid(call("file-edit", path="f.txt", old_text="", new_text="b"), "old_text")


# ---- file-list ----


@pytest.fixture
def tree(workspace: Path) -> Path:
    for name in ["README.md", "src/app.py", "src/lib/util.py", "src/lib/data.json", ".env", ".git/HEAD"]:
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(f"contents of {name}\n")
    return workspace


def test_list_everything_by_default(call: Call, tree: Path) -> None:
    out = ok(call("file-list"))
    assert [e["path"] for e in out["entries"]] == [
        ".env",
        "README.md",
        "src",
        "src/app.py",
        "src/lib",
        "src/lib/data.json",
        "src/lib/util.py",
    ]
    assert out["entries"][2] == {"path": "src", "type": "directory"}
    assert out["entries"][0]["type"] == "file" and out["entries"][0]["size"] == 17
    assert out["truncated"] is False


def test_list_with_a_glob_and_a_folder(call: Call, tree: Path) -> None:
    assert [e["path"] for e in ok(call("file-list", pattern="**/*.py"))["entries"]] == [
        "src/app.py",
        "src/lib/util.py",
    ]
    assert [e["path"] for e in ok(call("file-list", pattern="*", path="src/lib"))["entries"]] == [
        "src/lib/data.json",
        "src/lib/util.py",
    ]
    assert ok(call("file-list", pattern="*.md"))["count"] == 1


def test_list_is_bounded(call: Call, workspace: Path) -> None:
    for i in range(30):
        (workspace / f"f{i:02d}.txt").write_text("x")
    out = ok(call("file-list", limit=10))
    assert out["count"] == 10 and out["truncated"] is True
    invalid(call("file-list", limit=10_001), "limit")


def test_list_of_a_file_is_invalid(call: Call, tree: Path) -> None:
    invalid(call("file-list", path="README.md"), "not a directory")


# ---- file-search ----


def test_search_finds_lines(call: Call, tree: Path) -> None:
    (tree / "src/app.py").write_text("import os\n\ndef main():\n    return os.getcwd()\n")
    out = ok(call("file-search", pattern=r"\bos\b", glob="**/*.py"))
    assert out["matches"] == [
        {"path": "src/app.py", "line": 1, "text": "import os"},
        {"path": "src/app.py", "line": 4, "text": "    return os.getcwd()"},
    ]
    assert out["truncated"] is False


def test_search_options(call: Call, tree: Path) -> None:
    assert ok(call("file-search", pattern="CONTENTS"))["count"] == 0
    found = ok(call("file-search", pattern="CONTENTS", ignore_case=True))
    assert found["count"] == 5  # .git/HEAD is never searched
    assert not any(m["path"].startswith(".git/") for m in found["matches"])
    limited = ok(call("file-search", pattern="contents", max_results=2))
    assert limited["count"] == 2 and limited["truncated"] is True
    in_folder = ok(call("file-search", pattern="contents", path="src/lib"))
    assert {m["path"] for m in in_folder["matches"]} == {"src/lib/util.py", "src/lib/data.json"}


def test_search_skips_binary_files_and_cuts_long_lines(call: Call, workspace: Path) -> None:
    (workspace / "blob.bin").write_bytes(b"needle\x00\x01\x02")
    (workspace / "long.txt").write_text("needle" + "y" * 2000 + "\n")
    out = ok(call("file-search", pattern="needle"))
    assert [m["path"] for m in out["matches"]] == ["long.txt"]
    assert len(out["matches"][0]["text"]) == 501 and out["matches"][0]["text"].endswith("…")


def test_search_with_a_bad_regex_is_invalid(call: Call, tree: Path) -> None:
    invalid(call("file-search", pattern="(unclosed"), "not a valid regular expression")
