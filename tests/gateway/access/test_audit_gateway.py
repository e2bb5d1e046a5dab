"""The audit through a real gateway (``mcp-actors serve --http`` with ``access.auth``,
``access.policy`` and ``access.audit``), two users with tokens from our own issuer and real
`mcp.Client`s: one record per request, each user as themselves, with the outcome the request had
(served, failed, denied); and no secret in the file, planted in a server's env, in a remote
server's headers, in the arguments, and as the caller's own bearer token. Then over stdio
(the one local user), and the trace id of a traced gateway.

One gateway serves the module; each test tells its own records apart by the arguments it sends.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from tests.conftest import wait_until
from tests.gateway.access.identity import SCOPE, Planted, client, planted_gateway
from tests.gateway.conftest import (
    MCP_ACTORS,
    ROOT,
    WAIT,
    GatewayProcess,
    fixture,
    gateway_env,
    serve_args,
    write_config,
)
from tests.servers.http_server import HTTPServer
from tests.servers.oidc_issuer import OIDCIssuer

pytestmark = pytest.mark.timeout(120)

ENV_SECRET = "env-s3cret-0d9c8b7a"
HEADER_SECRET = "hdr-s3cret-6f5e4d3c"
STATIC_TOKEN = "static-s3cret-token-2b1a"

POLICY = """
@id("dev-everything")
permit (principal in Group::"dev", action, resource);

@id("ops-sums")
permit (principal in Group::"ops", action == Action::"call", resource == Tool::"fx/add")
when { context.arguments.a < 100 };
"""


@pytest.fixture(scope="module")
def gateway(
    issuer: OIDCIssuer, remote: HTTPServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GatewayProcess]:
    planted = Planted(env=ENV_SECRET, header=HEADER_SECRET, static_token=STATIC_TOKEN)
    audit = {"arguments": ["fx/*", "web"]}
    with planted_gateway(
        tmp_path_factory.mktemp("audit-gateway"), issuer, remote, POLICY, planted, audit
    ) as gateway:
        yield gateway


def token(issuer: OIDCIssuer, gateway: GatewayProcess, user: str, group: str) -> str:
    return issuer.mint(sub=user, aud=gateway.url, scope=SCOPE, groups=[group], client_id=f"{user}-cli")


def records(gateway: GatewayProcess) -> list[dict[str, Any]]:
    path = gateway.folder / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def records_with(gateway: GatewayProcess, marker: str, count: int) -> list[dict[str, Any]]:
    """The records whose arguments hold ``marker``, once there are ``count`` of them."""

    def found() -> list[dict[str, Any]]:
        return [r for r in records(gateway) if marker in json.dumps(r.get("arguments"))]

    assert wait_until(lambda: len(found()) >= count, WAIT), records(gateway)[-10:]
    return found()


def test_one_record_per_request_each_user_as_themselves(issuer: OIDCIssuer, gateway: GatewayProcess) -> None:
    alice = token(issuer, gateway, "alice", "dev")
    bob = token(issuer, gateway, "bob", "ops")

    async def scenario() -> None:
        async with client(gateway, alice) as session:
            await session.list_tools()
            assert not (await session.call_tool("fx__echo", {"text": "who-1"})).is_error
            assert (await session.call_tool("fx__fail", {"message": "who-2"})).is_error
        async with client(gateway, bob) as session:
            assert not (await session.call_tool("fx__add", {"a": 1, "b": 2, "note": "who-3"})).is_error
            refused = await session.call_tool("fx__add", {"a": 500, "b": 2, "note": "who-4"})
            assert refused.is_error
            with pytest.raises(MCPError):  # not bob's to see: as if it did not exist
                await session.call_tool("fx__echo", {"text": "who-5"})

    anyio.run(scenario)
    found = {
        next(v for v in json.dumps(r["arguments"]).split('"') if v.startswith("who-")): r
        for r in records_with(gateway, "who-", 5)
    }
    assert sorted(found) == ["who-1", "who-2", "who-3", "who-4", "who-5"]
    expected = {
        "who-1": ("alice", "echo", "ok", None),
        "who-2": ("alice", "fail", "error", "server_error"),
        "who-3": ("bob", "add", "ok", None),
        "who-4": ("bob", "add", "denied", None),
        "who-5": ("bob", "echo", "denied", None),
    }
    for marker, (subject, tool, outcome, error_type) in expected.items():
        record = found[marker]
        assert (record["subject"], record["tool"], record["outcome"], record["errorType"]) == (
            subject,
            tool,
            outcome,
            error_type,
        ), record
        assert record["issuer"] == issuer.url and record["client"] == f"{subject}-cli"
        assert (record["method"], record["server"]) == ("tools/call", "fx")
        assert record["argumentsDigest"].startswith("sha256:") and record["durationMs"] >= 0
    # Exactly one record per call: none twice (the marker is in no other request).
    assert len(records_with(gateway, "who-", 5)) == 5
    # Lists are recorded too, and the session's start, each as its user.
    alices = [r for r in records(gateway) if r["subject"] == "alice"]
    assert {"initialize", "tools/list"} <= {r["method"] for r in alices}


def test_the_audit_holds_no_secret(issuer: OIDCIssuer, gateway: GatewayProcess) -> None:
    """Planted in the fx server's env, the web server's headers, the arguments (under plain keys
    and secret-looking ones), and the caller's bearer token itself."""
    alice = token(issuer, gateway, "alice", "dev")
    planted = [ENV_SECRET, HEADER_SECRET, STATIC_TOKEN, alice]

    async def scenario() -> None:
        async with client(gateway, alice) as session:
            text = f"plant-1 {ENV_SECRET} {HEADER_SECRET} {STATIC_TOKEN} {alice}"
            assert not (await session.call_tool("fx__echo", {"text": text})).is_error
            header = await session.call_tool("web__header", {"name": "x-api-key", "password": HEADER_SECRET})
            # The backend got the header (its answer is not audited): the secret was in play.
            assert HEADER_SECRET in header.content[0].text  # type: ignore[union-attr]
            await session.call_tool("fx__echo", {"text": "plant-2", "authorization": f"Bearer {alice}"})

    anyio.run(scenario)
    kept = records_with(gateway, "plant-", 2)
    assert wait_until(lambda: any(r.get("tool") == "header" for r in records(gateway)), WAIT)
    written = (gateway.folder / "audit.jsonl").read_text()
    for secret in planted:
        assert secret not in written
    header_record = next(r for r in records(gateway) if r.get("tool") == "header")
    assert header_record["arguments"] == {"name": "x-api-key", "password": "***"}
    assert kept[0]["arguments"]["text"] == "plant-1 *** *** *** ***"
    assert kept[1]["arguments"] == {"text": "plant-2", "authorization": "***"}


