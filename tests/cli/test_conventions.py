"""The command line as users of fastmcp's CLI and the MCP Inspector expect it: help that says
what each option does and its default, ``tools NS`` with each tool's arguments, ``call`` with
``key=value`` words, a "did you mean" for a gateway's ``ns__tool``, a server named with
``--command``/``--url`` and no config file, ``check --json`` and ``status --json``, and progress
on a terminal while servers start. Against the fixture server (tests/servers), over stdio and
Streamable HTTP.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from actors.cli import main
from actors.cli.parser import build_parser
from tests.cli.terminal import run_on_terminal
from tests.harness import forkserver
from tests.runtime.conftest import ROOT, stdio_server
from tests.servers.http_server import HTTPServer

SCRIPT = Path(sys.executable).with_name("mcp-actors")
DOCS = ROOT / "docs" / "cli.md"
WAIT = 120.0


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    status = main(list(argv), out=out)
    return status, out.getvalue()


def write_config(folder: Path, servers: dict[str, Any], **top: Any) -> Path:
    path = folder / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers, "builtin": {"enabled": False}, **top}))
    return path


@pytest.fixture
def two_servers(tmp_path: Path) -> Path:
    """``fx``, and ``broken``, whose command exits at once: any listing that starts it fails."""
    return write_config(
        tmp_path, {"fx": stdio_server(), "broken": {"command": sys.executable, "args": ["-c", ""]}}
    )


def fixture_command() -> str:
    """The fixture server as one ``--command`` string."""
    return shlex.join(forkserver.python_module("tests.servers.fixture_server"))


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


# ---- help -------------------------------------------------------------------------------------


def test_the_top_level_help_is_whole_sentences_and_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    shown = capsys.readouterr().out
    description = shown.split("\n\n")[1]
    assert description.endswith(".") and "`" not in shown, description
    assert "examples:" in shown
    for name in subcommands():
        assert f"\n    {name}" in shown, name


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_option_says_what_it_does_and_its_default(name: str) -> None:
    for action in subcommands()[name]._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        assert action.help, f"{name} {action.option_strings or action.dest}: no help"
        takes_value = action.nargs != 0 and action.option_strings
        if takes_value and action.default not in (None, False):
            assert "default" in action.help, f"{name} {action.option_strings}: its default goes unsaid"


def test_docs_cli_md_shows_every_command() -> None:
    page = DOCS.read_text()
    usage = page.split("```")[1]
    for name in subcommands():
        assert f"mcp-actors {name}" in usage, f"{name} is missing from the usage block of docs/cli.md"
        assert f"| `{name}" in page, f"{name} has no row in the table of docs/cli.md"


# ---- tools NS, with arguments -------------------------------------------------------------------


def test_tools_of_one_server_start_no_other(two_servers: Path) -> None:
    status, out = run("tools", "fx", "--config", str(two_servers))
    assert status == 0, "the broken server was started"
    names = [line.split()[0] for line in out.splitlines()[2:]]
    assert names and all(name.startswith("fx/") for name in names)
    status, _ = run("tools", "--config", str(two_servers))
    assert status == 1  # all of them: the broken one fails


def test_tools_show_each_tool_s_arguments_optional_in_brackets(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fx": stdio_server()})
    for attempt in ("live", "cached"):
        status, out = run("tools", "fx", "--config", str(config))
        assert status == 0, attempt
        rows = {line.split()[0]: line for line in out.splitlines()[2:]}
        assert "a: integer, b: integer" in rows["fx/add"], attempt
        assert "seconds: number, [marker]" in rows["fx/sleep"], attempt
        assert rows["fx/echo"].split()[1] == "text", attempt


def test_tools_of_an_unknown_server_say_which_are_known(
    two_servers: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("tools", "nope", "--config", str(two_servers)) == (1, "")
    assert capsys.readouterr().err == "error: not_found: no server for namespace 'nope' (known: broken, fx)\n"


# ---- call with key=value ------------------------------------------------------------------------


def test_call_takes_key_value_words_typed_by_the_schema(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fx": stdio_server()})
    assert run("call", "fx/add", "a=2", "b=40", "--config", str(config)) == (0, "42\n")
    assert run("call", "fx/echo", "text=42", "--config", str(config)) == (0, "42\n")  # text stays text
    assert run("call", "fx/add", '{"a": 1, "b": 1}', "b=2", "--config", str(config)) == (0, "3\n")


def test_a_value_the_schema_rules_out_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, {"fx": stdio_server()})
    assert run("call", "fx/add", "a=two", "b=2", "--config", str(config)) == (2, "")
    assert capsys.readouterr().err == "error: a: 'two' is not an integer\n"


def test_a_gateway_name_gets_a_did_you_mean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, {"fx": stdio_server()})
    assert run("call", "fx__add", "a=1", "b=2", "--config", str(config)) == (1, "")
    err = capsys.readouterr().err
    assert "did you mean 'fx/add'?" in err and err.startswith("error: not_found: ")


def test_prompt_takes_key_value_words_too(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fx": stdio_server("fixture_server", "--surface")})
    status, out = run("prompt", "fx/greet", "name=Ada", "punctuation=?", "--config", str(config))
    assert (status, out) == (0, "user: Hello, Ada?\n")


# ---- a server without a config file -------------------------------------------------------------


def test_a_command_is_a_server_without_a_config_file() -> None:
    command = fixture_command()
    status, out = run("tools", "--command", command, "--name", "fx")
    assert status == 0 and "fx/echo" in out
    assert run("call", "echo", "text=hi", "--command", command, "--name", "fx") == (0, "hi\n")
    assert run("call", "fx/echo", "text=hi", "--command", command, "--name", "fx") == (0, "hi\n")


def test_a_url_is_a_server_without_a_config_file() -> None:
    with HTTPServer(extra_args=("--surface",)) as server:
        status, out = run("tools", "--url", server.url)
        assert status == 0 and "server/echo" in out  # 127.0.0.1 names nothing: `server`
        assert run("call", "add", "a=1", "b=2", "--url", server.url) == (0, "3\n")
        assert run("read", "fixture://greeting", "--url", server.url) == (0, "hello from the fixture\n")


def test_a_config_and_a_command_are_one_or_the_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["tools", "--config", "mcp.json", "--command", "x"])
    assert done.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


# ---- check --json and status --json -------------------------------------------------------------


def test_check_json_says_every_server_and_what_is_wrong(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        {
            "fx": stdio_server(),
            "gone": {"command": "no-such-command-anywhere"},
            "api": {"url": "http://127.0.0.1:9/mcp"},
        },
    )
    status, out = run("check", "--json", "--config", str(config))
    report = json.loads(out)
    assert status == 1 and report["ok"] is False
    assert {s["name"]: s["transport"] for s in report["servers"]} == {
        "fx": "stdio",
        "gone": "stdio",
        "api": "streamable-http",
    }
    assert [e["server"] for e in report["errors"]] == ["gone"]
    assert "command not found" in report["errors"][0]["message"]


def test_check_json_of_an_invalid_config_lists_each_problem(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fx": {"command": "x", "callTimeout": -1}})
    status, out = run("check", "--json", "--config", str(config))
    report = json.loads(out)
    assert (status, report["ok"]) == (2, False)
    assert [(e["server"], e["key"]) for e in report["errors"]] == [("fx", "callTimeout")]


def test_check_json_of_a_good_config_is_ok(tmp_path: Path) -> None:
    status, out = run("check", "--json", "--config", str(write_config(tmp_path, {"fx": stdio_server()})))
    assert (status, json.loads(out)["ok"], json.loads(out)["errors"]) == (0, True, [])


def test_status_json_lists_the_servers_and_their_logins(tmp_path: Path) -> None:
    config = write_config(
        tmp_path, {"fx": stdio_server(), "api": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "k"}}}
    )
    status, out = run("status", "--json", "--config", str(config))
    servers = {s["name"]: s for s in json.loads(out)["servers"]}
    assert status == 0
    assert servers["api"]["auth"] == "header" and servers["api"]["boundary"] is None
    assert servers["fx"]["auth"] is None and servers["fx"]["boundary"].startswith("none")


# ---- progress on a terminal while servers start -------------------------------------------------


def test_a_listing_at_a_terminal_shows_the_servers_it_waits_for(tmp_path: Path) -> None:
    gate = tmp_path / "open"
    # A server that starts only once the test has seen it drawn as starting (a download, say).
    waits = f"import os, time\nwhile not os.path.exists({str(gate)!r}): time.sleep(0.05)\n"
    serves = "from tests.servers.fixture_server import main\nmain([])"
    gated = {
        "command": sys.executable,
        "args": ["-c", waits + serves],
        "cwd": str(ROOT),
        "connectTimeout": WAIT,
    }
    config = write_config(tmp_path, {"slow": gated})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    status, stdout, drawn = run_on_terminal(
        [str(SCRIPT), "tools", "--config", str(config)],
        on_output=lambda drawn: gate.touch() if b"starting slow" in drawn else None,
        timeout=WAIT,
        env=env,
        cwd=tmp_path,
    )
    assert status == 0, drawn
    assert b"starting slow" in drawn
    assert drawn.endswith(b"\x1b[2K"), "the rows are erased when the listing ends"
    assert b"slow/echo" in stdout


def test_a_call_without_a_tool_asks_for_the_tool_alone(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["call"])
    assert done.value.code == 2
    assert capsys.readouterr().err.endswith("error: the following arguments are required: NS/TOOL\n")


def test_a_read_of_a_file_s_server_needs_its_namespace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, {"fx": stdio_server()})
    assert run("read", "fixture://greeting", "--config", str(config)) == (2, "")
    assert "only 'fixture://greeting'" in capsys.readouterr().err
