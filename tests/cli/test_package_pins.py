"""Which packages a stdio server would install unpinned (`actors.cli.package_pins`), one row per
way a configuration writes its command, and the warnings ``check`` prints from them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from actors.cli.package_pins import package_pin_warnings, unpinned_packages
from actors.config import load_config

MCP_ACTORS = Path(sys.executable).with_name("mcp-actors")
SCOPED = "@modelcontextprotocol/server-filesystem"

# command, args, then (runner, spec, reason) of each package flagged; [] when nothing is.
CASES: list[tuple[str, list[str], list[tuple[str, str, str]]]] = [
    # npx -y installs without asking: any spec that is not an exact version is flagged.
    ("npx", ["-y", SCOPED, "/tmp"], [("npx -y", SCOPED, "no version")]),
    ("npx", ["--yes", "pkg"], [("npx -y", "pkg", "no version")]),
    ("npx", ["--yes=true", "pkg"], [("npx -y", "pkg", "no version")]),
    ("npx", ["-y", "pkg@latest"], [("npx -y", "pkg@latest", "latest")]),
    ("npx", ["-y", "pkg@^1"], [("npx -y", "pkg@^1", "range")]),
    ("npx", ["-y", "pkg@~1.2"], [("npx -y", "pkg@~1.2", "range")]),
    ("npx", ["-y", "pkg@>=1.0.0"], [("npx -y", "pkg@>=1.0.0", "range")]),
    ("npx", ["-y", "pkg@1"], [("npx -y", "pkg@1", "range")]),
    ("npx", ["-y", "pkg@1.x"], [("npx -y", "pkg@1.x", "range")]),
    ("npx", ["-y", "pkg@*"], [("npx -y", "pkg@*", "range")]),
    ("npx", ["-y", "pkg@next"], [("npx -y", "pkg@next", "dist-tag")]),
    ("npx", ["-y", f"{SCOPED}@beta"], [("npx -y", f"{SCOPED}@beta", "dist-tag")]),
    ("npx", ["-y", "pkg@"], [("npx -y", "pkg@", "no version")]),
    ("npx", ["-y", "--package", "pkg", "pkg-bin"], [("npx -y", "pkg", "no version")]),
    ("npx", ["-y", "--package=pkg@latest", "pkg-bin"], [("npx -y", "pkg@latest", "latest")]),
    ("npx", ["-y", "--registry", "https://r.example", "pkg"], [("npx -y", "pkg", "no version")]),
    ("npx", ["-y", "--", "pkg"], [("npx -y", "pkg", "no version")]),
    ("npx", ["-y", "alias@npm:real@next"], [("npx -y", "alias@npm:real@next", "dist-tag")]),
    # ... and an exact version is not, whatever follows it (the server's own arguments).
    ("npx", ["-y", f"{SCOPED}@2025.8.21", "/tmp"], []),
    ("npx", ["-y", "pkg@1.2.3"], []),
    ("npx", ["-y", "pkg@v1.2.3"], []),
    ("npx", ["-y", "pkg@1.2.3-rc.1+build.5"], []),
    ("npx", ["-y", "pkg@1.2.3", "--flag", "other@latest"], []),
    ("npx", ["-y", "alias@npm:real@1.2.3"], []),
    # Not registry packages: not judged.
    ("npx", ["-y", "./local-server"], []),
    ("npx", ["-y", "/abs/server"], []),
    ("npx", ["-y", "file:../server"], []),
    ("npx", ["-y", "github:owner/repo"], []),
    ("npx", ["-y", "owner/repo"], []),
    ("npx", ["-y", "https://example.com/pkg-1.0.0.tgz"], []),
    # npx without -y runs a package installed in the project as it is: only @latest is flagged.
    ("npx", ["pkg"], []),
    ("npx", ["pkg@^1"], []),
    ("npx", ["pkg@latest"], [("npx", "pkg@latest", "latest")]),
    # The same runner written otherwise.
    ("/usr/local/bin/npx", ["-y", "pkg"], [("npx -y", "pkg", "no version")]),
    ("C:\\Program Files\\nodejs\\npx.cmd", ["-y", "pkg"], [("npx -y", "pkg", "no version")]),
    ("cmd", ["/c", "npx", "-y", "pkg"], [("npx -y", "pkg", "no version")]),
    ("npm", ["exec", "--yes", "--", "pkg"], [("npm exec -y", "pkg", "no version")]),
    ("npm", ["x", "pkg@latest"], [("npm x", "pkg@latest", "latest")]),
    ("npm", ["install", "pkg"], []),
    # pnpm dlx and yarn dlx always install; bunx runs a local package first, so @latest only.
    ("pnpm", ["dlx", "pkg"], [("pnpm dlx", "pkg", "no version")]),
    ("pnpm", ["dlx", "pkg@latest"], [("pnpm dlx", "pkg@latest", "latest")]),
    ("pnpm", ["dlx", "pkg@1.2.3"], []),
    ("pnpx", ["pkg"], [("pnpm dlx", "pkg", "no version")]),
    ("yarn", ["dlx", "-p", "pkg@next", "bin"], [("yarn dlx", "pkg@next", "dist-tag")]),
    ("bunx", ["pkg"], []),
    ("bunx", ["pkg@latest"], [("bunx", "pkg@latest", "latest")]),
    ("bun", ["x", "--bun", "pkg@latest"], [("bunx", "pkg@latest", "latest")]),
    # uvx installs without asking: anything but one exact version is flagged.
    ("uvx", ["mcp-server-time"], [("uvx", "mcp-server-time", "no version")]),
    ("uvx", ["mcp-server-time", "--local-timezone", "UTC"], [("uvx", "mcp-server-time", "no version")]),
    ("uvx", ["mcp-server-time@latest"], [("uvx", "mcp-server-time@latest", "latest")]),
    ("uvx", ["mcp-server-time>=0.6"], [("uvx", "mcp-server-time>=0.6", "range")]),
    ("uvx", ["mcp-server-time~=0.6.2"], [("uvx", "mcp-server-time~=0.6.2", "range")]),
    ("uvx", ["mcp-server-time==0.6.*"], [("uvx", "mcp-server-time==0.6.*", "range")]),
    ("uvx", ["pkg[cli]"], [("uvx", "pkg[cli]", "no version")]),
    ("uvx", ["--python", "3.12", "pkg"], [("uvx", "pkg", "no version")]),
    ("uvx", ["--from", "mcp-server-git", "mcp-server-git"], [("uvx", "mcp-server-git", "no version")]),
    ("uv", ["tool", "run", "pkg"], [("uv tool run", "pkg", "no version")]),
    ("pipx", ["run", "pkg"], [("pipx run", "pkg", "no version")]),
    ("pipx", ["run", "--spec", "pkg==1.0", "pkg-bin"], []),
    ("uvx", ["mcp-server-time==0.6.2"], []),
    ("uvx", ["mcp-server-time===0.6.2"], []),
    ("uvx", ["mcp-server-time@0.6.2"], []),
    ("uvx", ["pkg[cli]==1.0"], []),
    ("uvx", ["--from", "mcp-server-git==2025.1.14", "mcp-server-git"], []),
    ("uvx", ["--from", "git+https://github.com/owner/repo", "server"], []),
    ("uvx", ["--from", "pkg @ https://example.com/pkg-1.0.tar.gz", "server"], []),
    ("uvx", ["./local"], []),
    # Not a package runner at all.
    ("node", ["server.js", "pkg@latest"], []),
    ("python", ["-m", "server"], []),
    ("mcp-server-time", [], []),
]


@pytest.mark.parametrize(("command", "args", "flagged"), CASES, ids=[" ".join([c, *a]) for c, a, _ in CASES])
def test_unpinned_packages(command: str, args: list[str], flagged: list[tuple[str, str, str]]) -> None:
    found = unpinned_packages(command, args)
    assert [(u.runner, u.spec, u.reason) for u in found] == flagged


@pytest.mark.parametrize(
    ("command", "args", "example"),
    [
        ("npx", ["-y", SCOPED], f"{SCOPED}@1.2.3"),
        ("npx", ["-y", "pkg@latest"], "pkg@1.2.3"),
        ("uvx", ["pkg[cli]>=1"], "pkg[cli]==1.2.3"),
    ],
)
def test_the_warning_names_the_server_the_package_and_a_pinned_spec(
    command: str, args: list[str], example: str
) -> None:
    (package,) = unpinned_packages(command, args)
    text = package.text("fs")
    assert text.startswith(f"server 'fs': {package.runner} {package.spec!r} ")
    assert text.endswith(f"pin a version, e.g. {example!r}")


def test_warnings_come_per_stdio_server_in_order() -> None:
    servers: dict[str, Any] = {
        "a": {"command": "npx", "args": ["-y", "one", "--", "x"]},
        "pinned": {"command": "npx", "args": ["-y", "two@2.0.0"]},
        "remote": {"url": "https://example.com/mcp"},
        "b": {"command": "uvx", "args": ["three@latest"]},
    }
    config = load_config({"mcpServers": servers, "builtin": {"enabled": False}})
    warnings = package_pin_warnings(config.servers.values())
    assert [w.split(":")[0] for w in warnings] == ["server 'a'", "server 'b'"]
    assert "'one' names no version" in warnings[0]
    assert "'three@latest' asks for @latest" in warnings[1]


@pytest.mark.parametrize(
    ("spec", "warned"), [(SCOPED, True), (f"{SCOPED}@latest", True), (f"{SCOPED}@2025.8.21", False)]
)
def test_check_prints_the_warning_for_an_unpinned_npx_entry_only(
    tmp_path: Path, spec: str, warned: bool
) -> None:
    """``mcp-actors check`` as a user runs it, on an ``npx -y`` entry (an ``npx`` of the test's
    own, so that the command exists and nothing is installed)."""
    npx = tmp_path / "bin" / "npx"
    npx.parent.mkdir()
    npx.write_text("#!/bin/sh\nexit 0\n")
    npx.chmod(0o755)
    config = tmp_path / "mcp.json"
    entry = {"command": str(npx), "args": ["-y", spec, str(tmp_path)]}
    config.write_text(json.dumps({"mcpServers": {"fs": entry}}))
    env = {k: v for k, v in os.environ.items() if k != "MCP_ACTORS_CONFIG"}
    done = subprocess.run(
        [str(MCP_ACTORS), "check", "--config", str(config)],
        check=False,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    warnings = [line for line in done.stdout.splitlines() if line.startswith("warning: server 'fs': npx -y")]
    if warned:
        [line] = warnings
        assert line.startswith(f"warning: server 'fs': npx -y {spec!r} "), done.stdout
        assert line.endswith(f"pin a version, e.g. '{SCOPED}@1.2.3'"), done.stdout
    else:
        assert warnings == [], done.stdout
    # A warning fails nothing: the configuration is valid and the command exists.
    assert (done.returncode, done.stdout.splitlines()[-1]) == (0, "ok"), done.stdout + done.stderr
