"""`AsyncRuntime`: every `Runtime` method awaited on the host's own loop, against the real surface
server over stdio in both eras. Cancelling the awaiting task cancels the request at the server;
many awaits in flight park no thread; async progress arrives in order before the answer; a
resource's updates come as an async iterator."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from actors import AsyncRuntime, ErrorType, ToolError
from tests.conftest import wait_until
from tests.servers.surface_server import HELLO_TEXT, HELLO_URI
from tests.surface.conftest import WAIT, ServerEntry, config, read_text, text_of

NS = "s"
COUNTER = "surface://counter"


def test_every_request_is_awaitable_and_answers_as_the_runtime_does(surface_stdio: ServerEntry) -> None:
    async def scenario() -> None:
        async with AsyncRuntime.start(config({NS: surface_stdio()})) as rt:
            assert [s.state for s in await rt.status(NS)] == ["idle"]  # lazy: nothing started
            assert text_of(await rt.call_tool(f"{NS}/progress", {"steps": 1}, timeout=WAIT)) == "done 1"
            assert {t.name for t in await rt.list_tools(NS)} >= {f"{NS}/progress", f"{NS}/sleep"}
            assert HELLO_URI in {r.uri for r in await rt.list_resources(NS)}
            assert await rt.list_resource_templates(NS)
            assert {p.name for p in await rt.list_prompts(NS)} >= {f"{NS}/greet", f"{NS}/plain"}
            assert read_text(await rt.read_resource(NS, HELLO_URI, timeout=WAIT)) == HELLO_TEXT
            prompt = await rt.get_prompt(f"{NS}/greet", {"name": "Ada"}, timeout=WAIT)
            assert prompt.success and "Ada" in str(prompt.output), prompt
            completed = await rt.complete(NS, "greet", ("style", "f"), timeout=WAIT)
            assert completed.success and completed.output["values"] == ["formal", "friendly"], completed
            # Refused the one way, classified, never raised.
            assert (await rt.call_tool("no-slash")).error_type == ErrorType.NOT_FOUND
            assert (await rt.call_tool(f"{NS}/progress", {"steps": "x"})).error_type == ErrorType.VALIDATION
            assert (await rt.call_tool(f"{NS}/progress", {}, timeout=-1)).error_type == ErrorType.VALIDATION
            timed_out = await rt.call_tool(f"{NS}/sleep", {"seconds": 60}, timeout=0.5)
            assert timed_out.error_type == ErrorType.TIMEOUT, timed_out
            stopped = await rt.stop_server(NS)
            assert stopped.state in ("idle", "stopped"), stopped
            assert (await rt.start_server(NS)).state == "running"
            assert await rt.unregister_server(NS)
            assert (await rt.call_tool(f"{NS}/progress", {"steps": 1})).error_type == ErrorType.NOT_FOUND
        with pytest.raises(ToolError):
            await rt.list_tools()  # shut down
        assert (await rt.call_tool(f"{NS}/progress")).error_type == ErrorType.CANCELLED

    asyncio.run(scenario())


def test_cancelling_the_awaiting_task_cancels_the_call_at_the_server(
    surface_stdio: ServerEntry, marker_dir: Path
) -> None:
    async def scenario() -> None:
        async with AsyncRuntime.start(config({NS: surface_stdio()})) as rt:
            await rt.start_server(NS)
            task = asyncio.ensure_future(rt.call_tool(f"{NS}/sleep", {"seconds": 300, "marker": "long"}))
            while not (marker_dir / "long.started").exists():
                await asyncio.sleep(0.02)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert await asyncio.to_thread(wait_until, (marker_dir / "long.cancelled").exists, WAIT)
            # The session goes on.
            assert text_of(await rt.call_tool(f"{NS}/progress", {"steps": 1}, timeout=WAIT)) == "done 1"

    asyncio.run(scenario())


def test_many_awaits_in_flight_park_no_thread(surface_stdio: ServerEntry) -> None:
    async def scenario() -> None:
        rt = await AsyncRuntime.start(config({NS: surface_stdio()}))  # awaited: started, closed below
        try:
            await rt.start_server(NS)
            before = threading.active_count()
            calls = [
                asyncio.ensure_future(
                    rt.call_tool(f"{NS}/sleep", {"seconds": 1, "marker": f"m{i}"}, timeout=WAIT)
                )
                for i in range(200)
            ]
            await asyncio.sleep(0.3)
            during = threading.active_count()
            results = await asyncio.gather(*calls)
            assert all(r.success for r in results), [r for r in results if not r.success][:3]
            # The runtime's own threads only (a worker or two may come and go).
            assert during - before < 10, (before, during)
        finally:
            await rt.aclose()
        assert rt.runtime.closed

    asyncio.run(scenario())


def test_async_progress_arrives_in_order_before_the_answer(surface_stdio: ServerEntry) -> None:
    async def scenario() -> None:
        async with AsyncRuntime.start(config({NS: surface_stdio()})) as rt:
            reports: list[tuple[float, float | None, str | None]] = []
            loop_thread = threading.get_ident()
            threads: set[int] = set()

            async def progress(done: float, total: float | None, message: str | None) -> None:
                threads.add(threading.get_ident())
                await asyncio.sleep(0)
                reports.append((done, total, message))

            result = await rt.call_tool(f"{NS}/progress", {"steps": 5}, timeout=WAIT, progress=progress)
            assert text_of(result) == "done 5"
            assert reports == [(float(i), 5.0, f"step {i}") for i in range(1, 6)], reports
            assert threads == {loop_thread}
            # A plain function still runs on a host thread, as with `Runtime`.
            seen = threading.Event()
            plain = await rt.call_tool(
                f"{NS}/progress", {"steps": 1}, timeout=WAIT, progress=lambda *_: seen.set()
            )
            assert text_of(plain) == "done 1" and await asyncio.to_thread(seen.wait, WAIT)

    asyncio.run(scenario())


def test_a_resources_updates_come_as_an_async_iterator(surface_stdio: ServerEntry) -> None:
    async def scenario() -> None:
        async with (
            AsyncRuntime.start(config({NS: surface_stdio()})) as rt,
            rt.subscribe_resource(NS, COUNTER) as updates,
        ):
            updated = asyncio.ensure_future(anext(aiter(updates)))
            # A bump before the subscription reached the server is not heard: bump until one is.
            while not updated.done():
                assert (await rt.call_tool(f"{NS}/bump", {}, timeout=WAIT)).success
                await asyncio.wait({updated}, timeout=0.5)
            assert updated.result() == COUNTER

    asyncio.run(asyncio.wait_for(scenario(), 4 * WAIT))
