"""`FilePinStore`: entries keyed by the server's identity, changes applied under a lock."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from actors import load_config
from actors.mcp.config import ServerConfig
from actors.pins import FilePinStore, Pin, PinChange, ServerPins, pin_key
from tests.servers.http_server import REPO_ROOT

V1 = {"name": "echo", "description": "Echo."}
V2 = {"name": "echo", "description": "Echo more."}


def server(**entry: object) -> ServerConfig:
    return load_config({"mcpServers": {"s": {"command": "srv", **entry}}}, environ={}).servers["s"]


def test_the_key_is_the_servers_identity_without_secrets_or_filters() -> None:
    base = pin_key(server(args=["a"], env={"TOKEN": "one"}))
    assert pin_key(server(args=["a"], env={"TOKEN": "two"})) == base  # a secret's value
    assert pin_key(server(args=["a"], env={"TOKEN": "one"}, tools={"include": ["x*"]})) == base
    assert pin_key(server(args=["a"], env={"TOKEN": "one"}, idleTimeout=5, pin="warn")) == base
    assert pin_key(server(args=["b"], env={"TOKEN": "one"})) != base
    assert pin_key(server(args=["a"], env={"OTHER": "one"})) != base
    assert "one" not in base


def test_changes_are_applied_to_the_entry_on_disk(tmp_path: Path) -> None:
    store = FilePinStore(tmp_path / "pins")
    assert store.load("k") is None and store.signature("k") is None
    first = store.apply("k", "ns", PinChange(pin={("tools", "echo"): Pin.of(V1, 1.0)}))
    # Another writer (another store object: another process) approves something held meanwhile.
    other = FilePinStore(tmp_path / "pins")
    other.apply("k", "ns", PinChange(hold={("tools", "echo"): Pin.of(V2, 2.0)}))
    after = store.apply("k", "ns", PinChange(pin={("tools", "more"): Pin.of(V1, 3.0)}))
    assert set(after.pinned) == {("tools", "echo"), ("tools", "more")} and set(after.held) == {
        ("tools", "echo")
    }
    assert store.load("k") == after != first
    assert json.loads((tmp_path / "pins" / "k.json").read_text())["server"] == "ns"
    assert store.find("ns") == ["k"] and store.find("other") == []
    assert not list((tmp_path / "pins").glob(".tmp-*"))


def test_the_signature_follows_the_file(tmp_path: Path) -> None:
    store = FilePinStore(tmp_path)
    store.apply("k", "ns", PinChange(pin={("tools", "echo"): Pin.of(V1, 1.0)}))
    before = store.signature("k")
    store.apply("k", "ns", PinChange(repin={("tools", "echo"): Pin.of(V2, 1.0)}))
    assert store.signature("k") != before
    unchanged = store.signature("k")
    store.write("k", store.load("k") or ServerPins())  # the same text: not rewritten
    assert store.signature("k") == unchanged


def test_a_broken_entry_counts_as_empty_and_is_kept_aside(tmp_path: Path) -> None:
    store = FilePinStore(tmp_path)
    (tmp_path / "k.json").write_text("{not json")
    assert store.load("k") is None
    store.apply("k", "ns", PinChange(pin={("tools", "echo"): Pin.of(V1, 1.0)}))
    assert store.load("k") is not None
    assert [p.name.split("-")[0] for p in tmp_path.glob("k.json.broken-*")] == ["k.json.broken"]


_PIN_MANY = """
import sys
from actors.pins import FilePinStore, Pin, PinChange
store, start = FilePinStore(sys.argv[1]), int(sys.argv[2])
for i in range(start, start + 20):
    store.apply("k", "ns", PinChange(pin={("tools", f"t{i}"): Pin.of({"name": f"t{i}"}, 1.0)}))
"""


def test_writers_in_two_processes_lose_nothing(tmp_path: Path) -> None:
    workers = [
        subprocess.Popen([sys.executable, "-c", _PIN_MANY, str(tmp_path), str(start)], cwd=REPO_ROOT)
        for start in (0, 100)
    ]
    for worker in workers:
        assert worker.wait(60) == 0
    pins = FilePinStore(tmp_path).load("k")
    assert pins is not None and len(pins.pinned) == 40
