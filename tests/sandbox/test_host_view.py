"""What a sandbox shows of the host: a program's own files, never a folder holding the home or
state folder, and the credentials covered wherever a shown folder holds them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from actors.sandbox.host_view import command_paths, secret_paths, system_entries, unsafe_to_share


def test_a_venv_python_shows_the_venv_and_its_base_python() -> None:
    shown = command_paths(sys.executable, [], "/", os.defpath, ())
    assert sys.prefix in shown
    assert any(sys.base_prefix == path or sys.base_prefix.startswith(path + "/") for path in shown), shown


def test_a_script_shows_its_folder_and_an_interpreter_script_its_interpreter(tmp_path: Path) -> None:
    tool = tmp_path / "tools" / "bin" / "serve"
    tool.parent.mkdir(parents=True)
    tool.write_text(f"#!{sys.executable}\n")
    script = tmp_path / "app" / "server.py"
    script.parent.mkdir()
    script.write_text("")
    shown = command_paths(str(tool), ["app/server.py", "--flag"], str(tmp_path), os.defpath, ())
    assert str(tmp_path / "tools") in shown  # prefix/bin/prog: its prefix
    assert str(script.parent) in shown
    assert sys.prefix in shown


def test_never_a_folder_that_holds_the_home_or_state_folder(tmp_path: Path) -> None:
    home = tmp_path / "home" / "u"
    home.mkdir(parents=True)
    shown = command_paths(
        sys.executable, ["/", str(tmp_path / "home"), str(home)], "/", os.defpath, (str(home),)
    )
    assert "/" not in shown and str(home) not in shown and str(tmp_path / "home") not in shown
    assert unsafe_to_share("/", ()) and unsafe_to_share(str(home), (str(home / "state"),))


def test_credentials_inside_a_shown_folder_are_covered(tmp_path: Path) -> None:
    home = tmp_path / "u"
    (home / ".ssh").mkdir(parents=True)
    (home / ".netrc").write_text("machine x password y")
    state = home / ".local" / "state" / "mcp-actors"
    state.mkdir(parents=True)
    dirs, files = secret_paths([str(home)], str(home), str(state), {})
    assert str(home / ".ssh") in dirs and str(state) in dirs
    assert str(home / ".netrc") in files
    dirs, files = secret_paths([str(tmp_path / "elsewhere")], str(home), str(state), {})
    assert str(home / ".ssh") not in dirs and str(home / ".netrc") not in files


def test_the_system_keeps_its_symlinks(tmp_path: Path) -> None:
    (tmp_path / "usr" / "bin").mkdir(parents=True)
    (tmp_path / "etc").mkdir()
    (tmp_path / "bin").symlink_to("usr/bin")
    entries = {entry.path: entry.symlink_to for entry in system_entries(str(tmp_path))}
    assert entries == {"/usr": None, "/bin": "usr/bin", "/etc": None}


def test_a_user_install_shows_its_bin_and_lib_not_all_of_local(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    program = tmp_path / ".local" / "bin" / "uvx"
    program.parent.mkdir(parents=True)
    program.write_bytes(b"\x7fELF")
    shown = command_paths(str(program), [], "/", os.defpath, ())
    assert shown == (str(tmp_path / ".local" / "bin"), str(tmp_path / ".local" / "lib"))


def test_a_node_package_shows_its_dependencies(tmp_path: Path) -> None:
    modules = tmp_path / "app" / "node_modules"
    script = modules / "@scope" / "server" / "dist" / "index.js"
    script.parent.mkdir(parents=True)
    script.write_text("")
    shim = modules / ".bin" / "server"
    shim.parent.mkdir()
    shim.symlink_to(script)
    assert str(modules) in command_paths("/usr/bin/node", [str(script)], "/", os.defpath, ())
    assert str(modules) in command_paths(str(shim), [], "/", os.defpath, ())
    own = tmp_path / "own"
    (own / "dist").mkdir(parents=True)
    (own / "package.json").write_text("{}")
    (own / "dist" / "main.mjs").write_text("")
    assert str(own) in command_paths("/usr/bin/node", ["own/dist/main.mjs"], str(tmp_path), os.defpath, ())
