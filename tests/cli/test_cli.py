"""The mcp-actors command, through its entry point: output, exit status, error messages."""

from __future__ import annotations

import importlib.metadata
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from actors.cli import main
from tests.runtime.conftest import stdio_server


def write_config(folder: Path, servers: dict[str, Any], name: str = "mcp.json") -> Path:
    path = folder / name
    path.write_text(json.dumps({"mcpServers": servers, "builtin": {"enabled": False}}))
    return path


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    status = main(list(argv), out=out)
    return status, out.getvalue()


@pytest.fixture
def fixture_config(tmp_path: Path) -> Path:
    return write_config(tmp_path, {"fx": stdio_server()})


def test_tools_lists_namespaced_tools_with_capabilities(fixture_config: Path) -> None:
    status, out = run("tools", "--config", str(fixture_config))
    assert status == 0
    header, _rule, *rows = out.splitlines()
    assert header.split() == ["tool", "arguments", "source", "capabilities", "description"]
    names = [row.split()[0] for row in rows]
    assert {"fx/echo", "fx/add", "fx/sleep"} <= set(names)
    assert all(name.startswith("fx/") for name in names)


def test_tools_json_is_machine_readable(fixture_config: Path) -> None:
    status, out = run("tools", "--config", str(fixture_config), "--json")
    assert status == 0
    tools = {t["name"]: t for t in json.loads(out)}
    assert tools["fx/echo"]["source"] == "mcp"
    assert tools["fx/echo"]["inputSchema"]["required"] == ["text"]


def test_call_prints_the_text_result(fixture_config: Path) -> None:
    status, out = run("call", "fx/echo", '{"text": "hi there"}', "--config", str(fixture_config))
    assert (status, out) == (0, "hi there\n")


def test_call_json_prints_the_whole_result(fixture_config: Path) -> None:
    status, out = run("call", "fx/add", '{"a": 2, "b": 3}', "--config", str(fixture_config), "--json")
    assert status == 0
    result = json.loads(out)
    assert result["success"] is True
    assert result["output"]["structuredContent"] == {"result": 5}


def test_a_failing_tool_exits_non_zero_with_the_classified_error(
    fixture_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = run("call", "fx/fail", '{"message": "nope"}', "--config", str(fixture_config))
    assert status == 1
    assert out == ""
    err = capsys.readouterr().err
    assert err.startswith("error: server_error: ")
    assert "server error:" not in err  # the type, once: not "server_error: server error: ..."
    assert "nope" in err


def test_a_timeout_is_one_line_with_one_label_and_rounded_seconds(
    fixture_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "call",
        "fx/sleep",
        '{"seconds": 60}',
        "--timeout",
        "0.2500000001",
        "--config",
        str(fixture_config),
    ]
    status, out = run(*argv)
    assert (status, out) == (1, "")
    err = capsys.readouterr().err
    assert err.startswith("error: timeout: ")
    assert "timeout: timeout" not in err
    assert "0.2500000001" not in err
    assert err.count("\n") == 1


def test_an_unknown_tool_is_not_found(fixture_config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _ = run("call", "fx/no_such_tool", "{}", "--config", str(fixture_config))
    assert status == 1
    assert "error: not_found:" in capsys.readouterr().err


def test_bad_argument_json_is_refused_before_anything_starts(
    fixture_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _ = run("call", "fx/echo", "{text: oops}", "--config", str(fixture_config))
    assert status == 2
    assert "arguments are not JSON" in capsys.readouterr().err


def test_a_missing_config_file_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _ = run("tools", "--config", str(tmp_path / "absent.json"))
    assert status == 2
    err = capsys.readouterr().err
    assert "absent.json" in err
    assert "cannot read" in err


def test_bad_json_in_the_config_file_says_where(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {"a": {"command": "x",}}}')
    status, _ = run("check", "--config", str(path))
    assert status == 2
    assert "not JSON" in capsys.readouterr().err


def test_check_names_the_server_and_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_config(tmp_path, {"fx": {"command": "x", "idleTimeout": -5, "lazyStrat": True}})
    status, _ = run("check", "--config", str(path))
    assert status == 2
    err = capsys.readouterr().err
    assert "server 'fx': key 'idleTimeout'" in err
    assert "server 'fx': key 'lazyStrat': unknown key (did you mean 'lazyStart'?)" in err


def test_check_accepts_a_claude_desktop_file_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "time": {
                        "command": sys.executable,
                        "args": ["-m", "mcp_server_time"],
                        "autoApprove": ["get_current_time"],
                    },
                    "remote": {"url": "https://example.invalid/mcp"},
                },
                "globalShortcut": "Ctrl+Space",
                "preferences": {"quickEntryShortcut": "off", "menuBarEnabled": False},
            }
        )
    )
    status, out = run("check", "--config", str(path))
    assert status == 0
    assert f"time: stdio {sys.executable}" in out
    assert "remote: streamable-http https://example.invalid/mcp" in out
    assert "key 'autoApprove' is not used by mcp-actors and was ignored" in out
    assert "warning: top-level key 'globalShortcut' (Claude Desktop) is not used by mcp-actors" in out
    assert "warning: top-level key 'preferences' (Claude Desktop) is not used by mcp-actors" in out
    assert out.endswith("ok\n")


