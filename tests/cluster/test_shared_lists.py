"""The schema cache shared through Redis: two replicas, neither of which has seen the five servers
before, list the same tools, resources and prompts; each server was started once in the whole
cluster to learn its lists (each start appends a line to a file of its own); listing on every
replica afterwards starts nothing; Redis holds one entry per server, and the replicas' members.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from actors.cluster.affinity import lease_name
from actors.cluster.lease import Leases
from actors.cluster.lease import redis_client as lease_client
from actors.cluster.link import RedisLink
from actors.cluster.replica import ClusterReplica
from actors.cluster.schema_store import RedisSchemaStore
from actors.config import RuntimeConfig, load_config
from actors.mcp.catalog import Catalog
from actors.mcp.config import ServerConfig
from actors.runtime.schema_cache import SchemaCache
from actors.tools import ToolSpec
from tests.cluster.conftest import PREFIX, WAIT, RedisServer, ReplicaFactory, redis_client
from tests.conftest import wait_until
from tests.gateway.conftest import serve_args, write_config
from tests.harness import forkserver
from tests.runtime.conftest import ROOT

SERVERS = [f"s{i}" for i in range(5)]

pytestmark = pytest.mark.timeout(180)


def counted(markers: Path, namespace: str, *args: str) -> dict[str, Any]:
    """The fixture server, by a shell that first appends a line to ``markers/starts-<ns>``."""
    server = shlex.join(forkserver.python_module("tests.servers.fixture_server", "--name", namespace, *args))
    starts = shlex.quote(str(markers / f"starts-{namespace}"))
    return {"command": "/bin/sh", "args": ["-c", f"echo $$ >> {starts}; exec {server}"], "cwd": str(ROOT)}


def starts(markers: Path) -> dict[str, int]:
    """How many times each server was started."""
    return {
        ns: len((markers / f"starts-{ns}").read_text().split()) if (markers / f"starts-{ns}").exists() else 0
        for ns in SERVERS
    }


async def lists_of(url: str, era: str) -> dict[str, Any]:
    async with Client(url, mode=era) as client:  # type: ignore[arg-type]
        tools = (await client.list_tools()).tools
        resources = (await client.list_resources()).resources
        prompts = (await client.list_prompts()).prompts
    return {
        "tools": sorted(json.dumps(t.model_dump(mode="json"), sort_keys=True) for t in tools),
        "resources": sorted(r.uri for r in resources),
        "prompts": sorted(p.name for p in prompts),
    }


def test_replicas_share_the_lists_and_a_never_seen_server_starts_once_in_the_cluster(
    tmp_path: Path, redis_server: RedisServer, replicas: ReplicaFactory
) -> None:
    markers = tmp_path / "markers"
    markers.mkdir(exist_ok=True)
    config = write_config(tmp_path, {ns: counted(markers, ns, "--surface") for ns in SERVERS})

    cluster = replicas(2, config)  # two show what is shared; three add nothing to the claim

    # Every replica was ready only once every server's lists were known somewhere in the cluster.
    assert starts(markers) == dict.fromkeys(SERVERS, 1)
    with redis_client(redis_server.url) as client:
        entries = sorted(client.scan_iter(match=f"{PREFIX}schema:*"))
        members = {client.hget(key, "address") for key in client.scan_iter(match=f"{PREFIX}member:*")}
    assert len(entries) == len(SERVERS), entries
    assert members == {replica.url for replica in cluster}

    seen = [anyio.run(lists_of, replica.url, era) for replica in cluster for era in ("legacy", "2026-07-28")]
    assert len(seen[0]["tools"]) >= len(SERVERS) * 2, seen[0]
    assert seen[0]["resources"] and seen[0]["prompts"], seen[0]
    for other in seen[1:]:
        assert other == seen[0]
    # Lists are answered from the shared cache: nothing started for them, anywhere.
    assert starts(markers) == dict.fromkeys(SERVERS, 1)
    assert all(not replica.servers() for replica in cluster)


def test_a_server_published_between_a_replicas_pull_and_its_claim_is_not_learnt_again(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    config = load_config({"mcpServers": {"s0": counted(markers, "s0")}})
    late = ClusterReplica.start(redis_server.url, "http://late/mcp", cache_folder=tmp_path / "late")
    first = ClusterReplica.start(redis_server.url, "http://first/mcp", cache_folder=tmp_path / "first")
    pull = late.store.pull
    pulls: list[list[str]] = []

    def first_learns_meanwhile(configs: Any, timeout: float) -> list[ServerConfig]:
        # `late` found s0 unknown; before it claims s0, `first` claims it, learns it, publishes
        # it and gives its claim back (on its link's thread, after the publish).
        unknown = pull(configs, timeout)
        pulls.append([server.name for server in unknown])
        if len(pulls) == 1:
            learnt_by(first, config)
        return unknown

    late.store.pull = first_learns_meanwhile  # type: ignore[method-assign]
    try:
        learnt_by(late, config)
    finally:
        late.close()
        first.close()
    # Its claim won, `late` read the entry `first` published, instead of starting s0 again.
    assert starts(markers)["s0"] == 1
    assert pulls == [["s0"], []]  # found unknown, then (once claimed) learnt elsewhere
    assert late.store.stored(config.servers["s0"])
    with redis_client(redis_server.url) as client:
        assert not list(client.scan_iter(match=f"{PREFIX}learning:*"))


def learnt_by(replica: ClusterReplica, config: RuntimeConfig) -> None:
    """``replica`` learns ``config``'s servers, and its claims are given back."""
    replica.prepare(config, WAIT)
    replica.link.call(lambda client: None, WAIT)  # its thread ran the releases queued before


