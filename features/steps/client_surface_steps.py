"""Steps for client_surface.feature: the surface server (tests/servers/surface_server.py) over
stdio, reached through the `Runtime` as an agent host would."""

from __future__ import annotations

import base64
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from behave import given, then, when
from behave.runner import Context

from actors import Runtime, ToolResult
from actors.mcp.loop import THREAD_NAME as LOOP_THREAD
from actors.runtime.messages import ResourceSubscription

WAIT = 30.0
ROOT = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ANSWER_MODEL = "host-model"
# The threads of the runtime's own actors: host code must never run on one.
_ACTOR_THREADS = ("ServerActor-", "RegistryActor-", "SupervisorActor-", "BuiltinActor-")


def _wait_until(predicate: Any, timeout: float = WAIT, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            return bool(predicate())
        time.sleep(interval)
    return True


def _on_host_thread() -> bool:
    name = threading.current_thread().name
    return name != LOOP_THREAD and not name.startswith(_ACTOR_THREADS)


def _surface(**keys: Any) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": ["-m", "tests.servers.surface_server"],
        "cwd": str(ROOT),
        **keys,
    }


def _start(context: Context, name: str, entry: dict[str, Any], **handlers: Any) -> Runtime:
    runtime = Runtime.start({"mcpServers": {name: entry}, "builtin": {"enabled": False}}, **handlers)
    context.add_cleanup(runtime.shutdown)
    context.surface_runtime = runtime
    return runtime


def _runtime(context: Context) -> Runtime:
    runtime: Runtime = context.surface_runtime
    return runtime


