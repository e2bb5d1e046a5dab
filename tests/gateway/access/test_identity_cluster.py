"""Identity across replicas (issue 23, item 1): behind OAuth, a replica that forwards a request
for a single-affinity server to the replica running it proves it is a replica (a credential the
replicas share through Redis) and carries its caller, whom the owner's policy decides for.

Real ``mcp-actors serve --http ... --cluster`` processes on a real Redis, tokens from a real
issuer of ours; the replicas share one resource URL (a load balancer's) that tokens are for."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from tests.cluster.conftest import (  # noqa: F401 (fixtures)
    ReplicaFactory,
    RoundRobin,
    _module_redis,
    redis_server,
    replicas,
)
from tests.gateway.access.identity import SCOPE, auth_keys, challenge, post
from tests.gateway.conftest import write_config
from tests.runtime.conftest import stdio_server
from tests.servers.oidc_issuer import OIDCIssuer

pytestmark = pytest.mark.timeout(180)

RESOURCE = "http://mcp-gateway.test/mcp"
"""The gateway's public URL: the load balancer's, the same for every replica."""


POLICY = """
@id("dev-counts") permit (principal in Group::"dev", action in Action::"use", resource in Server::"counter");
"""


def test_a_call_forwarded_to_the_owner_replica_authenticates_as_its_caller(
    tmp_path: Path,
    issuer: OIDCIssuer,
    replicas: ReplicaFactory,  # noqa: F811 (the fixture)
) -> None:
    (tmp_path / "policy.cedar").write_text(POLICY)
    counter = stdio_server("counter_server", affinity="single")
    access = {"auth": auth_keys(issuer, RESOURCE), "policy": "policy.cedar"}
    config = write_config(tmp_path, {"counter": counter}, access=access)
    cluster = replicas(2, config, extra_args=("--lease-ttl", "2"))
    alice = issuer.mint(sub="alice", aud=RESOURCE, scope=SCOPE, groups=["dev"])
    bob = issuer.mint(sub="bob", aud=RESOURCE, scope=SCOPE, groups=["ops"])

    async def calls() -> None:
        async with RoundRobin([r.url for r in cluster], token=alice) as clients:
            results = [await clients.call_tool("counter__increment") for _ in range(6)]
            assert not any(r.is_error for r in results), results
            # One process in the cluster counted all six: half of them were forwarded to it, and
            # the owner's policy let them through as alice's (a replica of its own is no "dev").
            counts = [(r.structured_content or {})["count"] for r in results]
            assert counts == list(range(1, 7)), counts
            assert len({(r.structured_content or {})["pid"] for r in results}) == 1
        async with RoundRobin([r.url for r in cluster], token=bob) as clients:
            for _ in cluster:  # not a tool bob may see, on either replica
                with pytest.raises(MCPError, match="Unknown tool"):
                    await clients.call_tool("counter__increment")

    anyio.run(calls)
    running = [r for r in cluster if r.servers()]
    assert len(running) == 1
    for replica in cluster:
        status, headers, _ = post(replica, None)
        assert status == 401 and challenge(headers["www-authenticate"])["scope"] == SCOPE
