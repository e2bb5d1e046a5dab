"""The command beyond tools, through its entry point: every content block of a call, saved
binary content, the progress bar, ``resources``, ``read``, ``prompts`` and ``prompt``.

Against real servers: tests/cli/media_server.py (every kind of content, progress, resources,
prompts) and the reference ``@modelcontextprotocol/server-everything`` over stdio.
"""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from actors.cli import main
from tests.cli.media_server import AUDIO, IMAGE, LOGO
from tests.cli.terminal import run_on_terminal
from tests.harness import forkserver
from tests.interop.conftest import npm_stdio
from tests.runtime.conftest import ROOT

SCRIPT = Path(sys.executable).with_name("mcp-actors")


def media_entry() -> dict[str, Any]:
    command, *args = forkserver.python_module("tests.cli.media_server")
    return {"command": command, "args": args, "cwd": str(ROOT)}


def write_config(folder: Path, servers: dict[str, Any]) -> Path:
    path = folder / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers, "builtin": {"enabled": False}}))
    return path


@pytest.fixture
def media(tmp_path: Path) -> Path:
    return write_config(tmp_path, {"m": media_entry()})


@pytest.fixture
def everything(tmp_path: Path) -> Path:
    return write_config(tmp_path, {"everything": npm_stdio("server-everything", "stdio")})


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    status = main(list(argv), out=out)
    return status, out.getvalue()


class Terminal(io.StringIO):
    """A stderr that says it is a terminal, and calls ``on_write`` with each write."""

    def __init__(self) -> None:
        super().__init__()
        self.on_write = lambda text: None

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        written = super().write(text)
        self.on_write(text)
        return written


# ---- call: every content block -------------------------------------------------------------


MEDIA_LINES = [
    "Here is everything:",
    "[image image/png, 1.3 kB]",
    "[audio audio/wav, 3.4 kB]",
    "[resource file:///x text/plain]",
    "[resource media://logo image/png, 100 B]",
    "[link file:///x]",
]


def test_call_shows_one_line_per_image_audio_resource_and_link(media: Path) -> None:
    status, out = run("call", "m/media", "--config", str(media))
    assert (status, out.splitlines()) == (0, MEDIA_LINES)


def test_call_saves_binary_content_and_says_where_each_went(media: Path, tmp_path: Path) -> None:
    folder = tmp_path / "saved"
    status, out = run("call", "m/media", "--config", str(media), "--save", str(folder))
    assert status == 0
    assert out.splitlines() == [
        "Here is everything:",
        f"[image image/png, 1.3 kB] saved to {folder / 'image-2.png'}",
        f"[audio audio/wav, 3.4 kB] saved to {folder / 'audio-3.wav'}",
        "[resource file:///x text/plain]",
        f"[resource media://logo image/png, 100 B] saved to {folder / 'resource-5.png'}",
        "[link file:///x]",
    ]
    assert (folder / "image-2.png").read_bytes() == IMAGE
    assert (folder / "audio-3.wav").read_bytes() == AUDIO
    assert (folder / "resource-5.png").read_bytes() == LOGO
    assert sorted(p.name for p in folder.iterdir()) == ["audio-3.wav", "image-2.png", "resource-5.png"]


def test_saving_again_never_overwrites_a_file(media: Path, tmp_path: Path) -> None:
    folder = tmp_path / "saved"
    folder.mkdir()
    (folder / "image-2.png").write_bytes(b"mine")
    status, out = run("call", "m/media", "--config", str(media), "--save", str(folder))
    assert status == 0
    assert f"[image image/png, 1.3 kB] saved to {folder / 'image-2-2.png'}" in out.splitlines()
    assert (folder / "image-2.png").read_bytes() == b"mine"
    assert (folder / "image-2-2.png").read_bytes() == IMAGE


