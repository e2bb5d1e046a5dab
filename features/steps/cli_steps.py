"""Steps for cli.feature: the mcp-actors console script run as a user would, in a folder."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from behave import given, then, when
from behave.runner import Context

SCRIPT_DIR = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]


def _folder(context: Context) -> Path:
    folder = tempfile.TemporaryDirectory(prefix="mcp-actors-cli-")
    context.add_cleanup(folder.cleanup)
    context.cli_folder = Path(folder.name)
    return context.cli_folder


def _demo_entry() -> dict[str, object]:
    return {"command": sys.executable, "args": ["-m", "actors.demo.server"]}


@given("a folder without a configuration file")
def step_empty_folder(context: Context) -> None:
    _folder(context)


@given('a folder with an mcp.json for the demo server named "{name}"')
def step_folder_with_config(context: Context, name: str) -> None:
    # No "builtin" key: the built-in tools are off unless a configuration turns them on.
    config = {"mcpServers": {name: _demo_entry()}}
    (_folder(context) / "mcp.json").write_text(json.dumps(config))


@given('a folder with an mcp.json for the media server named "{name}"')
def step_folder_with_media_server(context: Context, name: str) -> None:
    # tests/cli/media_server.py: every kind of content, progress, resources, prompts.
    entry = {"command": sys.executable, "args": ["-m", "tests.cli.media_server"], "cwd": str(ROOT)}
    (_folder(context) / "mcp.json").write_text(json.dumps({"mcpServers": {name: entry}}))


@given('a folder with an mcp.json where server "{name}" runs "{command}"')
def step_folder_with_command(context: Context, name: str, command: str) -> None:
    config = {"mcpServers": {name: {"command": command}}}
    (_folder(context) / "mcp.json").write_text(json.dumps(config))


@given('a folder with the demo server as "{name}" and a server "{other}" that runs "{command}"')
def step_folder_with_two_servers(context: Context, name: str, other: str, command: str) -> None:
    config = {"mcpServers": {name: _demo_entry(), other: {"command": command}}}
    (_folder(context) / "mcp.json").write_text(json.dumps(config))


@given('a folder with an mcp.json where server "{name}" has {key} "{value}"')
def step_folder_with_bad_value(context: Context, name: str, key: str, value: str) -> None:
    entry = {**_demo_entry(), key: json.loads(value)}
    (_folder(context) / "mcp.json").write_text(json.dumps({"mcpServers": {name: entry}}))


@given("a folder with a Claude Desktop configuration")
def step_claude_desktop(context: Context) -> None:
    # As Claude Desktop writes it once its settings were touched; the command exists here.
    config = {
        "mcpServers": {"time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]}},
        "globalShortcut": "Ctrl+Space",
        "preferences": {"quickEntryShortcut": "off", "menuBarEnabled": False},
    }
    (_folder(context) / "claude_desktop_config.json").write_text(json.dumps(config))


@when('the user runs "{command}"')
def step_run(context: Context, command: str) -> None:
    argv = shlex.split(command)
    argv[0] = str(SCRIPT_DIR / argv[0])
    env = {k: v for k, v in os.environ.items() if k != "MCP_ACTORS_CONFIG"}
    context.done = subprocess.run(
        argv, cwd=context.cli_folder, capture_output=True, text=True, env=env, timeout=120, check=False
    )


@then("the command succeeds")
def step_succeeds(context: Context) -> None:
    assert context.done.returncode == 0, (context.done.returncode, context.done.stderr)


@then("the command fails with status {status:d}")
def step_fails(context: Context, status: int) -> None:
    assert context.done.returncode == status, (context.done.returncode, context.done.stderr)


@then('the output lists the tool "{name}"')
def step_lists_tool(context: Context, name: str) -> None:
    names = [line.split()[0] for line in context.done.stdout.splitlines()[2:] if line.strip()]
    assert name in names, context.done.stdout


@then('the output lists no tool of the namespace "{namespace}"')
def step_lists_no_tool_of(context: Context, namespace: str) -> None:
    names = [line.split()[0] for line in context.done.stdout.splitlines()[2:] if line.strip()]
    assert names, context.done.stdout
    assert not [n for n in names if n.startswith(f"{namespace}/")], context.done.stdout


@then('the output is "mcp-actors" and the installed version')
def step_output_is_version(context: Context) -> None:
    expected = f"mcp-actors {importlib.metadata.version('mcp-actors')}\n"
    assert context.done.stdout == expected, context.done.stdout


@then("the output is:")
def step_output_is_text(context: Context) -> None:
    assert context.done.stdout == context.text + "\n", context.done.stdout


@then("the error output is empty")
def step_error_output_empty(context: Context) -> None:
    assert context.done.stderr == "", context.done.stderr


@then('the folder holds the files "{names}"')
def step_folder_holds(context: Context, names: str) -> None:
    for name in names.split(", "):
        assert (context.cli_folder / name).is_file(), f"{name} is missing"


@then('the output is "{text}"')
def step_output_is(context: Context, text: str) -> None:
    assert context.done.stdout.rstrip("\n") == text, context.done.stdout


@then('the output mentions "{text}"')
def step_output_mentions(context: Context, text: str) -> None:
    assert text in context.done.stdout, context.done.stdout


@then('the error output mentions "{text}"')
def step_error_mentions(context: Context, text: str) -> None:
    assert text in context.done.stderr, context.done.stderr
