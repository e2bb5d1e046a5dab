"""A request served on another replica reaches its client as it would from one replica: what the
backend logs, its progress, and what it asks (sampling, elicitation, roots) in the client's era;
and a 2026-07-28 client's retry of a request held across rounds may go to any replica.

Real processes: two ``mcp-actors serve --http ... --cluster`` replicas on a real Redis, before
tests/servers/everything_server.py twice: ``solo`` (``"affinity": "single"``: it runs on one
replica, the other forwards to it) and ``shared`` (it runs wherever a request lands), spoken to
in either era over stdio. SDK clients (``mcp.Client``) of both eras.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.cluster.conftest import Replica, ReplicaFactory
from tests.gateway.conftest import ROOT, write_config
from tests.harness import forkserver

MULTIPLE = "test_input_required_result_multiple_inputs"
"""Asks for a name (elicitation), a greeting (sampling) and the roots; says all three back."""

ANSWERS: dict[str, dict[str, Any]] = {
    "elicitation/create": {"action": "accept", "content": {"name": "Alice"}},
    "sampling/createMessage": {
        "role": "assistant",
        "content": {"type": "text", "text": "Hello"},
        "model": "scripted",
    },
    "roots/list": {"roots": [{"uri": "file:///work", "name": "work"}]},
}
"""What the clients here answer, by method."""


async def _elicit(ctx: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult.model_validate(ANSWERS["elicitation/create"])


async def _sample(ctx: Any, params: Any) -> types.CreateMessageResult:
    return types.CreateMessageResult.model_validate(ANSWERS["sampling/createMessage"])


async def _roots(ctx: Any) -> types.ListRootsResult:
    return types.ListRootsResult.model_validate(ANSWERS["roots/list"])


def _text(result: Any) -> str:
    assert isinstance(result, types.CallToolResult) and not result.is_error, result
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def _everything(era: str, **keys: Any) -> dict[str, Any]:
    command, *args = forkserver.python_module("tests.servers.everything_server")
    return {
        "command": command,
        "args": args,
        "cwd": str(ROOT),
        "sampling": "allow",
        "protocol": era,
        "logLevel": "debug",
        **keys,
    }


def _cluster(tmp_path: Path, replicas: ReplicaFactory, backend: str) -> list[Replica]:
    config = write_config(
        tmp_path, {"solo": _everything(backend, affinity="single"), "shared": _everything(backend)}
    )
    return replicas(2, config)


async def _client_checks(url: str, era: str) -> None:
    """The forwarded requests of one client of ``era``: logs, progress and every kind of input."""
    logs: list[types.LoggingMessageNotificationParams] = []
    progress: list[float] = []

    async def logged(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def reported(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    async with Client(
        url,
        mode=era,  # type: ignore[arg-type]
        elicitation_callback=_elicit,
        sampling_callback=_sample,
        list_roots_callback=_roots,
        logging_callback=logged,
        log_level="debug",
    ) as client:
        assert _text(await client.call_tool(f"solo__{MULTIPLE}", {})) == "Hello Alice, roots: 1"
        answer = await client.call_tool("solo__test_tool_with_logging", {})
        assert not answer.is_error, answer
        # Before the answer, once each (one copy per request, however many are in flight).
        infos = [entry for entry in logs if entry.level == "info"]
        assert len(infos) == 3, logs
        answer = await client.call_tool("solo__test_tool_with_progress", {}, progress_callback=reported)
        assert not answer.is_error, answer
        assert progress == [0, 50, 100], progress


def _answering(url: str) -> Client:
    """A 2026-07-28 client that declares sampling, elicitation and roots."""
    return Client(
        url,
        mode="2026-07-28",
        elicitation_callback=_elicit,
        sampling_callback=_sample,
        list_roots_callback=_roots,
    )


async def _answer_in_turns(urls: Sequence[str], name: str) -> str:
    """Call ``name`` as a 2026-07-28 client, each retry on the next replica; its answer."""
    async with _answering(urls[0]) as first, _answering(urls[1]) as second:
        sessions = [first.session, second.session]
        result = await sessions[0].call_tool(name, {}, allow_input_required=True)
        turn = 1
        while isinstance(result, types.InputRequiredResult):
            assert result.request_state and result.input_requests, result
            responses = {key: ANSWERS[request.method] for key, request in result.input_requests.items()}
            result = await sessions[turn % 2].call_tool(
                name,
                {},
                input_responses=responses,  # type: ignore[arg-type]
                request_state=result.request_state,
                allow_input_required=True,
            )
            turn += 1
        assert turn > 1, "the server asked for nothing"
        return _text(result)


@pytest.mark.parametrize("backend", ["2026-07-28", "legacy"])
def test_a_forwarded_request_reaches_its_client_as_from_one_replica(
    tmp_path: Path, replicas: ReplicaFactory, backend: str
) -> None:
    owner, forwarder = _cluster(tmp_path, replicas, backend)

    async def scenario() -> None:
        # The first request makes the replica it reaches the one that runs ``solo``.
        async with Client(owner.url, mode="legacy") as client:
            assert _text(await client.call_tool("solo__test_simple_text", {}))
        with anyio.fail_after(120):
            for era in ("legacy", "2026-07-28"):
                await _client_checks(forwarder.url, era)

    anyio.run(scenario)
    # Forwarded, every one: the replica the clients talked to never ran the server.
    assert len(owner.servers()) == 1 and not forwarder.servers()


@pytest.mark.parametrize("backend", ["2026-07-28", "legacy"])
def test_a_retry_may_go_to_another_replica_than_the_request(
    tmp_path: Path, replicas: ReplicaFactory, backend: str
) -> None:
    one, other = _cluster(tmp_path, replicas, backend)
    urls = [one.url, other.url]

    async def scenario() -> None:
        with anyio.fail_after(120):
            # Held where the server runs (solo) and where the request came (shared): each retry
            # on the other replica than the one before finds it.
            for server in ("solo", "shared"):
                assert await _answer_in_turns(urls, f"{server}__{MULTIPLE}") == "Hello Alice, roots: 1"
                assert await _answer_in_turns(urls[::-1], f"{server}__{MULTIPLE}") == "Hello Alice, roots: 1"
            # A state tampered with is refused by whichever replica gets it.
            async with _answering(one.url) as client, _answering(other.url) as elsewhere:
                first = await client.session.call_tool(f"shared__{MULTIPLE}", {}, allow_input_required=True)
                assert isinstance(first, types.InputRequiredResult) and first.request_state
                with pytest.raises(MCPError) as tampered:
                    await elsewhere.session.call_tool(
                        f"shared__{MULTIPLE}",
                        {},
                        request_state=first.request_state + "-TAMPERED",
                        allow_input_required=True,
                    )
                assert tampered.value.error.code == types.INVALID_PARAMS, tampered.value

    anyio.run(scenario)


def test_a_handshake_era_client_keeps_the_back_channel_of_a_dual_era_server_across_replicas(
    tmp_path: Path, replicas: ReplicaFactory
) -> None:
    """tests/servers/era_specific_server.py asks on the session's back-channel, which only the
    handshake era has; the owner speaks 2026-07-28 to it (``auto``). A handshake-era client of
    the other replica still gets its sampling, elicitation, roots and logs: the forwarded
    request says its caller's era, and the owner serves it from a handshake-era copy
    (`actors.gateway.era_copies`), as it would serve that client directly."""
    command, *args = forkserver.python_module("tests.servers.era_specific_server")
    entry = {"command": command, "args": args, "cwd": str(ROOT), "sampling": "allow", "protocol": "auto"}
    owner, forwarder = replicas(2, write_config(tmp_path, {"solo": entry | {"affinity": "single"}}))

    async def scenario() -> None:
        async with Client(owner.url, mode="2026-07-28") as client:  # makes ``owner`` run it
            assert _text(await client.call_tool("solo__test_simple_text", {}))
        logs: list[str] = []

        async def logged(params: types.LoggingMessageNotificationParams) -> None:
            logs.append(str(params.data))

        with anyio.fail_after(120):
            async with Client(
                forwarder.url,
                mode="legacy",
                elicitation_callback=lambda ctx, params: _answer_reply(),
                sampling_callback=_sample,
                list_roots_callback=_roots,
                logging_callback=logged,
            ) as client:
                sampled = _text(await client.call_tool("solo__test_sampling", {"prompt": "hi"}))
                assert sampled == "LLM response: Hello", sampled
                answer = _text(await client.call_tool("solo__test_elicitation", {"message": "ok?"}))
                assert answer == 'User response: action=accept, content={"response":"yes"}', answer
                assert _text(await client.call_tool("solo__test_list_roots", {})) == "roots: file:///work"
                await client.call_tool("solo__test_tool_with_logging", {})
                assert logs[-3:] == [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ], logs

    anyio.run(scenario)
    # The owner runs the server and its handshake-era copy; the replica the client talked to, none.
    assert len(owner.servers()) == 2 and not forwarder.servers()


async def _answer_reply() -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"response": "yes"})
