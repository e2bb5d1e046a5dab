"""The policy across replicas: a single-affinity server runs on one replica, and its requests
from clients of the other are decided where the client talks (and again by the owner, for the
same caller). A resource a client follows through the other replica is followed at the owner on
that replica's behalf, which the owner lets through: each user hears only what they may follow.

Real ``mcp-actors serve --http ... --cluster`` processes on a real Redis, tokens from our own
issuer for the replicas' one resource URL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated

from tests.cluster.conftest import (  # noqa: F401 (fixtures)
    ReplicaFactory,
    _module_redis,
    redis_server,
    replicas,
)
from tests.gateway.access.identity import SCOPE, auth_keys, client
from tests.gateway.access.test_policy_gateway import APPLE, GREETING, text_of
from tests.gateway.conftest import fixture, write_config
from tests.servers.oidc_issuer import OIDCIssuer

pytestmark = pytest.mark.timeout(180)

RESOURCE = "http://mcp-gateway.test/mcp"
POLICY = """
@id("dev-fx") permit (principal in Group::"dev", action in Action::"use", resource in Server::"fx");
@id("ops-greeting") permit (
  principal in Group::"ops",
  action in [Action::"read", Action::"subscribe"],
  resource == Resource::"fixture://greeting"
);
"""


def test_each_user_follows_through_another_replica_only_what_they_may(
    tmp_path: Path,
    issuer: OIDCIssuer,
    replicas: ReplicaFactory,  # noqa: F811 (the fixture)
) -> None:
    (tmp_path / "policy.cedar").write_text(POLICY)
    access = {"auth": auth_keys(issuer, RESOURCE), "policy": "policy.cedar"}
    config = write_config(tmp_path, {"fx": fixture("--surface", affinity="single")}, access=access)
    owner, other = replicas(2, config, extra_args=("--lease-ttl", "2"))
    alice = issuer.mint(sub="alice", aud=RESOURCE, scope=SCOPE, groups=["dev"])
    bob = issuer.mint(sub="bob", aud=RESOURCE, scope=SCOPE, groups=["ops"])
    heard: dict[str, list[str]] = {"alice": [], "bob": []}

    async def collect(stream: Any, who: str, done: anyio.Event, wanted: str) -> None:
        async for event in stream:
            if isinstance(event, ResourceUpdated):
                heard[who].append(event.uri)
                if event.uri == wanted:
                    done.set()

    async def scenario() -> None:
        a_done, b_done = anyio.Event(), anyio.Event()
        async with client(owner, alice) as at_owner:
            assert text_of(await at_owner.call_tool("fx__echo", {"text": "here"})) == "here"  # its lease
            async with (
                client(other, alice, "2026-07-28") as dev,
                client(other, bob, "2026-07-28") as ops,
                dev.listen(resource_subscriptions=[APPLE]) as dev_stream,
                ops.listen(resource_subscriptions=[GREETING, APPLE]) as ops_stream,
                anyio.create_task_group() as tasks,
            ):
                # Decided at the replica bob talks to: fx's echo is not his to see.
                with pytest.raises(MCPError, match=r"^Unknown tool: fx__echo$"):
                    await ops.call_tool("fx__echo", {"text": "x"})
                tasks.start_soon(collect, dev_stream, "alice", a_done, APPLE)
                tasks.start_soon(collect, ops_stream, "bob", b_done, GREETING)
                with anyio.fail_after(90):
                    while not (a_done.is_set() and b_done.is_set()):
                        for uri in (APPLE, GREETING):
                            await at_owner.call_tool("fx__touch", {"uri": uri})
                        with anyio.move_on_after(0.5):
                            await b_done.wait()
                tasks.cancel_scope.cancel()

    anyio.run(scenario)
    assert APPLE in heard["alice"]
    assert set(heard["bob"]) == {GREETING}, heard
    assert [r for r in (owner, other) if r.servers()] == [owner]
