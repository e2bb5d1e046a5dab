"""``mcp-actors tools`` (and ``resources``, ``prompts``) answer from the schema cache: a server
that has listed once is not started again to be listed; one never seen is started once to
learn it; ``--no-cache`` lists live and refreshes the cache."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from actors.cli import main
from tests.servers.http_server import REPO_ROOT

# Counts its starts in the file named by its first argument, then is the fixture server.
_COUNTING = (
    "import runpy, sys; open(sys.argv[1], 'a').write('started\\n'); "
    "sys.argv = [sys.argv[0], *sys.argv[2:]]; "
    "runpy.run_module('tests.servers.fixture_server', run_name='__main__')"
)


def _counted_server(marker: Path) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": ["-c", _COUNTING, str(marker), "--surface"],
        "cwd": str(REPO_ROOT),
    }


def _starts(marker: Path) -> int:
    return len(marker.read_text().splitlines()) if marker.exists() else 0


def _config(tmp_path: Path, names: list[str], builtin: bool = False) -> Path:
    servers = {name: _counted_server(tmp_path / f"{name}.starts") for name in names}
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps({"mcpServers": servers, "builtin": {"enabled": builtin, "workspace": str(tmp_path)}})
    )
    return path


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    status = main(list(argv), out=out)
    return status, out.getvalue()


def test_a_warm_cache_lists_tools_without_starting_the_server(tmp_path: Path, own_schema_cache: Path) -> None:
    config = _config(tmp_path, ["fx"], builtin=True)
    cold = run("tools", "--config", str(config))
    assert cold[0] == 0
    assert _starts(tmp_path / "fx.starts") == 1, "a server never seen is started once to learn it"
    assert list(own_schema_cache.glob("*.json")), "the cold listing did not fill the cache"
    names = [row.split()[0] for row in cold[1].splitlines()[2:]]
    assert "fx/echo" in names and "builtin/file-read" in names

    warm = run("tools", "--config", str(config))
    assert warm == cold, "the cached listing differs from the live one"
    warm_json = run("tools", "--config", str(config), "--json")
    assert warm_json[0] == 0
    assert {t["name"] for t in json.loads(warm_json[1])} == set(names)
    assert _starts(tmp_path / "fx.starts") == 1, "a cached server was started to be listed"


def test_no_cache_lists_live_and_refreshes_the_cache(tmp_path: Path, own_schema_cache: Path) -> None:
    config = _config(tmp_path, ["fx"])
    live = run("tools", "--config", str(config), "--no-cache")
    assert live[0] == 0 and "fx/echo" in live[1]
    assert _starts(tmp_path / "fx.starts") == 1
    assert list(own_schema_cache.glob("*.json")), "--no-cache did not refresh the cache"
    assert run("tools", "--config", str(config), "--no-cache") == live
    assert _starts(tmp_path / "fx.starts") == 2, "--no-cache answered from the cache"
    assert run("tools", "--config", str(config)) == live
    assert _starts(tmp_path / "fx.starts") == 2


def test_only_the_server_never_seen_starts(tmp_path: Path) -> None:
    run("tools", "--config", str(_config(tmp_path, ["seen"])))
    assert _starts(tmp_path / "seen.starts") == 1
    status, out = run("tools", "--config", str(_config(tmp_path, ["seen", "fresh"])))
    assert status == 0
    names = [row.split()[0] for row in out.splitlines()[2:]]
    assert "seen/echo" in names and "fresh/echo" in names
    assert _starts(tmp_path / "fresh.starts") == 1
    assert _starts(tmp_path / "seen.starts") == 1, "the cached server was started again"


def test_resources_and_prompts_come_from_the_cache_too(tmp_path: Path) -> None:
    config = _config(tmp_path, ["fx"])
    live = {
        what: run(what, "--config", str(config), "--json", "--no-cache") for what in ("resources", "prompts")
    }
    assert _starts(tmp_path / "fx.starts") == 2
    assert json.loads(live["resources"][1])["resources"], "the surface server lists resources"
    assert json.loads(live["prompts"][1]), "the surface server lists prompts"
    for what in ("resources", "prompts"):
        assert run(what, "--config", str(config), "--json") == live[what]
        assert run(what, "fx", "--config", str(config), "--json") == live[what]
    assert _starts(tmp_path / "fx.starts") == 2, "a cached server was started to be listed"


def test_an_unknown_namespace_is_still_not_found_with_a_warm_cache(tmp_path: Path) -> None:
    config = _config(tmp_path, ["fx"])
    run("tools", "--config", str(config))
    done = subprocess.run(
        [sys.executable, "-m", "actors", "prompts", "nope", "--config", str(config)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "not_found: no server for namespace 'nope' (known: fx)" in done.stderr
    assert _starts(tmp_path / "fx.starts") == 1


def test_a_warm_listing_imports_neither_the_runtime_nor_the_sdk(tmp_path: Path) -> None:
    config = _config(tmp_path, ["fx"], builtin=True)
    run("tools", "--config", str(config))
    code = (
        "import io, sys\n"
        "from actors.cli import main\n"
        f"status = main(['tools', '--config', {str(config)!r}], out=io.StringIO())\n"
        "heavy = {'mcp', 'anyio', 'pykka', 'opentelemetry'}\n"
        "loaded = {m.split('.')[0] for m in sys.modules}\n"
        "print(status, sorted(loaded & heavy), 'actors.runtime.facade' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "0 [] False"
    assert _starts(tmp_path / "fx.starts") == 1
