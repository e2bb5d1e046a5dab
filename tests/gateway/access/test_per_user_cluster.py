"""Per-user servers across replicas (issue 23, item 5): copies are per replica, as for
``"affinity": "any"``. A user whose requests land on two replicas has a process of their own on
each, both filled in from their claims; another user never shares either.

Real ``mcp-actors serve --http ... --cluster`` processes on a real Redis, tokens from a real
issuer of ours; the replicas share one resource URL (a load balancer's) that tokens are for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.cluster.conftest import (  # noqa: F401 (fixtures)
    ReplicaFactory,
    RoundRobin,
    _module_redis,
    redis_server,
    replicas,
)
from tests.gateway.access.identity import SCOPE, auth_keys
from tests.gateway.conftest import write_config
from tests.runtime.conftest import stdio_server
from tests.servers.oidc_issuer import OIDCIssuer

pytestmark = pytest.mark.timeout(180)

RESOURCE = "http://mcp-gateway.test/mcp"


def test_each_replica_runs_a_users_own_copy_and_none_is_shared(
    tmp_path: Path,
    issuer: OIDCIssuer,
    replicas: ReplicaFactory,  # noqa: F811 (the fixture)
) -> None:
    me = {**stdio_server("per_user_server"), "env": {"GITHUB_USER": "${claim:login}"}, "affinity": "user"}
    config = write_config(tmp_path, {"me": me}, access={"auth": auth_keys(issuer, RESOURCE)})
    cluster = replicas(2, config)
    alice = issuer.mint(sub="alice", aud=RESOURCE, scope=SCOPE, login="alice-gh")
    bob = issuer.mint(sub="bob", aud=RESOURCE, scope=SCOPE, login="bob-gh")

    async def four_calls(token: str) -> list[dict[str, Any]]:
        async with RoundRobin([r.url for r in cluster], token=token) as clients:
            await clients.call_tool("me__increment")  # on replica 0
            results = [await clients.call_tool("me__whoami") for _ in range(4)]  # 1, 0, 1, 0
        assert not any(r.is_error for r in results), results
        return [json.loads(r.content[0].text) for r in results]  # type: ignore[union-attr]

    alices, bobs = anyio.run(four_calls, alice), anyio.run(four_calls, bob)
    assert {a["env"]["GITHUB_USER"] for a in alices} == {"alice-gh"}
    assert {b["env"]["GITHUB_USER"] for b in bobs} == {"bob-gh"}
    # One process per user on each replica: two for alice, two for bob, none the same.
    assert len({a["pid"] for a in alices}) == 2 and len({b["pid"] for b in bobs}) == 2
    assert not {a["pid"] for a in alices} & {b["pid"] for b in bobs}
    # Each replica's copy has its own state: the increment on replica 0 is not seen on replica 1.
    assert [a["count"] for a in alices] == [0, 1, 0, 1]
    for replica in cluster:
        assert len(replica.servers()) == 2, replica.log()
