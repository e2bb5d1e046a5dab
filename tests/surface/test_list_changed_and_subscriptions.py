"""list_changed for resources and prompts re-lists them; resource subscriptions get updates in
both eras (``resources/subscribe``, ``subscriptions/listen``), outlive a server restart, and
stop at ``cancel()``."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from actors import ErrorType, Runtime, ToolError
from actors.runtime.messages import SubscribeResource
from tests.conftest import wait_until
from tests.servers.surface_server import COUNTER_URI, HELLO_URI
from tests.surface.conftest import (
    WAIT,
    ServerEntry,
    Updates,
    bump_until,
    config,
    json_of,
    read_text,
    surface_server,
    text_of,
)

NS = "s"
EV = "ev"


def test_list_changed_for_resources_and_prompts_relists_them(surface: ServerEntry) -> None:
    with Runtime.start(config({NS: surface()})) as rt:
        assert "surface://added/fresh" not in {r.uri for r in rt.list_resources(NS)}
        assert text_of(
            rt.call_tool(f"{NS}/add_resource", {"name": "fresh", "text": "new!"}, timeout=WAIT)
        ) == ("surface://added/fresh")
        assert wait_until(lambda: "surface://added/fresh" in {r.uri for r in rt.list_resources(NS)}, WAIT)
        assert read_text(rt.read_resource(NS, "surface://added/fresh", timeout=WAIT)) == "new!"

        assert text_of(rt.call_tool(f"{NS}/add_prompt", {"name": "hatched"}, timeout=WAIT)) == "hatched"
        assert wait_until(lambda: f"{NS}/hatched" in {p.name for p in rt.list_prompts(NS)}, WAIT)
        hatched = rt.get_prompt(f"{NS}/hatched", timeout=WAIT)
        assert hatched.output is not None, hatched
        assert hatched.output["messages"][0]["content"]["text"] == "I am hatched"
        # The earlier entries are still there: a re-list replaces the whole list, atomically.
        assert HELLO_URI in {r.uri for r in rt.list_resources(NS)}
        assert f"{NS}/greet" in {p.name for p in rt.list_prompts(NS)}


def test_a_subscription_gets_updates_on_a_host_thread_until_cancelled(surface: ServerEntry) -> None:
    with Runtime.start(config({NS: surface()})) as rt:
        first = Updates()
        subscription = rt.subscribe_resource(NS, COUNTER_URI, first)
        assert (subscription.namespace, subscription.uri) == (NS, COUNTER_URI)
        bump_until(rt, first, 1)
        assert set(first.uris) == {COUNTER_URI}
        assert all(first.on_host_thread), "an update callback ran on the loop or an actor thread"

        # A second subscriber to the same resource, made after the first is cancelled, is
        # told of every later update; the first hears nothing more. Updates reach callbacks in
        # order on one thread: what the first had when the second got its first one is final.
        assert subscription.cancel()
        assert not subscription.cancel()  # once only
        second = Updates()
        frozen: list[int] = []

        def then_count_first(uri: str) -> None:
            if not frozen:
                frozen.append(len(first))
            second(uri)

        message = SubscribeResource(namespace=NS, uri=COUNTER_URI, on_update=then_count_first)
        rt.registry.tell(message)
        renewed = message.reply.result(timeout=WAIT)
        bump_until(rt, second, 3)
        assert len(first) == frozen[0], "a cancelled subscription still got updates"
        assert renewed.cancel()


def test_a_cancelled_subscription_is_ended_at_the_server_once_no_one_follows(marker_dir: Path) -> None:
    # Only the handshake era's resources/subscribe lets the server tell what is subscribed.
    with surface_server("stdio", "legacy", marker_dir) as entry, Runtime.start(config({NS: entry()})) as rt:

        def subscribed() -> list[str]:
            listed: list[str] = json_of(rt.call_tool(f"{NS}/subscribed", {}, timeout=WAIT))
            return listed

        first, second = Updates(), Updates()
        one = rt.subscribe_resource(NS, COUNTER_URI, first)
        two = rt.subscribe_resource(NS, COUNTER_URI, second)
        assert wait_until(lambda: subscribed() == [COUNTER_URI], WAIT)
        assert one.cancel()
        # Someone still follows it: the server keeps sending updates.
        bump_until(rt, second, len(second) + 1)
        assert subscribed() == [COUNTER_URI]
        assert two.cancel()
        assert wait_until(lambda: subscribed() == [], WAIT)


def test_subscriptions_outlive_a_server_restart(surface_stdio: ServerEntry) -> None:
    entry = surface_stdio(restartBackoff=0.05, restartBackoffMax=0.2)
    with Runtime.start(config({NS: entry})) as rt:
        updates = Updates()
        subscription = rt.subscribe_resource(NS, COUNTER_URI, updates)
        bump_until(rt, updates, 1)
        before = rt.status(NS)[0]
        assert before.pid is not None
        os.kill(before.pid, signal.SIGKILL)

        def restarted() -> bool:
            status = rt.status(NS)[0]
            return status.restarts == 1 and status.state == "running" and status.pid != before.pid

        assert wait_until(restarted, WAIT), rt.status(NS)
        # The new process was subscribed anew: updates keep coming.
        bump_until(rt, updates, len(updates) + 2)
    # Shut down with the subscription live: ending it afterwards is a no-op, not a hang.
    assert not subscription.cancel(timeout=WAIT)


def test_after_a_restart_the_lists_are_what_the_new_process_offers(surface_stdio: ServerEntry) -> None:
    with Runtime.start(config({NS: surface_stdio(restartBackoff=0.05)})) as rt:
        assert rt.call_tool(f"{NS}/add_resource", {"name": "gone", "text": "soon"}, timeout=WAIT).success
        assert rt.call_tool(f"{NS}/add_prompt", {"name": "ephemeral"}, timeout=WAIT).success
        assert wait_until(lambda: f"{NS}/ephemeral" in {p.name for p in rt.list_prompts(NS)}, WAIT)
        assert wait_until(lambda: "surface://added/gone" in {r.uri for r in rt.list_resources(NS)}, WAIT)
        before = rt.status(NS)[0]
        assert before.pid is not None
        os.kill(before.pid, signal.SIGKILL)

        def restarted() -> bool:
            status = rt.status(NS)[0]
            return status.restarts == 1 and status.state == "running"

        assert wait_until(restarted, WAIT), rt.status(NS)
        assert "surface://added/gone" not in {r.uri for r in rt.list_resources(NS)}
        assert [p.name for p in rt.list_prompts(NS)] == [f"{NS}/greet", f"{NS}/plain"]
        assert rt.get_prompt(f"{NS}/ephemeral", timeout=WAIT).error_type == ErrorType.NOT_FOUND


def test_subscribing_needs_a_known_namespace_and_a_callable(surface_stdio: ServerEntry) -> None:
    with Runtime.start(config({NS: surface_stdio()})) as rt:
        with pytest.raises(ToolError) as unknown:
            rt.subscribe_resource("nowhere", COUNTER_URI, Updates())
        assert unknown.value.error_type == ErrorType.NOT_FOUND
        with pytest.raises(ToolError) as not_callable:
            rt.subscribe_resource(NS, COUNTER_URI, "print")  # type: ignore[arg-type]
        assert not_callable.value.error_type == ErrorType.VALIDATION


def test_server_everything_sends_updates_to_a_subscription_and_lists_new_resources(
    everything: ServerEntry,
) -> None:
    with Runtime.start(config({EV: everything()})) as rt:
        uri = "demo://resource/dynamic/text/1"
        updates = Updates()
        subscription = rt.subscribe_resource(EV, uri, updates)
        try:
            # Updates every 5 s once toggled on, for what the session subscribed to.
            assert "Started" in text_of(rt.call_tool(f"{EV}/toggle-subscriber-updates", {}, timeout=WAIT))
            with updates.arrived:
                assert updates.arrived.wait_for(lambda: len(updates) >= 1, 2 * WAIT), updates.uris
            assert set(updates.uris) == {uri}
        finally:
            rt.call_tool(f"{EV}/toggle-subscriber-updates", {}, timeout=WAIT)
            subscription.cancel()

        # A tool that registers a session resource announces it (resources/list_changed).
        zipped = rt.call_tool(
            f"{EV}/gzip-file-as-resource",
            {"name": "hello.txt.gz", "data": "data:text/plain;base64,aGVsbG8="},
            timeout=WAIT,
        )
        assert zipped.success, zipped
        session_uri = "demo://resource/session/hello.txt.gz"
        assert wait_until(lambda: session_uri in {r.uri for r in rt.list_resources(EV)}, WAIT)