def test_over_stdio_the_one_user_is_recorded(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    config = write_config(tmp_path, {"fx": fixture()}, access={"audit": {"file": str(audit)}})
    params = StdioServerParameters(
        command=str(MCP_ACTORS), args=serve_args(config)[1:], env=gateway_env(tmp_path), cwd=ROOT
    )

    async def scenario() -> None:
        async with Client(stdio_client(params)) as session:  # type: ignore[arg-type]
            result = await session.call_tool("fx__add", {"a": 2, "b": 3})
            assert isinstance(result.content[0], types.TextContent) and result.content[0].text == "5"

    anyio.run(scenario)
    # The gateway wrote its last records before it exited.
    [call] = [json.loads(line) for line in audit.read_text().splitlines() if '"tools/call"' in line]
    assert (call["subject"], call["issuer"], call["server"], call["tool"], call["outcome"]) == (
        "local",
        None,
        "fx",
        "add",
        "ok",
    )
    assert "arguments" not in call and call["argumentsDigest"].startswith("sha256:")


def test_stdout_is_refused_over_stdio(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fx": fixture()}, access={"audit": {"file": "-"}})
    done = subprocess.run(
        serve_args(config),
        cwd=ROOT,
        env=gateway_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 2 and "needs --http" in done.stderr, done.stderr
    assert done.stdout == ""


TRACED = """
import json, sys
import anyio
from mcp import Client
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from actors.gateway.gateway import Gateway

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
config = json.loads(sys.argv[1])

async def main(gateway):
    async with Client(gateway.server, mode="legacy") as session:
        await session.call_tool("fx__echo", {"text": "traced"})

with Gateway.start(config) as gateway:
    anyio.run(main, gateway)
    assert gateway.audit.wait_written(30)
    [record] = [r.to_json() for r in gateway.audit.recent() if r.method == "tools/call"]
spans = [s for s in exporter.get_finished_spans() if s.name == "tools/call fx__echo"]
print(json.dumps({"record": record["traceId"], "spans": [format(s.context.trace_id, "032x") for s in spans]}))
"""


def test_a_record_carries_its_request_s_trace_id(tmp_path: Path) -> None:
    """In a process of its own: a traced gateway sets the process's one tracer provider."""
    config = {"mcpServers": {"fx": fixture()}, "builtin": {"enabled": False}}
    done = subprocess.run(
        [sys.executable, "-c", TRACED, json.dumps(config)],
        cwd=ROOT,
        env=gateway_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["record"] is not None and seen["spans"] == [seen["record"]]
