"""The host answers servers' requests: sampling (only where the config allows it), elicitation,
roots (a list or a function). A handler runs on a host thread; one that raises gives the server
an error answer, one that hangs is cut off at ``handler_timeout``; neither hurts the session."""

from __future__ import annotations

import threading
from typing import Any

from actors import ErrorType, Runtime
from actors.runtime.messages import CallTool
from tests.surface.conftest import WAIT, ServerEntry, config, json_of, on_host_thread, text_of

EV = "ev"
ANSWER = {
    "role": "assistant",
    "content": {"type": "text", "text": "forty-two"},
    "model": "host-model",
    "stopReason": "endTurn",
}


class Handler:
    """A host handler that records each request (namespace, params, on a host thread?)."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.requests: list[tuple[str, dict[str, Any], bool]] = []

    def __call__(self, namespace: str, params: dict[str, Any]) -> Any:
        self.requests.append((namespace, params, on_host_thread()))
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer

    @property
    def namespaces(self) -> list[str]:
        return [namespace for namespace, _, _ in self.requests]


def test_sampling_reaches_the_host_only_where_the_config_allows_it(surface: ServerEntry) -> None:
    model = Handler(ANSWER)
    servers = {"yes": surface(sampling="allow"), "no": surface(), "deny": surface(sampling="deny")}
    with Runtime.start(config(servers), sampling=model) as rt:
        said = rt.call_tool("yes/sample", {"prompt": "What is six times seven?"}, timeout=WAIT)
        assert text_of(said) == "model host-model said: forty-two"
        [(namespace, params, host_thread)] = model.requests
        assert namespace == "yes" and host_thread
        assert params["messages"][0]["content"] == {"type": "text", "text": "What is six times seven?"}
        assert params["maxTokens"] == 50 and params["systemPrompt"] == "You are a test model."

        # Not allowed: the capability is not even declared to these servers.
        assert text_of(rt.call_tool("no/sample", {"prompt": "x"}, timeout=WAIT)) == "not offered: sampling"
        assert text_of(rt.call_tool("deny/sample", {"prompt": "x"}, timeout=WAIT)) == "not offered: sampling"
        assert model.namespaces == ["yes"]


def test_elicitation_reaches_the_host_unless_the_config_answers_it(surface: ServerEntry) -> None:
    person = Handler({"action": "accept", "content": {"ok": True, "note": "go"}})
    servers = {
        "ask": surface(),
        "asked": surface(elicitation="ask"),
        "decline": surface(elicitation="decline"),
    }
    with Runtime.start(config(servers), elicitation=person) as rt:
        assert text_of(rt.call_tool("ask/elicit", {"question": "Proceed?"}, timeout=WAIT)) == (
            "accept ok=True note=go"
        )
        assert text_of(rt.call_tool("asked/elicit", {"question": "Sure?"}, timeout=WAIT)) == (
            "accept ok=True note=go"
        )
        assert text_of(rt.call_tool("decline/elicit", {"question": "Really?"}, timeout=WAIT)) == "decline"
        assert person.namespaces == ["ask", "asked"]
        _, params, host_thread = person.requests[0]
        assert host_thread
        assert params["message"] == "Proceed?"
        assert set(params["requestedSchema"]["properties"]) == {"ok", "note"}


def test_without_handlers_servers_are_told_the_client_cannot(surface: ServerEntry) -> None:
    with Runtime.start(config({"s": surface(sampling="allow")})) as rt:
        assert text_of(rt.call_tool("s/sample", {"prompt": "x"}, timeout=WAIT)) == "not offered: sampling"
        assert (
            text_of(rt.call_tool("s/elicit", {"question": "x"}, timeout=WAIT)) == "not offered: elicitation"
        )
        assert text_of(rt.call_tool("s/roots", {}, timeout=WAIT)) == "not offered: roots"


def test_roots_come_from_a_list_or_from_a_function_of_the_namespace(surface: ServerEntry) -> None:
    listed: list[str | dict[str, str]] = ["file:///tmp/one", {"uri": "file:///tmp/two", "name": "two"}]
    with Runtime.start(config({"a": surface(), "b": surface()}), roots=listed) as rt:
        expected = [{"uri": "file:///tmp/one", "name": None}, {"uri": "file:///tmp/two", "name": "two"}]
        assert json_of(rt.call_tool("a/roots", {}, timeout=WAIT)) == expected
        assert json_of(rt.call_tool("b/roots", {}, timeout=WAIT)) == expected

    asked: list[tuple[str, bool]] = []

    def per_namespace(namespace: str) -> list[Any]:
        asked.append((namespace, on_host_thread()))
        return [{"uri": f"file:///srv/{namespace}", "name": namespace}]

    with Runtime.start(config({"a": surface(), "b": surface()}), roots=per_namespace) as rt:
        assert json_of(rt.call_tool("a/roots", {}, timeout=WAIT)) == [{"uri": "file:///srv/a", "name": "a"}]
        assert json_of(rt.call_tool("b/roots", {}, timeout=WAIT)) == [{"uri": "file:///srv/b", "name": "b"}]
        assert {namespace for namespace, _ in asked} == {"a", "b"}
        assert all(host_thread for _, host_thread in asked)


def test_a_raising_handler_gives_the_server_an_error_answer_and_nothing_crashes(
    surface: ServerEntry,
) -> None:
    model = Handler(RuntimeError("the host's model is down"))

    def no_roots(namespace: str) -> list[str]:
        raise OSError("the host cannot tell its roots")

    with Runtime.start(config({"s": surface(sampling="allow")}), sampling=model, roots=no_roots) as rt:
        before = rt.start_server("s")
        # The server got an error answer (its own error carries the handler's words back).
        failed = rt.call_tool("s/sample", {"prompt": "x"}, timeout=WAIT)
        assert failed.error_type == ErrorType.SERVER_ERROR, failed
        assert "the host's model is down" in (failed.error or ""), failed
        assert model.namespaces == ["s"]
        roots = rt.call_tool("s/roots", {}, timeout=WAIT)
        assert roots.error_type == ErrorType.SERVER_ERROR, roots
        assert "the host cannot tell its roots" in (roots.error or ""), roots
        # The session goes on: same process, no restart, and it still answers.
        assert text_of(rt.call_tool("s/progress", {"steps": 1}, timeout=WAIT)) == "done 1"
        after = rt.status("s")[0]
        assert (after.state, after.pid, after.restarts) == ("running", before.pid, 0)


def test_a_hanging_handler_is_cut_off_at_handler_timeout(surface: ServerEntry) -> None:
    release = threading.Event()
    returned = threading.Event()

    def stuck_model(namespace: str, params: dict[str, Any]) -> dict[str, Any]:
        release.wait(4 * WAIT)
        returned.set()
        return ANSWER

    with Runtime.start(
        config({"s": surface(sampling="allow")}), sampling=stuck_model, handler_timeout=1.0
    ) as rt:
        try:
            # The call's own timeout is far off: only the handler's can end it this soon.
            message = CallTool(namespace="s", tool="sample", arguments={"prompt": "x"}, timeout=3 * WAIT)
            rt.registry.tell(message)
            result = message.reply.result(timeout=2 * WAIT)
            assert result.error_type == ErrorType.SERVER_ERROR, result
            assert "no answer within 1 s" in (result.error or ""), result
            assert not returned.is_set(), "the handler was not cut off: it answered"
            assert text_of(rt.call_tool("s/progress", {"steps": 1}, timeout=WAIT)) == "done 1"
            status = rt.status("s")[0]
            assert (status.state, status.restarts, status.in_flight) == ("running", 0, 0)
        finally:
            release.set()


def test_server_everything_samples_elicits_and_lists_roots_through_the_host(everything: ServerEntry) -> None:
    model = Handler(ANSWER)
    person = Handler({"action": "decline"})
    servers = {EV: everything(sampling="allow"), "plain": everything()}
    with Runtime.start(config(servers), sampling=model, elicitation=person, roots=["file:///tmp/one"]) as rt:
        sampled = rt.call_tool(
            f"{EV}/trigger-sampling-request", {"prompt": "hi", "maxTokens": 10}, timeout=WAIT
        )
        assert "forty-two" in text_of(sampled)
        assert model.namespaces == [EV]
        assert "declined" in text_of(rt.call_tool(f"{EV}/trigger-elicitation-request", {}, timeout=WAIT))
        assert person.namespaces == [EV]
        assert "file:///tmp/one" in text_of(rt.call_tool(f"{EV}/get-roots-list", {}, timeout=WAIT))
        # Without "sampling": "allow" the server is not told the client can sample: no such tool.
        names = {spec.tool_name for spec in rt.list_tools("plain")}
        assert "trigger-sampling-request" not in names and "get-roots-list" in names
        refused = rt.call_tool("plain/trigger-sampling-request", {"prompt": "hi"}, timeout=WAIT)
        assert refused.error_type == ErrorType.NOT_FOUND, refused
        assert model.namespaces == [EV]


def test_a_handler_that_answers_nonsense_gives_the_server_an_error_answer(surface: ServerEntry) -> None:
    model = Handler({"nonsense": True})
    with Runtime.start(config({"s": surface(sampling="allow")}), sampling=model) as rt:
        failed = rt.call_tool("s/sample", {"prompt": "x"}, timeout=WAIT)
        assert failed.error_type == ErrorType.SERVER_ERROR, failed
        assert model.namespaces == ["s"]
        assert text_of(rt.call_tool("s/progress", {"steps": 1}, timeout=WAIT)) == "done 1"
        assert rt.status("s")[0].restarts == 0
