"""Two users call the same tools at once, through one gateway and across replicas: what a
backend asks mid-call (sampling, elicitation) and the progress it reports reach the user whose
call it is, never the other, in both protocol eras; the audit names each as themselves.

Real ``mcp-actors serve --http`` processes (and a real Redis for the replicas), tokens from our
own issuer, real `mcp.Client`s whose handlers answer as their user."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from tests.cluster.conftest import (  # noqa: F401 (fixtures)
    ReplicaFactory,
    _module_redis,
    redis_server,
    replicas,
)
from tests.gateway.access.identity import SCOPE, auth_keys, client
from tests.gateway.conftest import GatewayProcess, fixture, write_config
from tests.servers.http_server import free_port
from tests.servers.oidc_issuer import OIDCIssuer

pytestmark = pytest.mark.timeout(180)

POLICY = """
@id("team-fx") permit (principal in Group::"team", action in Action::"use", resource in Server::"fx");
"""
ROUNDS = 3
"""Calls of each kind per user, the two users' calls interleaved."""
STEPS = {"alice": 3, "bob": 5}
"""Progress steps of each user's calls: a step count that is not theirs came from the other."""
PROGRESS_WAIT = 5.0
"""Seconds a call's last progress callbacks may take to run after its answer."""


@dataclass
class Heard:
    """What one user's client was asked and told, and the answers its calls got."""

    prompts: list[str] = field(default_factory=list)
    elicited: int = 0
    totals: list[float | None] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    per_call: list[int] = field(default_factory=list)


def text_of(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, types.TextContent), block
    return block.text


async def calls_as(gateway: GatewayProcess, token: str, who: str, mode: str, heard: Heard) -> None:
    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        content = params.messages[0].content
        heard.prompts.append(content.text if isinstance(content, types.TextContent) else "?")
        await anyio.sleep(0.05)  # the other user's rounds go on meanwhile
        reply = types.TextContent(type="text", text=f"{who}'s model")
        return types.CreateMessageResult(role="assistant", content=reply, model="scripted")

    async def elicitation(context: Any, params: Any) -> types.ElicitResult:
        heard.elicited += 1
        await anyio.sleep(0.05)
        return types.ElicitResult(action="accept", content={"name": who})

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.totals.append(total)

    handlers = {"sampling_callback": sampling, "elicitation_callback": elicitation}
    async with client(gateway, token, mode, **handlers) as session:
        for n in range(ROUNDS):
            prompt = {"prompt": f"{who} asks {n}"}
            heard.answers.append(text_of(await session.call_tool("fx__sample", prompt)))
            heard.answers.append(text_of(await session.call_tool("fx__elicit_name", {})))
            steps = {"steps": STEPS[who], "delay": 0.02}
            before = len(heard.totals)
            heard.answers.append(
                text_of(await session.call_tool("fx__progress", steps, progress_callback=progress))
            )
            # The SDK runs each progress callback as a task of its own: the last may run just
            # after the answer. One that never runs was lost (or was sent after the answer).
            with anyio.move_on_after(PROGRESS_WAIT):
                while len(heard.totals) < before + STEPS[who]:
                    await anyio.sleep(0.01)
            heard.per_call.append(len(heard.totals) - before)


def both_users(gateway: GatewayProcess, tokens: dict[str, str], mode: str) -> dict[str, Heard]:
    heard = {who: Heard() for who in tokens}

    async def scenario() -> None:
        with anyio.fail_after(120):
            async with anyio.create_task_group() as tasks:
                for who, token in tokens.items():
                    tasks.start_soon(calls_as, gateway, token, who, mode, heard[who])

    anyio.run(scenario)
    return heard


def assert_each_heard_only_their_own(heard: dict[str, Heard]) -> None:
    for who, theirs in heard.items():
        assert theirs.prompts == [f"{who} asks {n}" for n in range(ROUNDS)], (who, theirs)
        assert theirs.elicited == ROUNDS, (who, theirs)
        assert theirs.per_call == [STEPS[who]] * ROUNDS, (who, theirs.per_call)
        assert set(theirs.totals) == {float(STEPS[who])}, (who, theirs.totals)
        one_round = [f"model said: {who}'s model", f"accept {who}", f"done {STEPS[who]}"]
        assert theirs.answers == one_round * ROUNDS, (who, theirs.answers)


@pytest.fixture(scope="module")
def gateway(issuer: OIDCIssuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    folder = tmp_path_factory.mktemp("rounds-per-user")
    port = free_port()
    (folder / "policy.cedar").write_text(POLICY)
    access = {
        "auth": auth_keys(issuer, f"http://127.0.0.1:{port}/mcp"),
        "policy": "policy.cedar",
        "audit": {"file": str(folder / "audit.jsonl")},
    }
    config = write_config(folder, {"fx": fixture("--surface", sampling="allow")}, access=access)
    with GatewayProcess(config, folder, port=port) as gateway:
        yield gateway


def tokens_for(issuer: OIDCIssuer, resource: str) -> dict[str, str]:
    return {who: issuer.mint(sub=who, aud=resource, scope=SCOPE, groups=["team"]) for who in STEPS}


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_what_a_backend_asks_reaches_only_the_caller(
    issuer: OIDCIssuer, gateway: GatewayProcess, mode: str
) -> None:
    heard = both_users(gateway, tokens_for(issuer, gateway.url), mode)
    assert_each_heard_only_their_own(heard)
    # The audit names each caller on each of their calls.
    records = [json.loads(line) for line in (gateway.folder / "audit.jsonl").read_text().splitlines()]
    calls = [(r["subject"], r["tool"]) for r in records if r.get("method") == "tools/call"]
    for who in STEPS:
        assert {tool for subject, tool in calls if subject == who} >= {"sample", "elicit_name", "progress"}


RESOURCE = "http://mcp-gateway.test/mcp"
"""The replicas' one public URL (a load balancer's)."""


def test_across_replicas_what_the_owner_asks_reaches_only_the_caller(
    issuer: OIDCIssuer,
    tmp_path: Path,
    replicas: ReplicaFactory,  # noqa: F811 (the fixture)
) -> None:
    """fx runs on one replica (single affinity); both users talk to the other, which forwards
    their calls to the owner and the owner's questions and progress back to each."""
    (tmp_path / "policy.cedar").write_text(POLICY)
    access = {"auth": auth_keys(issuer, RESOURCE), "policy": "policy.cedar"}
    entry = fixture("--surface", sampling="allow", affinity="single")
    owner, other = replicas(
        2, write_config(tmp_path, {"fx": entry}, access=access), extra_args=("--lease-ttl", "2")
    )
    tokens = tokens_for(issuer, RESOURCE)

    async def take_the_lease() -> None:
        async with client(owner, tokens["alice"]) as session:
            assert text_of(await session.call_tool("fx__echo", {"text": "here"})) == "here"

    anyio.run(take_the_lease)
    heard = both_users(other, tokens, "2026-07-28")
    assert_each_heard_only_their_own(heard)
    assert [r for r in (owner, other) if r.servers()] == [owner]  # forwarded, not run twice
