"""A call made with its own `CallInputs` has them answer what its server asks for it, not the
host's handlers: a 2026-07-28 server's round reaches them whole, a handshake-era server's
requests one at a time; the server is told only the capabilities the inputs declare. A real
server (tests/servers/everything_server.py) in each era, over stdio."""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Mapping
from typing import Any

import pytest

from actors import CallInputs, CallTool, GetPrompt, InputRefused, Runtime
from tests.runtime.conftest import config, stdio_server

WAIT = 60.0

ANSWERS = {
    "elicitation/create": {"action": "accept", "content": {"name": "Alice", "context": "tests"}},
    "sampling/createMessage": {
        "role": "assistant",
        "content": {"type": "text", "text": "Hello"},
        "model": "scripted",
    },
    "roots/list": {"roots": [{"uri": "file:///work", "name": "work"}]},
}


class Scripted:
    """Answers every question from `ANSWERS`, and keeps each round it was asked."""

    def __init__(self, capabilities: Mapping[str, Any] | None = None, refuse: bool = False) -> None:
        self.capabilities = capabilities
        self.rounds: list[list[str]] = []
        self.threads: set[str] = set()
        self._refuse = refuse

    def ask(self, requests: Mapping[str, Any]) -> concurrent.futures.Future[Mapping[str, Any]]:
        self.rounds.append(sorted(request["method"] for request in requests.values()))
        self.threads.add(threading.current_thread().name)
        answers: concurrent.futures.Future[Mapping[str, Any]] = concurrent.futures.Future()
        if self._refuse:
            answers.set_exception(InputRefused(-32021, "no", {"requiredCapabilities": {"sampling": {}}}))
        else:
            answers.set_result({key: ANSWERS[request["method"]] for key, request in requests.items()})
        return answers


def _never(*args: Any) -> Any:
    raise AssertionError("the host's handler answered a call that had inputs of its own")


def _runtime(era: str) -> Runtime:
    server = stdio_server("everything_server", protocol=era, sampling="allow")
    return Runtime.start(config({"e": server}), sampling=_never, elicitation=_never, roots=_never)


@pytest.mark.parametrize("era", ["2026-07-28", "legacy"])
def test_the_calls_inputs_answer_its_servers_questions(era: str) -> None:
    inputs = Scripted()
    assert isinstance(inputs, CallInputs)
    with _runtime(era) as rt:
        call = CallTool("e", "test_input_required_result_multiple_inputs", {}, inputs=inputs)
        rt.registry.tell(call)
        result = call.reply.result(timeout=WAIT)
        assert result.success, result
        assert result.text == "Hello Alice, roots: 1"
        if era == "2026-07-28":
            assert inputs.rounds == [["elicitation/create", "roots/list", "sampling/createMessage"]]
        else:
            one_at_a_time = [["elicitation/create"], ["roots/list"], ["sampling/createMessage"]]
            assert sorted(inputs.rounds) == one_at_a_time
        assert not any(name.startswith("mcp-actors-loop") for name in inputs.threads), inputs.threads


def test_the_server_is_told_only_what_the_inputs_declare() -> None:
    inputs = Scripted(capabilities={"sampling": {}})
    with _runtime("2026-07-28") as rt:
        call = CallTool("e", "test_input_required_result_capabilities", {}, inputs=inputs)
        rt.registry.tell(call)
        result = call.reply.result(timeout=WAIT)
        assert result.success, result
        assert inputs.rounds == [["sampling/createMessage"]]
        assert "greeting: Hello" in result.text


def test_a_server_needing_an_undeclared_capability_fails_the_call_with_32021_kept() -> None:
    with _runtime("2026-07-28") as rt:
        call = CallTool("e", "test_missing_capability", {}, inputs=Scripted(capabilities={}))
        rt.registry.tell(call)
        result = call.reply.result(timeout=WAIT)
        assert not result.success
        assert result.metadata["jsonrpc_error"]["code"] == -32021
        assert "sampling" in result.metadata["jsonrpc_error"]["data"]["requiredCapabilities"]


@pytest.mark.parametrize("era", ["2026-07-28", "legacy"])
def test_refused_inputs_fail_the_call_and_the_server_goes_on(era: str) -> None:
    with _runtime(era) as rt:
        call = CallTool("e", "test_input_required_result_sampling", {}, inputs=Scripted(refuse=True))
        rt.registry.tell(call)
        assert not call.reply.result(timeout=WAIT).success
        again = CallTool("e", "test_input_required_result_sampling", {}, inputs=Scripted())
        rt.registry.tell(again)
        assert again.reply.result(timeout=WAIT).success


@pytest.mark.parametrize("era", ["2026-07-28", "legacy"])
def test_a_prompts_inputs_answer_its_servers_questions(era: str) -> None:
    inputs = Scripted()
    with _runtime(era) as rt:
        get = GetPrompt("e", "test_input_required_result_prompt", {}, inputs=inputs)
        rt.registry.tell(get)
        result = get.reply.result(timeout=WAIT)
        assert result.success, result
        assert inputs.rounds == [["elicitation/create"]]
