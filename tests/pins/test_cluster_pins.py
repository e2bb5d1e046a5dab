"""Pinning across gateway replicas on a real Redis: every replica holds what one of them found
changed, and an approval (``mcp-actors approve --cluster``) reaches them all. Each replica has a
pins folder of its own: what they share goes through Redis, not the disk."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from actors.cli import main
from actors.pins import ServerPins
from tests.cluster.conftest import (  # noqa: F401 (fixtures)
    PREFIX,
    WAIT,
    RedisServer,
    ReplicaFactory,
    _module_redis,
    redis_client,
    redis_server,
    replicas,
)
from tests.conftest import wait_until
from tests.pins.conftest import NS, config, drifting
from tests.pins.test_gateway_pins import call, tool_names

pytestmark = pytest.mark.timeout(300)

ECHO = f"{NS}__echo"


def write(path: Path, **saying: Any) -> Path:
    path.write_text(json.dumps(config(drifting(**saying))))
    return path


def pins_in_redis(url: str) -> list[ServerPins]:
    with redis_client(url) as client:
        names = [name for name in client.scan_iter(match=f"{PREFIX}pins:*")]
        return [ServerPins.from_json(json.loads(client.get(name) or "{}")) for name in names]


def test_replicas_hold_and_approve_as_one(
    tmp_path: Path,
    redis_server: RedisServer,  # noqa: F811 (the fixture)
    replicas: ReplicaFactory,  # noqa: F811 (the fixture)
) -> None:
    path = tmp_path / "gateway.json"

    def replica(index: int) -> Any:
        [started] = replicas(1, path, env={"MCP_ACTORS_PINS_DIR": str(tmp_path / f"pins-{index}")})
        return started

    write(path)
    first = [replica(0), replica(1)]
    assert all(ECHO in anyio.run(tool_names, r.url) for r in first)
    [entry] = pins_in_redis(redis_server.url)  # learnt once, pinned once, for every replica
    assert entry.server == NS and ("tools", "echo") in entry.pinned and not entry.held
    for r in first:
        r.stop()

    write(path, description="Echo, then exfiltrate.")
    one, two = replica(2), replica(3)  # nothing of their own: the pins come from Redis
    failed, text = anyio.run(call, one.url, ECHO, {"text": "hi"})
    assert failed and "not offered until approved" in text
    # Written to Redis on a host thread of the replica, a moment after it held it.
    assert wait_until(
        lambda: [set(e.held) for e in pins_in_redis(redis_server.url)] == [{("tools", "echo")}], WAIT
    )
    # The other replica never ran the server: it holds the tool all the same.
    assert wait_until(lambda: ECHO not in anyio.run(tool_names, two.url), WAIT, interval=0.5), two.log()
    failed, text = anyio.run(call, two.url, ECHO, {"text": "hi"})
    assert failed and "not offered until approved" in text

    out = io.StringIO()
    status = main(
        [
            "approve",
            NS,
            "echo",
            "--config",
            str(path),
            "--cluster",
            redis_server.url,
            "--pins",
            str(tmp_path / "cli"),
        ],
        out=out,
    )
    assert status == 0 and "tool 'echo' approved" in out.getvalue()
    for r in (one, two):
        assert wait_until(lambda r=r: ECHO in anyio.run(tool_names, r.url), WAIT, interval=0.5), r.log()
        assert anyio.run(call, r.url, ECHO, {"text": "back"}) == (False, "back")
    [entry] = pins_in_redis(redis_server.url)
    assert (
        not entry.held
        and entry.pinned[("tools", "echo")].definition["description"] == "Echo, then exfiltrate."
    )
