"""What the policy hides from a caller answers exactly as what does not exist, on every method
the gateway serves that names one thing: a real gateway (``mcp-actors serve --http`` with
``access.auth`` and ``access.policy``), a token from our own issuer, a real `mcp.Client` in
both eras.

bob may use the whole of ``fx`` but four things of it: for each method, the answer for one of
those and for a name ``fx`` never had must not differ (code, message with the name put aside,
data, shape). A difference tells him that what he may not see exists.

(``tasks/*`` name a task by an id that carries its caller: another caller's task is refused
before any backend is asked, as an id that never existed: tests/gateway/access/
test_tasks_per_user.py.)
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from tests.gateway.access.identity import SCOPE, client
from tests.gateway.access.test_policy_gateway import policy_gateway
from tests.gateway.conftest import GatewayProcess
from tests.servers.oidc_issuer import OIDCIssuer

pytestmark = pytest.mark.timeout(120)

POLICY = """
@id("ops-fx")
permit (principal in Group::"ops", action in Action::"use", resource in Server::"fx");

@id("hidden-tool")
forbid (principal in Group::"ops", action, resource == Tool::"fx/echo");

@id("hidden-prompt")
forbid (principal in Group::"ops", action, resource == Prompt::"fx/greet");

@id("hidden-resource")
forbid (principal in Group::"ops", action, resource == Resource::"fixture://greeting");

@id("hidden-template")
forbid (principal in Group::"ops", action, resource == Template::"fixture://items/{item}");
"""

Ask = Callable[[Client, str], Awaitable[Any]]


def _prompt_ref(name: str) -> types.PromptReference:
    return types.PromptReference(type="ref/prompt", name=name)


def _template_ref(uri: str) -> types.ResourceTemplateReference:
    return types.ResourceTemplateReference(type="ref/resource", uri=uri)


async def _subscribe(session: Client, uri: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        return await session.subscribe_resource(uri)


# method: how it is asked, of what bob may not see, of what does not exist.
METHODS: dict[str, tuple[Ask, str, str]] = {
    "tools/call": (lambda s, n: s.call_tool(n, {"text": "hi"}), "fx__echo", "fx__no_such_tool"),
    "prompts/get": (lambda s, n: s.get_prompt(n, {"name": "Ann"}), "fx__greet", "fx__no_such_prompt"),
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
    yield from policy_gateway(tmp_path_factory.mktemp("hidden-as-absent"), issuer, POLICY)


async def answer(session: Client, ask: Ask, name: str) -> tuple[Any, ...]:
    """What ``name`` is answered with, the name itself put aside: an error's code, message and
    data, or a result's type and content."""
    try:
        result = await ask(session, name)
    except MCPError as exc:
        error = exc.error
        return ("error", error.code, error.message.replace(name, "<name>"), error.data)
    shown = result.model_dump_json(by_alias=True, exclude_none=True).replace(name, "<name>")
    return ("result", type(result).__name__, shown)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_what_is_hidden_answers_as_what_does_not_exist(
    issuer: OIDCIssuer, gateway: GatewayProcess, mode: str
) -> None:
    bob = issuer.mint(sub="bob", aud=gateway.url, scope=SCOPE, groups=["ops"])

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