def test_cluster_options_need_http_and_a_redis_url(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"s0": counted(tmp_path, "s0")})
    cases = {
        ("--cluster", "redis://127.0.0.1:6379/0"): "--cluster and --advertise need --http HOST:PORT",
        ("--http", "127.0.0.1:1", "--advertise", "http://x/mcp"): "--advertise is for a replica",
        ("--http", "127.0.0.1:1", "--cluster", "http://127.0.0.1:6379"): "wants redis://HOST:PORT/DB",
    }
    for args, said in cases.items():
        done = subprocess.run(
            serve_args(config, *args), capture_output=True, text=True, timeout=WAIT, cwd=ROOT, check=False
        )
        assert done.returncode == 2 and said in done.stderr, (args, done.returncode, done.stderr)
    assert not (tmp_path / "starts-s0").exists()


def test_a_never_seen_single_affinity_server_is_learnt_only_under_its_lease(
    tmp_path: Path, redis_server: RedisServer, replicas: ReplicaFactory
) -> None:
    markers = tmp_path / "markers"
    markers.mkdir(exist_ok=True)
    servers = {ns: {**counted(markers, ns), "affinity": "single"} for ns in SERVERS[:2]}
    config = write_config(tmp_path, servers)
    held = next(iter(load_config(config).servers.values()))
    # Another replica runs s0: its lease is held (and renewed) in Redis.
    with Leases(lease_client(redis_server.url), "replica-elsewhere", 5.0) as elsewhere:
        # A Redis younger than a quiet period, just emptied, asks every taker to wait first
        # (`actors.cluster.lease_script`): claimed again until it is this replica's.
        assert wait_until(lambda: elsewhere.claim(lease_name(held)).result(WAIT).mine, WAIT)
        (replica,) = replicas(1, config)
        # s0 was not started here to learn it; s1, whose lease was free, was (under the lease,
        # given back once learnt).
        assert starts(markers) == {"s0": 0, "s1": 1, **dict.fromkeys(SERVERS[2:], 0)}
        assert elsewhere.holds(lease_name(held))
    with redis_client(redis_server.url) as client:
        assert not list(client.scan_iter(match=f"{PREFIX}lease:s1:*"))
    assert not replica.servers()


def test_schema_refresh_reads_only_what_changed_and_resyncs_when_redis_lost_its_data(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    mirrored = {f"m{i}": {"command": sys.executable, "args": ["-c", f"print({i})"]} for i in range(30)}
    configs = list(load_config({"mcpServers": mirrored}).servers.values())
    writer_link, reader_link = RedisLink(redis_server.url).start(), RedisLink(redis_server.url).start()
    try:
        writer = RedisSchemaStore(writer_link, tmp_path / "writer", refresh=3600.0)
        reader = RedisSchemaStore(reader_link, tmp_path / "reader", refresh=0.05, full_resync=3600.0)
        for config in configs:
            writer.save(config, (), Catalog())
        writer.flush(WAIT)
        assert reader.pull(configs, WAIT) == []
        with redis_client(redis_server.url) as look:

            def calls(stats: dict[str, Any], command: str) -> int:
                return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))

            def refreshes_after(stats: dict[str, Any], count: int) -> bool:
                return calls(stats, "get") >= count

            # Once the reader has read every change, its refreshes read the version only.
            assert wait_until(
                lambda: (
                    reader.changes.seen == int(look.get(f"{PREFIX}schema-version") or 0)
                    and writer.changes.next_full > 0
                ),
                WAIT,
            )
            look.config_resetstat()
            assert wait_until(lambda: refreshes_after(look.info("commandstats"), 5), WAIT)
            idle = look.info("commandstats")
            assert calls(idle, "mget") == 0 and calls(idle, "zrangebyscore") == 0, idle
            # One entry changes: only it is read.
            changed = configs[7]
            look.config_resetstat()
            writer.save(changed, (ToolSpec(name="t", description="new"),), Catalog())
            writer.flush(WAIT)
            wanted = (tmp_path / "writer" / f"{SchemaCache.key(changed)}.json").read_text()
            path = tmp_path / "reader" / f"{SchemaCache.key(changed)}.json"
            assert wait_until(lambda: path.read_text() == wanted, WAIT)
            busy = look.info("commandstats")
            assert calls(busy, "mget") == 1 and calls(busy, "zrangebyscore") == 1, busy
            # Redis lost its data: the reader notices (the version went back) and writes its
            # entries back.
            look.flushdb()
            assert wait_until(lambda: look.exists(*(reader._key(c) for c in configs)) == 30, WAIT)
    finally:
        writer_link.close()
        reader_link.close()
