"""The runtime honours its servers' caching hints (SEP-2549): a host's list within a list's TTL
costs the server nothing, a list past it (or of TTL 0) is listed again first while the server
runs, asks that pile up share one request, and handshake-era servers behave as they always
did. On disk, a private list is read back only with the same credentials. A real server
(tests/servers/cache_hint_server.py) over stdio; time on a `ManualClock` where it matters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from actors import Runtime
from actors.mcp.freshness import ListFreshness
from actors.runtime.clock import ManualClock
from actors.runtime.messages import ListResources, ListTools
from tests.conftest import wait_until
from tests.runtime.conftest import config, stdio_server

WAIT = 30.0


def hinted(
    ttl_ms: int,
    scope: str = "public",
    *,
    era: str = "2026-07-28",
    delay: float = 0.0,
    listen: bool = True,
    **more: Any,
) -> dict[str, Any]:
    args = ("--ttl-ms", str(ttl_ms), "--scope", scope, "--list-delay", str(delay))
    args += () if listen else ("--no-listen",)
    return stdio_server("cache_hint_server", *args, protocol=era, healthCheckInterval=0, **more)


def listed(rt: Runtime) -> int:
    """How many ``tools/list`` requests the server has answered (asking it lists nothing)."""
    result = rt.call_tool("h/listed", {}, timeout=WAIT)
    assert result.success, result
    return int(result.text)


def names(rt: Runtime, namespace: str | None = "h") -> set[str]:
    return {spec.name for spec in rt.list_tools(namespace, timeout=WAIT)}


def asked(rt: Runtime, message: Any) -> Any:
    """Send a list request to the registry; its freshness, once answered."""
    rt.registry.tell(message)
    message.reply.result(WAIT)
    assert message.freshness.done(), "the freshness is settled before the reply"
    return message.freshness.result()


def test_a_list_within_its_ttl_costs_no_request_and_one_past_it_is_listed_again() -> None:
    clock = ManualClock()
    with Runtime.start(config({"h": hinted(60_000)}), clock=clock) as rt:
        assert "h/listed" in names(rt)  # never seen: started to learn its lists
        for _ in range(3):
            names(rt)
            names(rt, None)
        assert listed(rt) == 1
        assert asked(rt, ListTools("h")) == ListFreshness(60_000, "public")
        clock.advance(59.0)
        assert asked(rt, ListTools()) == ListFreshness(1_000, "public")
        assert listed(rt) == 1
        clock.advance(1.0)  # as old as its TTL: stale
        names(rt)
        assert listed(rt) == 2
        assert asked(rt, ListTools("h")) == ListFreshness(60_000, "public")  # just listed
        names(rt)
        assert listed(rt) == 2


def test_a_ttl_of_0_is_listed_again_on_each_host_list_and_piled_up_asks_share_one() -> None:
    # A server that tells no list changes: its TTL of 0 is all there is to go by.
    with Runtime.start(config({"h": hinted(0, "private", delay=0.3, listen=False)})) as rt:
        names(rt)
        assert listed(rt) == 1
        names(rt)
        assert listed(rt) == 2
        names(rt, None)
        assert listed(rt) == 3
        piled = [ListTools() for _ in range(8)]
        for message in piled:
            rt.registry.tell(message)
        for message in piled:
            assert "h/listed" in {spec.name for spec in message.reply.result(WAIT)}
            assert message.freshness.result(0) == ListFreshness(0, "private")
        assert listed(rt) == 4  # eight asks, one tools/list
        # A lookup (not a listing) never waits for one.
        assert asked(rt, ListTools("h", refresh=False)) == ListFreshness(0, "private")
        assert listed(rt) == 4


def test_a_ttl_of_0_of_a_server_that_tells_its_changes_waits_for_them() -> None:
    with Runtime.start(config({"h": hinted(0, "private")})) as rt:
        names(rt)
        for _ in range(3):
            names(rt)
            names(rt, None)
        assert listed(rt) == 1  # listed once, on its start: its changes will be told
        assert asked(rt, ListTools("h")) == ListFreshness(0, "private")  # and passed on as it is
        assert rt.call_tool("h/add_tool", {"name": "sprout"}, timeout=WAIT).success
        assert wait_until(lambda: "h/sprout" in names(rt), WAIT), "the change was told, then listed"
        # Listed again for the change (a host list that came meanwhile may have cost one more:
        # a change is a level, not a count); then host lists cost nothing again.
        after = listed(rt)
        assert 2 <= after <= 3
        for _ in range(3):
            names(rt)
        assert listed(rt) == after


def test_a_handshake_era_server_is_listed_once_as_always() -> None:
    with Runtime.start(config({"h": hinted(0, era="legacy")})) as rt:
        for _ in range(3):
            assert "h/listed" in names(rt)
        assert listed(rt) == 1
        assert asked(rt, ListTools()) is None  # no hints in that era


def test_a_server_that_is_not_running_is_answered_from_what_is_known_and_lists_on_start() -> None:
    with Runtime.start(config({"h": hinted(0)})) as rt:
        names(rt)
        rt.stop_server("h", timeout=WAIT)
        assert "h/listed" in names(rt)  # stale (TTL 0), yet answered: lazy start is the point
        assert rt.status("h")[0].state == "stopped"
        rt.start_server("h", timeout=WAIT)
        assert listed(rt) == 1  # the new process listed on its start


def test_a_list_the_server_says_changed_is_listed_again_within_its_ttl() -> None:
    with Runtime.start(config({"h": hinted(3_600_000)}), clock=ManualClock()) as rt:
        names(rt)
        assert rt.call_tool("h/add_tool", {"name": "fresh_tool"}, timeout=WAIT).success
        assert wait_until(lambda: "h/fresh_tool" in names(rt), WAIT)
        assert listed(rt) == 2
        assert asked(rt, ListTools("h")) == ListFreshness(3_600_000, "public")


def test_the_catalog_is_listed_again_past_its_ttl() -> None:
    clock = ManualClock()
    with Runtime.start(config({"h": hinted(10_000)}), clock=clock) as rt:
        assert [r.uri for r in rt.list_resources("h", timeout=WAIT)] == ["hint://value"]
        assert asked(rt, ListResources("h")) == ListFreshness(10_000, "public")
        clock.advance(10.0)
        assert asked(rt, ListResources("h")) == ListFreshness(10_000, "public")  # listed again first
        # The server's own hint changes: the next list past it carries the new one.
        assert rt.call_tool("h/set_hint", {"ttl_ms": 5_000, "scope": "private"}, timeout=WAIT).success
        clock.advance(10.0)
        assert asked(rt, ListResources("h")) == ListFreshness(5_000, "private")
        read = rt.read_resource("h", "hint://value", timeout=WAIT)
        assert read.metadata["cacheHint"] == {"ttlMs": 5_000, "cacheScope": "private"}
        assert set(read.output or {}) <= {"contents", "_meta"}  # the hint is beside the answer


def test_a_read_that_needed_the_clients_input_carries_no_hint() -> None:
    asked: list[dict[str, Any]] = []

    def elicitation(namespace: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"name": "Ada"}}

    with Runtime.start(config({"h": hinted(60_000)}), elicitation=elicitation) as rt:
        read = rt.read_resource("h", "hint://asks/caching", timeout=WAIT)
        assert read.success, read
        assert read.output is not None and read.output["contents"][0]["text"] == "hello Ada, about caching"
        assert [params["message"] for params in asked] == ["Who reads?"]
        assert "cacheHint" not in read.metadata  # a retry's result must not be cached
        plain = rt.read_resource("h", "hint://value", timeout=WAIT)
        assert plain.metadata["cacheHint"] == {"ttlMs": 60_000, "cacheScope": "public"}


@pytest.mark.parametrize("scope", ["public", "private"])
def test_a_private_list_on_disk_is_not_served_to_other_credentials(tmp_path: Path, scope: str) -> None:
    cache = tmp_path / "schemas"
    first = hinted(60_000, scope, env={"HINT_EXTRA_TOOL": "tool_one"})
    with Runtime.start(config({"h": first}), schema_cache=cache) as rt:
        assert "h/tool_one" in names(rt)
        assert wait_until(lambda: len(list(cache.glob("*.json"))) == 1, WAIT)
        rt.host.delivered().result(WAIT)  # every save has run
    # The same server with another credential value (the environment's values are credentials).
    second = hinted(60_000, scope, env={"HINT_EXTRA_TOOL": "tool_two"})
    with Runtime.start(config({"h": second}), schema_cache=cache) as rt:
        tools = names(rt)
        if scope == "public":
            assert "h/tool_one" in tools  # shared: read from disk, the server not started
            assert rt.status("h")[0].state == "idle"
            rt.start_server("h", timeout=WAIT)  # and once it starts, it lists anew
            assert wait_until(lambda: "h/tool_two" in names(rt) and "h/tool_one" not in names(rt), WAIT)
        else:
            assert "h/tool_two" in tools and "h/tool_one" not in tools  # had to start to learn
            assert rt.status("h")[0].state == "running"