def test_saving_where_no_folder_can_be_made_fails(
    media: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    status, out = run("call", "m/media", "--config", str(media), "--save", str(blocker))
    assert (status, out) == (1, "")
    assert capsys.readouterr().err.startswith(f"error: cannot save to {blocker}: ")


def test_call_json_keeps_the_content_as_the_server_sent_it(media: Path) -> None:
    status, out = run("call", "m/media", "--config", str(media), "--json")
    assert status == 0
    content = json.loads(out)["output"]["content"]
    assert [block["type"] for block in content] == [
        "text",
        "image",
        "audio",
        "resource",
        "resource",
        "resource_link",
    ]
    assert base64.b64decode(content[1]["data"]) == IMAGE


def test_call_shows_the_image_of_server_everything(everything: Path) -> None:
    status, out = run("call", "everything/get-tiny-image", "--config", str(everything))
    assert status == 0
    lines = out.splitlines()
    images = [line for line in lines if line.startswith("[image image/png, ")]
    assert len(images) == 1, lines
    assert images[0].endswith(" kB]")
    assert len(lines) > 1  # the text around the image is there too


def test_call_shows_the_resource_links_of_server_everything(everything: Path) -> None:
    status, out = run("call", "everything/get-resource-links", '{"count": 2}', "--config", str(everything))
    assert status == 0
    assert "[link demo://resource/dynamic/blob/1]" in out.splitlines()
    assert "[link demo://resource/dynamic/text/2]" in out.splitlines()


# ---- call: the progress bar ---------------------------------------------------------------------


def test_a_call_that_reports_progress_draws_a_bar_on_a_terminal(
    media: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = tmp_path / "seen"
    terminal = Terminal()
    # The server waits, after its first step, until the bar has shown it.
    terminal.on_write = lambda text: seen.touch() if "step 1" in text else None
    monkeypatch.setattr(sys, "stderr", terminal)
    arguments = json.dumps({"count": 2, "wait_for": str(seen)})
    status, out = run("call", "m/steps", arguments, "--config", str(media))
    assert (status, out) == (0, "2 steps done\n")
    drawn = terminal.getvalue()
    assert "step 1" in drawn and " 50%" in drawn
    assert drawn.endswith("\x1b[2K"), "the bar is erased when the call ends"


def test_no_bar_when_stderr_is_not_a_terminal(media: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(SCRIPT), "call", "m/steps", '{"count": 3}', "--config", str(media)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "3 steps done\n", "")


def test_the_console_script_draws_the_bar_on_a_real_terminal(media: Path, tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    arguments = json.dumps({"count": 2, "wait_for": str(seen)})
    status, stdout, drawn = run_on_terminal(
        [str(SCRIPT), "call", "m/steps", arguments, "--config", str(media)],
        on_output=lambda drawn: seen.touch() if b"step 1" in drawn else None,
    )
    assert (status, stdout) == (0, b"2 steps done\n"), drawn
    assert b"step 1" in drawn and b" 50%" in drawn
    assert drawn.endswith(b"\x1b[2K"), "the bar is erased when the call ends"


# ---- resources and read -------------------------------------------------------------------------


def test_resources_lists_resources_then_templates(media: Path) -> None:
    status, out = run("resources", "--config", str(media))
    assert status == 0
    tables = out.split("\n\n")
    assert len(tables) == 2, out
    resources, templates = (table.splitlines() for table in tables)
    assert resources[0].split() == ["server", "uri", "name", "mime", "type", "description"]
    rows = sorted(line.split() for line in resources[2:])
    assert rows == [
        ["m", "media://logo", "logo", "image/png"],
        ["m", "media://notes", "notes", "text/plain", "Plain", "notes"],
    ]
    assert templates[0].split()[:2] == ["server", "template"]
    assert templates[2].split() == ["m", "media://notes/{day}", "notes_of", "text/plain"]


def test_resources_json_names_fields_as_mcp_does(media: Path) -> None:
    status, out = run("resources", "m", "--config", str(media), "--json")
    assert status == 0
    listing = json.loads(out)
    notes = next(r for r in listing["resources"] if r["uri"] == "media://notes")
    assert notes["namespace"] == "m"
    assert notes["mimeType"] == "text/plain"
    assert [t["uriTemplate"] for t in listing["resourceTemplates"]] == ["media://notes/{day}"]


def test_resources_of_an_unknown_server_is_not_found(media: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out = run("resources", "nope", "--config", str(media))
    assert (status, out) == (1, "")
    assert capsys.readouterr().err == "error: not_found: no server for namespace 'nope' (known: m)\n"


def test_read_prints_text_contents(media: Path) -> None:
    status, out = run("read", "m", "media://notes", "--config", str(media))
    assert (status, out) == (0, "first note\nsecond note\n")


def test_read_prints_a_template_resource(media: Path) -> None:
    status, out = run("read", "m", "media://notes/monday", "--config", str(media))
    assert (status, out) == (0, "notes of monday\n")


def test_read_shows_binary_contents_in_one_line_and_saves_them(media: Path, tmp_path: Path) -> None:
    status, out = run("read", "m", "media://logo", "--config", str(media))
    assert (status, out) == (0, "[resource media://logo image/png, 100 B]\n")
    folder = tmp_path / "saved"
    status, out = run("read", "m", "media://logo", "--config", str(media), "--save", str(folder))
    assert (status, out) == (
        0,
        f"[resource media://logo image/png, 100 B] saved to {folder / 'resource-1.png'}\n",
    )
    assert (folder / "resource-1.png").read_bytes() == LOGO


def test_read_json_is_the_whole_result(media: Path) -> None:
    status, out = run("read", "m", "media://notes", "--config", str(media), "--json")
    assert status == 0
    result = json.loads(out)
    assert result["success"] is True
    assert result["output"]["contents"][0]["text"] == "first note\nsecond note"


def test_read_of_an_unknown_resource_fails_in_one_line_with_the_servers_reason(
    media: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = run("read", "m", "media://nothing-here", "--config", str(media))
    assert (status, out) == (1, "")
    err = capsys.readouterr().err
    # Servers answer an unknown URI with -32602 (invalid params): the runtime classifies it, the
    # command says it.
    assert err.startswith(("error: not_found: ", "error: server_error: ")), err
    assert "Unknown resource: media://nothing-here" in err
    assert err.count("\n") == 1


def test_read_of_an_unknown_server_is_not_found(media: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _ = run("read", "nope", "media://notes", "--config", str(media))
    assert status == 1
    assert capsys.readouterr().err == "error: not_found: no server for namespace 'nope' (known: m)\n"


def test_resources_and_read_of_server_everything(everything: Path) -> None:
    status, out = run("resources", "everything", "--config", str(everything))
    assert status == 0
    assert any(
        line.split()[1].startswith("demo://resource/static/document/")
        for line in out.splitlines()[2:]
        if line
    )
    assert "demo://resource/dynamic/text/{resourceId}" in out
    status, out = run("read", "everything", "demo://resource/dynamic/text/1", "--config", str(everything))
    assert status == 0
    assert out.strip()
    status, out = run("read", "everything", "demo://resource/dynamic/blob/1", "--config", str(everything))
    assert status == 0
    assert out.startswith("[resource demo://resource/dynamic/blob/1 ")


# ---- prompts and prompt -------------------------------------------------------------------------


def test_prompts_lists_prompts_with_their_arguments(media: Path) -> None:
    status, out = run("prompts", "--config", str(media))
    assert status == 0
    header, _rule, *rows = out.splitlines()
    assert header.split() == ["prompt", "arguments", "description"]
    assert sorted(row.split(None, 2) for row in rows) == [
        ["m/greet", "name", "Greet someone"],
        ["m/show", "-", "A message with an image"],
    ]


def test_prompts_json(media: Path) -> None:
    status, out = run("prompts", "m", "--config", str(media), "--json")
    assert status == 0
    greet = next(p for p in json.loads(out) if p["name"] == "m/greet")
    assert greet["arguments"] == [{"name": "name", "description": None, "required": True}]


def test_prompt_prints_its_messages(media: Path) -> None:
    status, out = run("prompt", "m/greet", '{"name": "Ada"}', "--config", str(media))
    assert (status, out) == (0, "user: Say hello to Ada.\n")


def test_prompt_shows_an_image_message_in_one_line(media: Path) -> None:
    status, out = run("prompt", "m/show", "--config", str(media))
    assert (status, out.splitlines()) == (0, ["user: Look at this:", "user: [image image/png, 1.3 kB]"])


def test_prompt_without_a_required_argument_is_a_validation_error(
    media: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = run("prompt", "m/greet", "{}", "--config", str(media))
    assert (status, out) == (1, "")
    err = capsys.readouterr().err
    assert err.startswith("error: validation: "), err
    assert "name" in err


def test_an_unknown_prompt_is_not_found(media: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _ = run("prompt", "m/nothing", "--config", str(media))
    assert status == 1
    assert capsys.readouterr().err.startswith("error: not_found: ")


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ("{name: Ada}", "error: prompt arguments are not JSON: "),
        ('["Ada"]', "error: prompt arguments must be a JSON object\n"),
        ('{"name": "Ada", "age": 36, "tall": true}', "error: prompt arguments must be text: age, tall\n"),
    ],
    ids=["not-json", "not-an-object", "not-text"],
)
def test_bad_prompt_arguments_are_refused_before_anything_starts(
    media: Path, capsys: pytest.CaptureFixture[str], arguments: str, says: str
) -> None:
    status, out = run("prompt", "m/greet", arguments, "--config", str(media))
    assert (status, out) == (2, "")
    assert capsys.readouterr().err.startswith(says)


def test_prompts_and_prompt_of_server_everything(everything: Path) -> None:
    status, out = run("prompts", "everything", "--config", str(everything))
    assert status == 0
    rows = {row.split()[0]: row.split()[1:] for row in out.splitlines()[2:]}
    assert rows["everything/args-prompt"][:2] == ["city,", "[state]"]
    status, out = run("prompt", "everything/args-prompt", '{"city": "Paris"}', "--config", str(everything))
    assert status == 0
    assert out.startswith("user: ")
    assert "Paris" in out


def test_a_call_that_is_refused_still_exits_non_zero_through_the_script(media: Path) -> None:
    done = subprocess.run(
        [str(SCRIPT), "read", "m", "media://nothing-here", "--config", str(media)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith("error: ")


def test_a_read_that_never_answers_times_out_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # tests/servers/surface_server.py: surface://never is a read that never answers.
    command, *args = forkserver.python_module("tests.servers.surface_server")
    entry = {"command": command, "args": args, "cwd": str(ROOT)}
    config = write_config(tmp_path, {"s": entry})
    status, out = run("read", "s", "surface://never", "--timeout", "0.5", "--config", str(config))
    assert (status, out) == (1, "")
    err = capsys.readouterr().err
    assert err.startswith("error: timeout: "), err
    assert err.count("\n") == 1


@pytest.mark.parametrize("command", ["resources", "prompts"])
def test_a_listing_says_which_server_failed_lists_the_rest_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    broken = {"command": "no-such-mcp-server-xyz", "restartBackoff": 5}
    config = write_config(tmp_path, {"m": media_entry(), "broken": broken})
    status, out = run(command, "--config", str(config))
    assert status == 1
    listed = "m/greet" if command == "prompts" else "media://notes"
    assert listed in out
    err = capsys.readouterr().err
    assert err.startswith(f"error: server 'broken' did not list its {command}: "), err
    assert "no-such-mcp-server-xyz" in err
