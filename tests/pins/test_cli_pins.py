"""``mcp-actors approve`` and ``mcp-actors pins held|write|check``, run in-process on real servers."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from actors import Runtime
from actors.cli import main
from actors.pins import FilePinStore, pin_key
from tests.pins.conftest import NS, config, drifting


@pytest.fixture(autouse=True)
def own_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The command's schema cache and pins in the test's own folder."""
    monkeypatch.setenv("MCP_ACTORS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MCP_ACTORS_PINS_DIR", str(tmp_path / "pins"))
    return tmp_path


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    status = main(list(argv), out=out)
    return status, out.getvalue()


def config_file(folder: Path, entry: dict[str, Any], **server: Any) -> str:
    path = folder / "mcp.json"
    path.write_text(json.dumps(config(entry, **server)))
    return str(path)


def test_pins_check_passes_then_exits_1_with_the_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pins = str(tmp_path / "ci-pins")
    written, out = run("pins", "write", "--config", config_file(tmp_path, drifting()), "--pins", pins)
    assert written == 0, out
    assert out == f"{NS}: pinned 3 tools, 1 prompts, 1 resource templates\n"
    assert run("pins", "check", "--config", config_file(tmp_path, drifting()), "--pins", pins) == (
        0,
        "pins check: every definition of 1 servers is its pin\n",
    )
    drifted = config_file(tmp_path, drifting(description="Echo, and more.", read_only=False, extra="fresh"))
    capsys.readouterr()
    status, out = run("pins", "check", "--config", drifted, "--pins", pins)
    assert status == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"{NS}: tool 'echo' changed, sha256:")
    assert lines[1:] == [
        "  annotations.readOnlyHint: true -> false",
        '  description: "Echo the text." -> "Echo, and more."',
        f"{NS}: tool 'fresh' is new (not pinned)",
    ]
    assert capsys.readouterr().err == "pins check: 1 changed, 1 not pinned\n"
    # The check changes nothing: its pins are still those written.
    assert run("pins", "check", "--config", config_file(tmp_path, drifting()), "--pins", pins)[0] == 0


def test_a_server_that_cannot_list_fails_the_check(tmp_path: Path) -> None:
    broken = {
        "mcpServers": {"gone": {"command": str(tmp_path / "no-such-program")}},
        "builtin": {"enabled": False},
    }
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    assert run("pins", "check", "--config", str(tmp_path / "broken.json"))[0] == 2


def test_approve_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = FilePinStore(tmp_path / "pins")
    with Runtime.start(config(drifting()), pins=store) as rt:
        assert f"{NS}/echo" in {s.name for s in rt.list_tools(timeout=60)}
    with Runtime.start(config(drifting(description="Changed.")), pins=store) as rt:
        assert f"{NS}/echo" not in {s.name for s in rt.list_tools(timeout=60)}
    path = config_file(tmp_path, drifting(description="Changed."))
    held = run("pins", "held", "--config", path)
    digest = held_digest(store, rt)
    assert held == (
        0,
        f"{NS}: tool 'echo' is held (changed since it was pinned), {digest}\n"
        '  description: "Echo the text." -> "Changed."\n',
    )
    status, _ = run("approve", NS, "nothing", "--config", path)
    assert status == 1
    assert "holds nothing named nothing" in capsys.readouterr().err
    assert run("approve", NS, "echo", "--config", path) == (
        0,
        f'{NS}: tool \'echo\' approved, {digest}\n  description: "Echo the text." -> "Changed."\n',
    )
    assert run("pins", "held", "--config", path) == (0, "nothing is held\n")
    assert run("approve", NS, "--config", path) == (0, f"{NS}: nothing is held\n")
    # The command's own listing (from the schema cache, and live) offers it now.
    status, out = run("tools", "--config", path)
    assert status == 0 and f"{NS}/echo" in out
    kept = store.load(pin_key(rt.config.servers[NS]))
    assert kept is not None and kept.pinned[("tools", "echo")].definition["description"] == "Changed."


def held_digest(store: FilePinStore, rt: Runtime) -> str:
    kept = store.load(pin_key(rt.config.servers[NS]))
    assert kept is not None
    return kept.held["tools", "echo"].short


def test_approve_bound_to_a_digest_refuses_a_definition_changed_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The operator looks at what is held, then approves it; if the server changed the tool
    again in between, approving the name alone would offer what nobody looked at. Bound to the
    digest shown, the approval refuses, and the newer definition stays held."""
    store = FilePinStore(tmp_path / "pins")
    with Runtime.start(config(drifting()), pins=store) as rt:
        rt.list_tools(timeout=60)
    with Runtime.start(config(drifting(description="Looked at.")), pins=store) as rt:
        rt.list_tools(timeout=60)
    shown = held_digest(store, rt)
    with Runtime.start(config(drifting(description="Changed again.")), pins=store) as rt:
        rt.list_tools(timeout=60)
    now = held_digest(store, rt)
    assert now != shown
    path = config_file(tmp_path, drifting(description="Changed again."))
    capsys.readouterr()
    assert run("approve", NS, f"echo@{shown}", "--config", path) == (1, "")
    err = capsys.readouterr().err
    assert err.startswith("error: validation:") and f"echo (held now as {now})" in err
    assert held_digest(store, rt) == now
    status, out = run("approve", NS, f"echo@{now}", "--config", path)
    assert status == 0 and out.startswith(f"{NS}: tool 'echo' approved, {now}")
    assert run("pins", "held", "--config", path) == (0, "nothing is held\n")


def test_the_cached_listing_leaves_out_what_is_held(tmp_path: Path) -> None:
    path = config_file(tmp_path, drifting())
    assert f"{NS}/echo" in run("tools", "--config", path)[1]  # live: learnt, cached, pinned
    changed = config_file(tmp_path, drifting(description="Changed."))
    assert f"{NS}/echo" not in run("tools", "--no-cache", "--config", changed)[1]  # live: held
    status, out = run("tools", "--config", changed)  # from the cache: still left out
    assert status == 0 and f"{NS}/steady" in out and f"{NS}/echo" not in out
    assert run("call", f"{NS}/echo", '{"text": "x"}', "--config", changed)[0] == 1


def test_approve_names_an_unknown_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("approve", "nope", "--config", config_file(tmp_path, drifting()))[0] == 1
    assert "no server 'nope'" in capsys.readouterr().err
