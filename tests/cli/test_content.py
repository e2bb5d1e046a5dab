"""`ContentText` and the progress bar's line: what the command prints for content a server may
send (including content it should not), and where saved content may go."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from actors.mcp.content import ContentText, size_text


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.mark.parametrize(
    ("size", "text"),
    [(0, "0 B"), (999, "999 B"), (1000, "1.0 kB"), (1250, "1.2 kB"), (3400, "3.4 kB"),
     (999_949, "999.9 kB"), (999_999, "1.0 MB"), (2_500_000, "2.5 MB"), (7_000_000_000, "7.0 GB")],
)  # fmt: skip
def test_size_text(size: int, text: str) -> None:
    assert size_text(size) == text


def test_text_blocks_keep_their_lines() -> None:
    blocks = [{"type": "text", "text": "one\ntwo"}, {"type": "text", "text": ""}]
    assert ContentText().blocks(blocks) == ["one", "two", ""]


def test_nothing_is_dropped_silently() -> None:
    blocks = [
        {"type": "hologram", "frames": 3},
        {"no": "type"},
        "a bare string",
        {"type": "image", "data": "%%% not base64 %%%", "mimeType": "image/png"},
        {"type": "audio", "data": b64(b"x")},
        {"type": "resource"},
        {"type": "resource_link"},
    ]
    assert ContentText().blocks(blocks) == [
        "[hologram]",
        "[content of no type]",
        "[str]",
        "[image image/png, not base64]",
        "[audio application/octet-stream, 1 B]",
        "[resource ?]",
        "[link ?]",
    ]


def test_resource_contents_text_as_text_binary_in_one_line() -> None:
    contents = [
        {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "hello\nworld"},
        {"uri": "file:///b.bin", "blob": b64(bytes(2048))},
    ]
    assert ContentText().contents(contents) == ["hello", "world", "[resource file:///b.bin, 2.0 kB]"]


def test_prompt_messages_say_their_role() -> None:
    messages = [
        {"role": "user", "content": {"type": "text", "text": "Hi\nthere"}},
        {"role": "assistant", "content": {"type": "resource_link", "uri": "file:///x"}},
        {"content": {"type": "text", "text": "who?"}},
    ]
    assert ContentText().messages(messages) == ["user: Hi", "there", "assistant: [link file:///x]", "?: who?"]


@pytest.mark.parametrize(
    ("uri", "name"),
    [
        ("file:///tmp/report.pdf", "report.pdf"),
        ("file:///tmp/logo", "logo.png"),
        ("demo://resource/dynamic/blob/7", "7.png"),
        ("file:///tmp/../../etc/passwd", "passwd.png"),
        ("file:///tmp/..", "resource-1.png"),
        ("file:///tmp/.hidden", "resource-1.png"),
        ("file:///tmp/a%2F..%2F..%2Fescape", "resource-1.png"),
        ("media://logo", "resource-1.png"),
        ("x:", "resource-1.png"),
    ],
)
def test_saved_files_stay_in_the_folder(tmp_path: Path, uri: str, name: str) -> None:
    text = ContentText(tmp_path / "out")
    line = text.contents([{"uri": uri, "mimeType": "image/png", "blob": b64(b"data")}])[0]
    assert text.saved == [tmp_path / "out" / name]
    assert line == f"[resource {uri} image/png, 4 B] saved to {tmp_path / 'out' / name}"
    assert [p.name for p in (tmp_path / "out").iterdir()] == [name]


def test_content_that_is_not_base64_is_not_saved(tmp_path: Path) -> None:
    text = ContentText(tmp_path)
    assert text.blocks([{"type": "image", "data": "***", "mimeType": "image/png"}]) == [
        "[image image/png, not base64]"
    ]
    assert text.saved == []
    assert list(tmp_path.iterdir()) == []