def test_check_says_a_vscode_input_reaches_the_server_as_written(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "inputs": [{"type": "promptString", "id": "token", "password": True}],
                "servers": {
                    "gh": {
                        "type": "http",
                        "url": "https://h/mcp",
                        "headers": {"Authorization": "Bearer ${input:token}"},
                    }
                },
            }
        )
    )
    status, out = run("check", "--config", str(path))
    assert status == 0
    assert (
        "warning: server 'gh': key 'headers.Authorization' holds ${input:token}, passed through as-is "
        "(only VS Code can prompt for inputs)\n"
    ) in out


def test_check_reports_a_command_that_does_not_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(
        tmp_path, {"ok": {"command": sys.executable}, "ghost": {"command": "no-such-mcp-server-xyz"}}
    )
    status, out = run("check", "--config", str(path))
    assert status == 1
    assert "ok\n" not in out
    assert capsys.readouterr().err == "error: server 'ghost': command not found: 'no-such-mcp-server-xyz'\n"


def test_check_finds_a_command_as_the_runtime_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "my-server").write_text("#!/bin/sh\n")
    (tools / "my-server").chmod(0o755)
    (tools / "plain-file").write_text("not a program\n")
    servers = {
        # On the server's own PATH, not this process's.
        "on_path": {"command": "my-server", "env": {"PATH": str(tools)}},
        # A relative path is relative to the server's cwd.
        "relative": {"command": "./tools/my-server", "cwd": str(tmp_path)},
        "absolute": {"command": str(tools / "my-server")},
    }
    status, out = run("check", "--config", str(write_config(tmp_path, servers)))
    assert (status, capsys.readouterr().err) == (0, "")
    assert out.endswith("ok\n")

    servers = {
        "not_on_its_path": {"command": "my-server", "env": {"PATH": str(tmp_path)}},
        "not_executable": {"command": str(tools / "plain-file")},
        "not_in_its_cwd": {"command": "./my-server", "cwd": str(tmp_path)},
    }
    status, _ = run("check", "--config", str(write_config(tmp_path, servers)))
    assert status == 1
    assert capsys.readouterr().err.splitlines() == [
        f"error: server 'not_on_its_path': command not found: 'my-server' (searched the server's PATH "
        f"{str(tmp_path)!r})",
        f"error: server 'not_executable': command not found or not executable: {str(tools / 'plain-file')!r}",
        "error: server 'not_in_its_cwd': command not found or not executable: './my-server'",
    ]


@pytest.mark.parametrize(
    "broken",
    [{"command": "no-such-mcp-server-xyz"}, {"command": sys.executable, "args": ["-c", "pass"]}],
    ids=["command-not-found", "exits-at-once"],
)
def test_tools_exits_non_zero_when_a_server_fails_and_lists_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], broken: dict[str, Any]
) -> None:
    path = write_config(tmp_path, {"fx": stdio_server(), "broken": {**broken, "restartBackoff": 5}})
    status, out = run("tools", "--config", str(path))
    assert status == 1
    names = [row.split()[0] for row in out.splitlines()[2:]]
    assert "fx/echo" in names
    assert not [n for n in names if n.startswith("broken/")]
    err = capsys.readouterr().err
    assert err.startswith("error: server 'broken' did not list its tools: ")
    assert "fx" not in err.replace("'broken'", "")
    if broken["command"] == "no-such-mcp-server-xyz":
        assert "no-such-mcp-server-xyz" in err


def test_version_prints_the_distribution_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"mcp-actors {importlib.metadata.version('mcp-actors')}\n"


def test_config_is_found_in_the_environment_then_the_folder_then_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MCP_ACTORS_CONFIG", raising=False)
    status, out = run("check")
    assert status == 0
    assert out.startswith("built-in default: 1 servers")
    write_config(tmp_path, {"here": {"command": "x"}})
    assert run("check")[1].startswith("mcp.json: 1 servers")
    elsewhere = write_config(tmp_path, {"a": {"command": "x"}, "b": {"command": "y"}}, "other.json")
    monkeypatch.setenv("MCP_ACTORS_CONFIG", str(elsewhere))
    assert run("check")[1].startswith(f"{elsewhere}: 2 servers")


def test_the_console_script_runs_on_the_built_in_default(tmp_path: Path) -> None:
    env = {**os.environ, "MCP_ACTORS_CONFIG": ""}
    script = Path(sys.executable).with_name("mcp-actors")
    done = subprocess.run(
        [str(script), "call", "demo/add", '{"a": 2, "b": 40}'],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "42.0"


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["frobnicate"])
    assert exited.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
