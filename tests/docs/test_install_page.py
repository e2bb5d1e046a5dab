"""The user's install: `make demo` installs the package alone (not the test extra), the README
opens with `make demo` and `make test` and points at docs/install.md, and every extra that page
names is one pyproject.toml defines."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "install.md"


def planned(target: str, venv: Path) -> list[str]:
    """The commands ``make TARGET`` would run with a fresh virtual environment at ``venv``."""
    make = shutil.which("make")
    if make is None:
        pytest.fail("make is needed: the README's first commands are make demo and make test")
    done = subprocess.run(
        [make, "--no-print-directory", "-n", target, f"VENV={venv}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.splitlines()


def test_make_demo_installs_the_package_alone(tmp_path: Path) -> None:
    commands = planned("demo", tmp_path / "venv")
    installs = [c for c in commands if "pip install" in c and "--upgrade pip" not in c]
    assert installs == [f"{tmp_path}/venv/bin/python -m pip install --quiet -e ."], commands
    assert commands[-1] == f"{tmp_path}/venv/bin/mcp-actors demo"


def test_make_test_still_installs_the_test_extra(tmp_path: Path) -> None:
    commands = planned("lint", tmp_path / "venv")
    assert f"{tmp_path}/venv/bin/python -m pip install --quiet -e '.[test]'" in commands, commands


def test_the_readme_opens_with_make_demo_and_make_test_and_links_the_install_page() -> None:
    readme = (ROOT / "README.md").read_text()
    first_block = readme.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()
    assert [line.split()[:2] for line in first_block] == [["make", "demo"], ["make", "test"]]
    assert "(docs/install.md)" in readme.split("## ", 1)[0]


def test_the_install_page_names_only_extras_that_exist() -> None:
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    page = PAGE.read_text()
    named = set(re.findall(r"\[([a-z-]+)\]'", page)) | set(re.findall(r"^\| `([a-z-]+)`", page, re.M))
    named |= {
        n
        for row in re.findall(r"^\| (`[a-z-]+`(?:, `[a-z-]+`)+) \|", page, re.M)
        for n in re.findall(r"`([a-z-]+)`", row)
    }
    assert named and named <= extras, named - extras
    for command in ("pip install", "pipx install", "uv tool install", '"serve", "--config"'):
        assert command in page, command
