"""Identity across replicas (issue 23, item 1): behind OAuth, a replica that forwards a request
for a single-affinity server to the replica running it proves it is a replica (a credential the
replicas share through Redis) and carries its caller; a client's own claim to be a forwarded
caller is ignored.

Real ``mcp-actors serve --http ... --cluster`` processes on a real Redis, tokens from a real
issuer of ours; the replicas share one resource URL (a load balancer's) that tokens are for."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

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
from tests.servers.oidc_issuer import OIDCIssuer, serve_issuer

pytestmark = pytest.mark.timeout(180)

RESOURCE = "http://mcp-gateway.test/mcp"
"""The gateway's public URL: the load balancer's, the same for every replica."""


@pytest.fixture(scope="module")
def issuer() -> Iterator[OIDCIssuer]:
    with serve_issuer() as issuer:
        yield issuer


def test_a_call_forwarded_to_the_owner_replica_authenticates(
    tmp_path: Path, issuer: OIDCIssuer, replicas: ReplicaFactory  # noqa: F811 (the fixture)
) -> None:
    counter = stdio_server("counter_server", affinity="single")
    config = write_config(tmp_path, {"counter": counter}, access={"auth": auth_keys(issuer, RESOURCE)})
    cluster = replicas(2, config, extra_args=("--lease-ttl", "2"))
    token = issuer.mint(sub="alice", aud=RESOURCE, scope=SCOPE, groups=["dev"])

    async def calls() -> None:
        async with RoundRobin([r.url for r in cluster], token=token) as clients:
            results = [await clients.call_tool("counter__increment") for _ in range(6)]
            assert not any(r.is_error for r in results), results
            # One process in the cluster counted all six: half of them were forwarded to it.
            counts = [(r.structured_content or {})["count"] for r in results]
            assert counts == list(range(1, 7)), counts
            assert len({(r.structured_content or {})["pid"] for r in results}) == 1

    anyio.run(calls)
    running = [r for r in cluster if r.servers()]
    assert len(running) == 1
    for replica in cluster:
        status, headers, _ = post(replica, None)
        assert status == 401 and challenge(headers["www-authenticate"])["scope"] == SCOPE
