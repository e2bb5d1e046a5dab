"""What the policy hides from a caller answers exactly as what does not exist, on every method
the gateway serves that names one thing: a real gateway (``mcp-actors serve --http`` with
``access.auth`` and ``access.policy``), a token from our own issuer, a real `mcp.Client` in
both eras.

bob may use the whole of ``fx`` but five things of it: for each method, the answer for one of
those and for a name ``fx`` never had must not differ (code, message with the name put aside,
data, shape), with plain arguments, arguments over the server's ``maxArgumentBytes``, and past
a rate limit. A difference tells him that what he may not see exists.

(``tasks/*`` name a task by an id that carries its caller: another caller's task is refused
before any backend is asked, as an id that never existed: tests/gateway/access/
test_tasks_per_user.py.)
"""

from __future__ import annotations

import contextlib
import json
import re
import warnings
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from actors.mcp.sdk_transport.tasks import TasksExtension
from tests.gateway.access.identity import SCOPE, auth_keys, client
from tests.gateway.conftest import GatewayProcess, fixture, write_config
from tests.harness import forkserver
from tests.runtime.conftest import ROOT
from tests.servers.http_server import free_port
from tests.servers.oidc_issuer import OIDCIssuer

pytestmark = pytest.mark.timeout(120)

POLICY = """
@id("ops-fx")
permit (principal in Group::"ops", action in Action::"use", resource in Server::"fx");

@id("hidden-tool")
forbid (principal in Group::"ops", action, resource == Tool::"fx/echo");

@id("hidden-limited-tool")
forbid (principal in Group::"ops", action, resource == Tool::"fx/sleep");

@id("hidden-prompt")
forbid (principal in Group::"ops", action, resource == Prompt::"fx/greet");

@id("hidden-resource")
forbid (principal in Group::"ops", action, resource == Resource::"fixture://greeting");

@id("hidden-template")
forbid (principal in Group::"ops", action, resource == Template::"fixture://items/{item}");
"""

Ask = Callable[[Client, str], Awaitable[Any]]

MAX_ARGUMENT_BYTES = 256
"""``fx``'s ``maxArgumentBytes``: arguments over it are refused whatever they are for."""
LIMITED = ("fx/sleep", "fx/no_such_limited_tool")
"""Tools (one hidden, one absent) with a rate limit of one call an hour per user."""


def _prompt_ref(name: str) -> types.PromptReference:
    return types.PromptReference(type="ref/prompt", name=name)


def _template_ref(uri: str) -> types.ResourceTemplateReference:
    return types.ResourceTemplateReference(type="ref/resource", uri=uri)