class _Updates:
    """An ``on_update`` callback: the URIs heard, in order."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self.changed = threading.Condition()

    def __call__(self, uri: str) -> None:
        with self.changed:
            self.uris.append(uri)
            self.changed.notify_all()

    def wait_for(self, count: int, timeout: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: len(self.uris) >= count, timeout)


def _change_until_heard(runtime: Runtime, namespace: str, updates: _Updates, count: int) -> None:
    # A subscription takes effect a moment after it is made: the first changes may go unheard.
    def heard() -> bool:
        if len(updates.uris) >= count:
            return True
        assert runtime.call_tool(f"{namespace}/bump", {}, timeout=WAIT).success
        return updates.wait_for(count, 0.5)

    assert _wait_until(heard), f"heard {len(updates.uris)} changes, wanted {count}"


# ---- givens -------------------------------------------------------------------------------


@given('a runtime with the surface server as "{name:w}"')
def step_surface_runtime(context: Context, name: str) -> None:
    _start(context, name, _surface())


@given('a runtime with the surface server as "{name:w}" speaking {era}')
def step_surface_runtime_in_era(context: Context, name: str, era: str) -> None:
    _start(context, name, _surface(protocol=era))


@given('a runtime with the surface server as "{name:w}", {allowed} to sample a model that answers "{text}"')
def step_surface_runtime_with_model(context: Context, name: str, allowed: str, text: str) -> None:
    assert allowed in ("allowed", "not allowed"), allowed
    context.model_asked = []

    def model(namespace: str, params: dict[str, Any]) -> dict[str, Any]:
        context.model_asked.append((namespace, params, _on_host_thread()))
        return {"role": "assistant", "content": {"type": "text", "text": text}, "model": ANSWER_MODEL}

    entry = _surface(sampling="allow") if allowed == "allowed" else _surface()
    _start(context, name, entry, sampling=model)


@given('the host has listed the resources of "{name}" and stopped the server')
def step_listed_and_stopped(context: Context, name: str) -> None:
    runtime = _runtime(context)
    assert runtime.list_resources(name), "the server listed no resources"
    assert runtime.stop_server(name).state == "stopped"


# ---- resources ----------------------------------------------------------------------------


@when('the host lists the resources of "{name}"')
def step_list_resources(context: Context, name: str) -> None:
    context.resources = {r.uri: r for r in _runtime(context).list_resources(name)}


@then('the resources include "{uri}" of type "{mime_type}"')
def step_resources_include(context: Context, uri: str, mime_type: str) -> None:
    assert uri in context.resources, sorted(context.resources)
    assert context.resources[uri].mime_type == mime_type, context.resources[uri]


@then('the server "{name}" is still stopped')
def step_still_stopped(context: Context, name: str) -> None:
    status = _runtime(context).status(name)[0]
    assert (status.state, status.pid) == ("stopped", None), status


@when('the host reads "{uri}" from "{name}"')
def step_read(context: Context, uri: str, name: str) -> None:
    result = _runtime(context).read_resource(name, uri, timeout=WAIT)
    assert result.success and result.output is not None, result
    [context.content] = result.output["contents"]


@then('the host gets the text "{text}"')
def step_read_text(context: Context, text: str) -> None:
    assert context.content.get("text") == text, context.content


@then("the host gets a PNG image")
def step_read_png(context: Context) -> None:
    assert context.content.get("mimeType") == "image/png", context.content
    assert base64.b64decode(context.content["blob"]).startswith(PNG_MAGIC)


# ---- prompts ------------------------------------------------------------------------------


@when('the host gets the prompt "{name}" with {arguments}')
def step_get_prompt(context: Context, name: str, arguments: str) -> None:
    context.prompt = _runtime(context).get_prompt(name, json.loads(arguments), timeout=WAIT)


@then('the prompt\'s first message says "{text}"')
def step_prompt_says(context: Context, text: str) -> None:
    prompt: ToolResult = context.prompt
    assert prompt.success and prompt.output is not None, prompt
    assert prompt.output["messages"][0]["content"]["text"] == text, prompt.output


@then('the prompt is refused as "{error_type}" naming the argument "{argument}"')
def step_prompt_refused(context: Context, error_type: str, argument: str) -> None:
    prompt: ToolResult = context.prompt
    assert prompt.error_type == error_type, prompt
    assert repr(argument) in (prompt.error or ""), prompt


# ---- calls, progress, sampling ------------------------------------------------------------


@when('the host calls "{name}" with {arguments}, following its progress')
def step_call_with_progress(context: Context, name: str, arguments: str) -> None:
    context.progress = []
    context.all_progress = threading.Event()
    steps = json.loads(arguments).get("steps", 0)

    def follow(progress: float, total: float | None, message: str | None) -> None:
        context.progress.append((progress, total, _on_host_thread()))
        if len(context.progress) >= steps:
            context.all_progress.set()

    context.call = _runtime(context).call_tool(name, json.loads(arguments), timeout=WAIT, progress=follow)


@when('the host calls "{name}" with {arguments}')
def step_call(context: Context, name: str, arguments: str) -> None:
    context.call = _runtime(context).call_tool(name, json.loads(arguments), timeout=WAIT)


@then('the call answers "{text}"')
def step_call_answers(context: Context, text: str) -> None:
    call: ToolResult = context.call
    assert call.success, call
    assert call.text == text, call


@then("the host saw the progress {steps} of {total:d} in order, away from the event loop")
def step_saw_progress(context: Context, steps: str, total: int) -> None:
    expected = [float(step) for step in steps.split(", ")]
    assert context.all_progress.wait(WAIT), context.progress
    assert [p for p, _, _ in context.progress] == expected, context.progress
    assert all(t == total for _, t, _ in context.progress), context.progress
    assert all(host for _, _, host in context.progress), "progress was reported on the loop or an actor"


@then('the model was asked "{text}" for "{name}"')
def step_model_asked(context: Context, text: str, name: str) -> None:
    [(namespace, params, on_host)] = context.model_asked
    assert namespace == name and on_host, context.model_asked
    assert params["messages"][0]["content"]["text"] == text, params


@then("the model was never asked")
def step_model_never_asked(context: Context) -> None:
    assert context.model_asked == [], context.model_asked


# ---- subscriptions ------------------------------------------------------------------------


@when('the host subscribes to "{uri}" of "{name}"')
def step_subscribe(context: Context, uri: str, name: str) -> None:
    context.updates = _Updates()
    context.subscription = _runtime(context).subscribe_resource(name, uri, context.updates)
    context.subscribed_namespace = name


@when('the counter of "{name}" changes until the host hears of it')
def step_change_until_heard(context: Context, name: str) -> None:
    _change_until_heard(_runtime(context), name, context.updates, 1)


@then('the host heard that "{uri}" changed')
def step_heard(context: Context, uri: str) -> None:
    assert context.updates.uris and set(context.updates.uris) == {uri}, context.updates.uris


@when("the host cancels the subscription")
def step_cancel_subscription(context: Context) -> None:
    subscription: ResourceSubscription = context.subscription
    assert subscription.cancel(), "the subscription was not live"


@then('later changes of "{uri}" are not heard')
def step_not_heard(context: Context, uri: str) -> None:
    runtime, name = _runtime(context), context.subscribed_namespace
    cancelled: _Updates = context.updates
    # Updates reach callbacks in order, on one thread: once a newer subscriber hears a change,
    # the cancelled one would have heard it too.
    heard_when_cancelled: list[int] = []
    newer = _Updates()

    def then_count(changed: str) -> None:
        if not heard_when_cancelled:
            heard_when_cancelled.append(len(cancelled.uris))
        newer(changed)

    renewed = runtime.subscribe_resource(name, uri, then_count)
    try:
        _change_until_heard(runtime, name, newer, 2)
    finally:
        renewed.cancel()
    assert len(cancelled.uris) == heard_when_cancelled[0], cancelled.uris
