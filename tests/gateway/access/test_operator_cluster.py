"""The operator's page across replicas: each replica's page shows the servers it runs and the
requests it answered, under its own replica id; the credential the replicas share through Redis
never opens it, even under a policy that permits everyone.

Real ``mcp-actors serve --http ... --cluster`` processes on a real Redis, tokens from a real
issuer of ours, read as JSON (`test_operator_page` drives the page itself in a browser)."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.cluster.conftest import (  # noqa: F401 (fixtures)
    ReplicaFactory,
    RoundRobin,
    _module_redis,
    redis_client,
    redis_server,
    replicas,
)
from tests.conftest import wait_until
from tests.gateway.access.identity import SCOPE, auth_keys
from tests.gateway.conftest import WAIT, GatewayProcess, write_config
from tests.runtime.conftest import stdio_server
from tests.servers.oidc_issuer import OIDCIssuer

pytestmark = pytest.mark.timeout(180)

RESOURCE = "http://mcp-gateway.test/mcp"
"""The gateway's public URL: the load balancer's, the same for every replica."""
REPLICAS_SECRET = "mcp-actors:secret:replicas"

POLICY = """
@id("everyone") permit (principal, action, resource);
"""


def operator_json(replica: GatewayProcess, bearer: str) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", replica.port, timeout=WAIT)
    try:
        connection.request("GET", "/operator.json", headers={"Authorization": f"Bearer {bearer}"})
        response = connection.getresponse()
        body = response.read()
        return response.status, json.loads(body) if response.status == 200 else body
    finally:
        connection.close()


def test_each_replica_shows_its_own_servers_and_requests(
    tmp_path: Path,
    issuer: OIDCIssuer,
    redis_server: Any,  # noqa: F811 (the fixture)
    replicas: ReplicaFactory,  # noqa: F811 (the fixture)
) -> None:
    (tmp_path / "policy.cedar").write_text(POLICY)
    counter = stdio_server("counter_server", affinity="single")
    access = {"auth": auth_keys(issuer, RESOURCE), "policy": "policy.cedar"}
    config = write_config(tmp_path, {"counter": counter}, access=access)
    cluster = replicas(2, config, extra_args=("--lease-ttl", "2"))
    alice = issuer.mint(sub="alice", aud=RESOURCE, scope=SCOPE, groups=["dev"])

    async def calls() -> None:
        async with RoundRobin([r.url for r in cluster], token=alice) as clients:
            for _ in range(4):
                assert not (await clients.call_tool("counter__increment")).is_error

    anyio.run(calls)
    views: list[dict[str, Any]] = []
    for replica in cluster:

        def answered(replica: GatewayProcess = replica) -> bool:
            status, view = operator_json(replica, alice)
            calls = [r for r in view["audit"] if r["method"] == "tools/call"] if status == 200 else []
            return len(calls) == 2

        assert wait_until(answered, WAIT), operator_json(replica, alice)
        views.append(operator_json(replica, alice)[1])
    ids = [view["replica"] for view in views]
    assert None not in ids and len(set(ids)) == 2
    for view in views:
        # The requests each replica answered, under its own id, each once, as alice's.
        calls = [r for r in view["audit"] if r["method"] == "tools/call"]
        assert {(r["subject"], r["replica"], r["target"]) for r in calls} == {
            ("alice", view["replica"], "increment")
        }
    # The single-affinity server runs on one replica: its page has its pid and all four calls.
    [owner] = [view for view in views if view["servers"][0]["pid"] is not None]
    [row] = owner["servers"]
    assert (row["namespace"], row["state"], row["calls"]) == ("counter", "running", 4)
    assert owner["servers"][0]["p99Ms"] is not None
    # The replicas' shared credential: a machine's, never an operator, whatever the policy says.
    shared = redis_client(redis_server.url).get(REPLICAS_SECRET)
    assert shared, "the replicas share no credential"
    secret = shared.decode() if isinstance(shared, bytes) else str(shared)
    for replica in cluster:
        status, body = operator_json(replica, secret)
        assert status == 403, body
