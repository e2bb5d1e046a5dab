"""Per-user stdio servers (issue 23, item 5): ``"affinity": "user"`` runs one process per caller,
its environment filled in from the caller's verified claims, so that one user's session state
never reaches another's. Two users with real tokens from a real issuer of ours, through a real
``mcp-actors serve --http`` with ``access.auth``, in front of tests/servers/per_user_server.py.

One gateway serves the module's reading tests (each user's process lives through them); the
lifecycle tests (idle stop, unregistration, the bound on copies) start their own, with short
timers."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from actors.testing import procfs
from actors.tools import ErrorType
from tests.conftest import wait_until
from tests.gateway.access.identity import SCOPE, auth_keys, client
from tests.gateway.conftest import WAIT, GatewayProcess, write_config
from tests.runtime.conftest import stdio_server
from tests.servers.http_server import free_port
from tests.servers.oidc_issuer import OIDCIssuer

pytestmark = pytest.mark.timeout(180)

ENV = {
    "GITHUB_USER": "${claim:login}",
    "TEAM": "${claim:groups}",
    "CALLER": "${caller:key}",
    "HOME_DIR": "/home/${claim:nickname:-nobody}",
}


def per_user_entry(**keys: Any) -> dict[str, Any]:
    return {**stdio_server("per_user_server", real_process=True), "env": ENV, "affinity": "user", **keys}


@contextlib.contextmanager
def per_user_gateway(
    folder: Path, issuer: OIDCIssuer, *, per_user: dict[str, Any] | None = None, **entry: Any
) -> Iterator[GatewayProcess]:
    """``serve --http`` with ``access.auth`` for ``issuer``, in front of the per-user server ``me``."""
    port = free_port()
    access: dict[str, Any] = {"auth": auth_keys(issuer, f"http://127.0.0.1:{port}/mcp")}
    if per_user is not None:
        access["perUserServers"] = per_user
    config = write_config(folder, {"me": per_user_entry(**entry)}, access=access)
    with GatewayProcess(config, folder, port=port) as gateway:
        yield gateway


@pytest.fixture(scope="module")
def gateway(issuer: OIDCIssuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    with per_user_gateway(tmp_path_factory.mktemp("per-user"), issuer, idleTimeout=600) as gateway:
        yield gateway


def token(issuer: OIDCIssuer, gateway: GatewayProcess, user: str, **claims: Any) -> str:
    return issuer.mint(sub=user, aud=gateway.url, scope=SCOPE, **claims)


def alice(issuer: OIDCIssuer, gateway: GatewayProcess) -> str:
    return token(issuer, gateway, "alice", login="alice-gh", groups=["dev", "ops"], nickname="al")


def bob(issuer: OIDCIssuer, gateway: GatewayProcess) -> str:
    return token(issuer, gateway, "bob", login="bob-gh", groups=["qa"])


async def call(session: Client, tool: str) -> dict[str, Any]:
    result = await session.call_tool(tool, {})
    assert not result.is_error, result
    return dict(json.loads(result.content[0].text))  # type: ignore[union-attr]


def copies(gateway: GatewayProcess, token: str) -> dict[str, dict[str, Any]]:
    """The per-user copies ``/healthz`` shows (what the caller of ``token`` may see of them)."""
    status, body = gateway.request("GET", "/healthz", headers={"Authorization": f"Bearer {token}"})
    assert status == 200, (status, body)
    servers: dict[str, dict[str, Any]] = json.loads(body).get("servers", {})
    return {name: state for name, state in servers.items() if name.startswith("me@")}


# ---- one process per user ----------------------------------------------------------------------


def test_each_user_gets_a_process_of_their_own_with_their_claims_in_its_environment(
    issuer: OIDCIssuer, gateway: GatewayProcess
) -> None:
    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with client(gateway, alice(issuer, gateway)) as a, client(gateway, bob(issuer, gateway)) as b:
            return await call(a, "me__whoami"), await call(b, "me__whoami")

    mine, theirs = anyio.run(scenario)
    assert mine["pid"] != theirs["pid"]
    assert {mine["pid"], theirs["pid"]} <= gateway.servers(), gateway.log()
    assert mine["env"]["GITHUB_USER"] == "alice-gh"
    assert mine["env"]["TEAM"] == "dev,ops"
    assert mine["env"]["HOME_DIR"] == "/home/al"
    assert theirs["env"]["GITHUB_USER"] == "bob-gh"
    assert theirs["env"]["TEAM"] == "qa"
    assert theirs["env"]["HOME_DIR"] == "/home/nobody"  # the default: bob's token has no nickname
    # ${caller:key}: a stable name per caller, never the other's.
    assert mine["env"]["CALLER"] and mine["env"]["CALLER"] != theirs["env"]["CALLER"]


def test_a_2026_07_28_client_is_served_by_its_own_process_too(
    issuer: OIDCIssuer, gateway: GatewayProcess
) -> None:
    # Its calls are held across rounds (`actors.gateway.input_rounds`): the same routing.
    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with client(gateway, alice(issuer, gateway)) as legacy:
            before = await call(legacy, "me__whoami")
        async with client(gateway, alice(issuer, gateway), "2026-07-28") as modern:
            return before, await call(modern, "me__whoami")

    before, after = anyio.run(scenario)
    assert after["pid"] == before["pid"] and after["env"]["GITHUB_USER"] == "alice-gh"


def test_one_users_state_never_reaches_anothers(issuer: OIDCIssuer, gateway: GatewayProcess) -> None:
    async def scenario() -> tuple[list[int], list[int], int]:
        async with client(gateway, alice(issuer, gateway)) as a, client(gateway, bob(issuer, gateway)) as b:
            start_a = (await call(a, "me__whoami"))["count"]
            start_b = (await call(b, "me__whoami"))["count"]
            counted_a = [(await call(a, "me__increment"))["count"] - start_a for _ in range(3)]
            counted_b = [(await call(b, "me__increment"))["count"] - start_b for _ in range(2)]
            # alice's next session (a new connection, the same user) finds her own state.
            async with client(gateway, alice(issuer, gateway)) as again:
                later = (await call(again, "me__whoami"))["count"] - start_a
            return counted_a, counted_b, later

    counted_a, counted_b, later = anyio.run(scenario)
    assert counted_a == [1, 2, 3]
    assert counted_b == [1, 2]  # alice's three increments never moved bob's count
    assert later == 3


def test_the_server_is_listed_once_under_its_own_name(issuer: OIDCIssuer, gateway: GatewayProcess) -> None:
    async def scenario() -> tuple[list[str], list[str], list[str]]:
        async with client(gateway, alice(issuer, gateway)) as a, client(gateway, bob(issuer, gateway)) as b:
            await call(a, "me__whoami")
            await call(b, "me__whoami")
            tools = [tool.name for tool in (await a.list_tools()).tools]
            resources = [str(r.uri) for r in (await b.list_resources()).resources]
            prompts = [p.name for p in (await b.list_prompts()).prompts]
            return tools, resources, prompts

    tools, resources, prompts = anyio.run(scenario)
    assert sorted(tools) == ["me__increment", "me__whoami"], tools
    assert resources == ["whoami://user"]
    assert prompts == ["me__greeting"]


def test_reads_and_prompts_are_answered_by_the_callers_own_process(
    issuer: OIDCIssuer, gateway: GatewayProcess
) -> None:
    async def scenario() -> tuple[str, str, str, str]:
        async with client(gateway, alice(issuer, gateway)) as a, client(gateway, bob(issuer, gateway)) as b:
            read_a = (await a.read_resource("whoami://user")).contents[0].text  # type: ignore[union-attr]
            read_b = (await b.read_resource("whoami://user")).contents[0].text  # type: ignore[union-attr]
            prompt_a = (await a.get_prompt("me__greeting")).messages[0].content.text  # type: ignore[union-attr]
            prompt_b = (await b.get_prompt("me__greeting")).messages[0].content.text  # type: ignore[union-attr]
            return read_a, read_b, prompt_a, prompt_b

    read_a, read_b, prompt_a, prompt_b = anyio.run(scenario)
    assert read_a.startswith("alice-gh ") and read_b.startswith("bob-gh "), (read_a, read_b)
    assert (prompt_a, prompt_b) == ("hello alice-gh", "hello bob-gh")


def test_a_token_without_a_claim_the_server_needs_is_refused_as_auth(
    issuer: OIDCIssuer, gateway: GatewayProcess
) -> None:
    # No ``login`` claim, and ${claim:login} has no default: no process runs as nobody.
    nameless = token(issuer, gateway, "carol", groups=["dev"])
    before = gateway.servers()

    async def scenario() -> Any:
        async with client(gateway, nameless) as session:
            return await session.call_tool("me__whoami", {})

    result = anyio.run(scenario)
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.startswith(f"{ErrorType.AUTH.label}:") and "'login'" in text, text
    assert gateway.servers() <= before  # nothing was started for carol


# ---- lifecycle: idle stop, unregistration, the bound -------------------------------------------


def test_copies_are_idle_stopped_then_unregistered(issuer: OIDCIssuer, tmp_path: Path) -> None:
    with per_user_gateway(tmp_path, issuer, per_user={"unregisterAfter": 6}, idleTimeout=1) as gateway:
        alices = alice(issuer, gateway)

        async def scenario() -> int:
            async with client(gateway, alices) as a:
                return int((await call(a, "me__whoami"))["pid"])

        pid = anyio.run(scenario)
        assert procfs.is_alive(pid)
        # Idle for its idleTimeout: the process stops, the copy stays registered a while ...
        assert wait_until(lambda: not procfs.is_alive(pid), WAIT), gateway.log()
        assert len(copies(gateway, alices)) == 1
        # ... and is unregistered after unregisterAfter without a request.
        assert wait_until(lambda: not copies(gateway, alices), WAIT), gateway.log()
        # A later call registers and starts a new one.
        assert anyio.run(scenario) != pid


def test_past_max_copies_the_least_recently_used_idle_copy_goes(issuer: OIDCIssuer, tmp_path: Path) -> None:
    with per_user_gateway(tmp_path, issuer, per_user={"maxCopies": 2}, idleTimeout=600) as gateway:
        users = [token(issuer, gateway, n, login=f"{n}-gh", groups=["dev"]) for n in ("ann", "ben", "cid")]

        async def whoami(user: str) -> dict[str, Any]:
            async with client(gateway, user) as session:
                return await call(session, "me__whoami")

        first = anyio.run(whoami, users[0])
        anyio.run(whoami, users[1])
        anyio.run(whoami, users[2])
        # ann's copy was the least recently used: unregistered, its process stopped.
        assert wait_until(lambda: len(copies(gateway, users[0])) == 2, WAIT), copies(gateway, users[0])
        assert wait_until(lambda: not procfs.is_alive(first["pid"]), WAIT), gateway.log()
        # ann is served again, by a new process.
        assert anyio.run(whoami, users[0])["pid"] != first["pid"]


def test_a_reload_that_changes_the_entry_gives_each_user_a_new_process(
    issuer: OIDCIssuer, tmp_path: Path
) -> None:
    with per_user_gateway(tmp_path, issuer, idleTimeout=600) as gateway:
        alices = alice(issuer, gateway)

        async def whoami() -> dict[str, Any]:
            async with client(gateway, alices) as session:
                return await call(session, "me__whoami")

        before = anyio.run(whoami)
        config = json.loads(gateway.config.read_text())
        config["mcpServers"]["me"]["env"]["TEAM"] = "team-${claim:login}"
        gateway.config.write_text(json.dumps(config))
        os.kill(gateway.pid, signal.SIGHUP)
        assert wait_until(lambda: anyio.run(whoami)["env"]["TEAM"] == "team-alice-gh", WAIT), gateway.log()
        after = anyio.run(whoami)
        assert after["pid"] != before["pid"]
        # The former process goes with its copy, once its requests are answered.
        assert wait_until(lambda: not procfs.is_alive(before["pid"]), WAIT), gateway.log()


# ---- without sign-in ---------------------------------------------------------------------------


def test_without_sign_in_there_is_one_instance_as_before(tmp_path: Path) -> None:
    # On loopback without a token every client is the one local user: one copy, claims empty
    # (or their defaults); a server that sends its caller's token has none to send.
    remote = {"url": f"http://127.0.0.1:{free_port()}/mcp", "affinity": "user"}
    servers = {
        "me": per_user_entry(),
        "api": {**remote, "headers": {"Authorization": "Bearer ${caller:token}"}},
    }
    with GatewayProcess(write_config(tmp_path, servers), tmp_path) as gateway:

        async def scenario() -> tuple[dict[str, Any], dict[str, Any], Any]:
            url = gateway.url
            async with Client(url) as first, Client(url) as second:
                await call(first, "me__increment")
                one, other = await call(first, "me__whoami"), await call(second, "me__whoami")
                return one, other, await second.call_tool("api__whoami", {})

        one, other, refused = anyio.run(scenario)
    assert one["pid"] == other["pid"] and one["count"] == other["count"] == 1
    assert one["env"] == {"GITHUB_USER": "", "TEAM": "", "CALLER": "local", "HOME_DIR": "/home/nobody"}
    assert refused.is_error and refused.content[0].text.startswith(f"{ErrorType.AUTH.label}:")
