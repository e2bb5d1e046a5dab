"""Skills behind the gateway's policy (``access.policy``): two users of different groups, each
allowed one of two skills servers, with tokens from our own issuer and real `mcp.Client`s. Each
lists only the skills of the server they may use; every way around it (``skills/get``, a read of
the skill's files, a directory read) fails the same way as asking for a skill that does not
exist."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_types import INVALID_PARAMS, PaginatedRequestParams, Request
from pydantic import ConfigDict

from tests.gateway.access.identity import SCOPE, auth_keys, client
from tests.gateway.conftest import GatewayProcess, write_config
from tests.harness import forkserver
from tests.runtime.conftest import ROOT
from tests.servers.http_server import free_port
from tests.servers.oidc_issuer import OIDCIssuer
from tests.servers.skills_server import write_sample

pytestmark = pytest.mark.timeout(120)

POLICY = """
@id("dev-docs")
permit (principal in Group::"dev", action in Action::"use", resource in Server::"docs");

@id("ops-web")
permit (principal in Group::"ops", action in Action::"use", resource in Server::"web");
"""
MODULE = "tests.servers.skills_server"


class _Raw(Request[Any, str]):
    model_config = ConfigDict(extra="allow")


class _Answer(PaginatedRequestParams):
    model_config = ConfigDict(extra="allow")


async def _asked(gateway: GatewayProcess, token: str, asks: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Each request's answer (its result as JSON), or the code of the error it got."""
    answers: list[Any] = []
    async with client(gateway, token, "2026-07-28") as session:
        for method, params in asks:
            try:
                if method == "resources/read":
                    answers.append((await session.read_resource(params["uri"])).model_dump(mode="json"))
                    continue
                result = await session.session.send_request(_Raw(method=method, params=params), _Answer)
                answers.append(dict(result.model_extra or {}))
            except Exception as exc:  # an MCPError: its code
                answers.append(getattr(getattr(exc, "error", None), "code", repr(exc)))
    return answers


def test_each_user_reaches_only_the_skills_of_the_servers_they_may_use(
    issuer: OIDCIssuer, tmp_path: Path
) -> None:
    servers = {}
    for namespace in ("docs", "web"):
        write_sample(tmp_path / namespace)
        command, *args = forkserver.python_module(MODULE, "--skills", str(tmp_path / namespace))
        servers[namespace] = {"command": command, "args": args, "cwd": str(ROOT), "healthCheckInterval": 0}
    (tmp_path / "policy.cedar").write_text(POLICY)
    port = free_port()
    access = {"auth": auth_keys(issuer, f"http://127.0.0.1:{port}/mcp"), "policy": "policy.cedar"}
    with GatewayProcess(write_config(tmp_path, servers, access=access), tmp_path, port=port) as gateway:
        alice = issuer.mint(sub="alice", aud=gateway.url, scope=SCOPE, groups=["dev"])
        theirs = "skill://web/pdf-processing"
        own = "skill://docs/pdf-processing"
        asks = [
            ("skills/list", {}),
            ("skills/get", {"uri": f"{own}/SKILL.md"}),
            ("skills/get", {"uri": f"{theirs}/SKILL.md"}),
            ("skills/get", {"uri": "skill://web/no-such-skill/SKILL.md"}),
            ("resources/read", {"uri": f"{theirs}/SKILL.md"}),
            ("resources/directory/read", {"uri": f"{theirs}/templates"}),
            ("resources/read", {"uri": f"{own}/SKILL.md"}),
        ]
        listed, got, denied, unknown, read_denied, directory_denied, read = anyio.run(
            _asked, gateway, alice, asks
        )
    assert sorted(e["uri"] for e in listed["skills"]) == [
        "skill://docs/acme/billing/refunds/SKILL.md",
        f"{own}/SKILL.md",
    ]
    assert got["skill"]["uri"] == f"{own}/SKILL.md"
    # The other server's skill is as absent as one that does not exist, every way asked.
    assert denied == unknown == read_denied == directory_denied == INVALID_PARAMS
    assert "name: pdf-processing" in read["contents"][0]["text"]