async def _subscribe(session: Client, uri: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        return await session.subscribe_resource(uri)


async def _twice(session: Client, name: str) -> Any:
    """The second call: the first took the one the limit allows."""
    with contextlib.suppress(MCPError):
        await session.call_tool(name, {"seconds": 0})
    return await session.call_tool(name, {"seconds": 0})


# method: how it is asked, of what bob may not see, of what does not exist.
METHODS: dict[str, tuple[Ask, str, str]] = {
    "tools/call": (lambda s, n: s.call_tool(n, {"text": "hi"}), "fx__echo", "fx__no_such_tool"),
    "tools/call (arguments too large)": (
        lambda s, n: s.call_tool(n, {"text": "x" * MAX_ARGUMENT_BYTES}),
        "fx__echo",
        "fx__no_such_tool",
    ),
    "tools/call (over its rate)": (_twice, "fx__sleep", "fx__no_such_limited_tool"),
    "prompts/get": (lambda s, n: s.get_prompt(n, {"name": "Ann"}), "fx__greet", "fx__no_such_prompt"),
    "prompts/get (arguments too large)": (
        lambda s, n: s.get_prompt(n, {"name": "x" * MAX_ARGUMENT_BYTES}),
        "fx__greet",
        "fx__no_such_prompt",
    ),
    "completion/complete (prompt)": (
        lambda s, n: s.complete(_prompt_ref(n), {"name": "name", "value": "A"}),
        "fx__greet",
        "fx__no_such_prompt",
    ),
    "completion/complete (template)": (
        lambda s, n: s.complete(_template_ref(n), {"name": "item", "value": "a"}),
        "fixture://items/{item}",
        "fixture://nothing/{item}",
    ),
    "resources/read": (lambda s, n: s.read_resource(n), "fixture://greeting", "fixture://nothing"),
    "resources/read (template)": (
        lambda s, n: s.read_resource(n),
        "fixture://items/apple",
        "fixture://nothing/apple",
    ),
    "resources/subscribe": (_subscribe, "fixture://greeting", "fixture://nothing"),
}


@pytest.fixture(scope="module")
def gateway(issuer: OIDCIssuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    folder = tmp_path_factory.mktemp("hidden-as-absent")
    (folder / "policy.cedar").write_text(POLICY)
    port = free_port()
    hourly = {"perUser": {"rate": 1, "per": "hour", "burst": 1}}
    access = {
        "auth": auth_keys(issuer, f"http://127.0.0.1:{port}/mcp"),
        "policy": "policy.cedar",
        "limits": {"tools": dict.fromkeys(LIMITED, hourly)},
    }
    servers = {"fx": fixture("--surface", maxArgumentBytes=MAX_ARGUMENT_BYTES)}
    with GatewayProcess(write_config(folder, servers, access=access), folder, port=port) as gateway:
        yield gateway


async def answer(session: Client, ask: Ask, name: str) -> tuple[Any, ...]:
    """What ``name`` is answered with, the name itself put aside: an error's code, message and
    data, or a result's type and content (times put aside too: `_aside`)."""
    try:
        result = await ask(session, name)
    except MCPError as exc:
        error = exc.error
        return ("error", error.code, _aside(error.message, name), _aside(json.dumps(error.data), name))
    return ("result", type(result).__name__, _aside(result.model_dump_json(by_alias=True), name))


def _aside(text: str, name: str) -> str:
    """``text`` without ``name`` (as the client gave it, as ``ns/name``, or bare, as a held
    task's error names it), nor the numbers of a time (when to retry after a limit)."""
    text = text.replace(name, "<name>").replace(name.replace("__", "/", 1), "<name>")
    bare = name.partition("__")[2]
    text = re.sub(rf"\b{re.escape(bare)}\b", "<name>", text) if bare else text
    return re.sub(r"\d+\.\d+|\d{4,}", "#", text)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_what_is_hidden_answers_as_what_does_not_exist(
    issuer: OIDCIssuer, gateway: GatewayProcess, mode: str
) -> None:
    bob = issuer.mint(sub=f"bob-{mode}", aud=gateway.url, scope=SCOPE, groups=["ops"])

    async def scenario() -> dict[str, tuple[Any, Any]]:
        answers = {}
        async with client(gateway, bob, mode) as session:
            # What he may use answers: the difference below is of being hidden, nothing else.
            assert (await session.call_tool("fx__add", {"a": 1, "b": 2})).content
            for method, (ask, hidden, absent) in METHODS.items():
                answers[method] = (await answer(session, ask, hidden), await answer(session, ask, absent))
        return answers

    answers = anyio.run(scenario)
    differ = {method: pair for method, pair in answers.items() if pair[0] != pair[1]}
    assert not differ, differ


def test_a_held_call_of_a_hidden_tool_ends_as_one_of_an_absent_tool(
    issuer: OIDCIssuer, tmp_path: Path
) -> None:
    """With ``"tasks": {"hold": true}`` the gateway answers a client that follows tasks with a
    task at once and runs the call behind it: the call of a hidden tool must end as the call of
    a tool that does not exist, and say nothing of the tools the server has."""
    (tmp_path / "policy.cedar").write_text(POLICY)
    port = free_port()
    access = {"auth": auth_keys(issuer, f"http://127.0.0.1:{port}/mcp"), "policy": "policy.cedar"}
    servers = {"fx": fixture("--surface", tasks={"hold": True}, protocol="legacy", healthCheckInterval=0)}

    async def scenario(gateway: GatewayProcess) -> dict[str, tuple[Any, ...]]:
        bob = issuer.mint(sub="bob-held", aud=gateway.url, scope=SCOPE, groups=["ops"])
        async with client(gateway, bob, "2026-07-28", extensions=[TasksExtension()]) as session:
            assert (await session.call_tool("fx__add", {"a": 1, "b": 2})).content
            ask: Ask = lambda s, n: s.call_tool(n, {"text": "hi"})  # noqa: E731
            return {name: await answer(session, ask, name) for name in ("fx__echo", "fx__no_such_tool")}

    with GatewayProcess(write_config(tmp_path, servers, access=access), tmp_path, port=port) as gateway:
        ended = anyio.run(scenario, gateway)
    assert ended["fx__echo"] == ended["fx__no_such_tool"], ended
    assert "add" not in json.dumps(ended["fx__no_such_tool"]), ended  # no hint of fx's tools


def test_a_task_call_of_a_hidden_tool_answers_as_one_of_an_absent_tool(
    issuer: OIDCIssuer, tmp_path: Path
) -> None:
    """A backend that makes tasks (tests/servers/task_server.py) and a client that follows
    them: a call of a hidden tool answers as a call of a tool the backend does not have."""
    (tmp_path / "policy.cedar").write_text(
        '@id("ops-tasks")\npermit (principal in Group::"ops", action, resource in Server::"tasks");\n'
        '@id("hidden")\nforbid (principal, action, resource == Tool::"tasks/slow_compute");\n'
    )
    port = free_port()
    access = {"auth": auth_keys(issuer, f"http://127.0.0.1:{port}/mcp"), "policy": "policy.cedar"}
    command, *args = forkserver.python_module("tests.servers.task_server", "--poll-ms", "50")
    backend = {"command": command, "args": args, "cwd": str(ROOT), "protocol": "2026-07-28"}

    async def scenario(gateway: GatewayProcess) -> dict[str, tuple[Any, ...]]:
        bob = issuer.mint(sub="bob-tasks", aud=gateway.url, scope=SCOPE, groups=["ops"])
        async with client(gateway, bob, "2026-07-28", extensions=[TasksExtension()]) as session:
            assert (await session.list_tools()).tools  # what he may use answers
            ask: Ask = lambda s, n: s.call_tool(n, {"seconds": 0})  # noqa: E731
            return {
                name: await answer(session, ask, name)
                for name in ("tasks__slow_compute", "tasks__no_such_job")
            }

    with GatewayProcess(
        write_config(tmp_path, {"tasks": backend}, access=access), tmp_path, port=port
    ) as gateway:
        ended = anyio.run(scenario, gateway)
    assert ended["tasks__slow_compute"] == ended["tasks__no_such_job"], ended
