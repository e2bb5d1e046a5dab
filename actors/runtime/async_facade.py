"""`AsyncRuntime`: the `Runtime` for an asyncio host, every method awaitable.

    async with AsyncRuntime.start(load_config("mcp.json")) as rt:
        result = await rt.call_tool("time/get_current_time", {"timezone": "UTC"}, timeout=30)

It is the same actor system: `AsyncRuntime.runtime` is the `Runtime` underneath, started and
shut down on a worker thread (both block) so the host's loop never waits on them. A request is
told to its actor from the host's loop and its reply slot awaited there (`asyncio.wrap_future`):
no thread waits for any answer, however many are awaited at once. Cancelling the awaiting task
cancels the request at the server, as cancelling a reply slot does (the task sees
``CancelledError``, as asyncio code expects); a request that outlives its timeout is answered
as `Runtime` answers it (a `ToolResult` of type ``timeout``).

Progress may be an async function, awaited in order on the awaiting task's loop before the
call's answer is returned; resource updates come as an async iterator (`ResourceUpdates`).
Everything here runs on the host's loop, whichever it is; `AsyncRuntime` keeps no state of its
own but the runtime it started, and sends as `Runtime` does (`Runtime.dispatch`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, cast

from actors.config import RuntimeConfig
from actors.mcp.catalog import PromptSpec, ResourceSpec, ResourceTemplateSpec
from actors.mcp.config import ServerConfig
from actors.pins import Drift
from actors.runtime.dispatch import REQUEST_TIMEOUT, start_limit
from actors.runtime.facade import Runtime
from actors.runtime.messages import (
    GetStatus,
    ListPrompts,
    ListResources,
    ListResourceTemplates,
    ListTools,
    OnProgress,
    ReadResource,
    ResourceSubscription,
    ServerRequest,
    ServerStatus,
    StartServer,
    StopServer,
    SubscribeResource,
    UnregisterServer,
)
from actors.runtime.requests_of import completion, prompt_request, tool_call
from actors.runtime.skill_pins import SkillPins
from actors.runtime.skills import AsyncSkills
from actors.runtime.task_handles import AsyncTaskHandle, find_request, start_request, state_of
from actors.tools import ErrorType, ToolError, ToolResult, ToolSpec, duration_text

__all__ = ["AsyncProgress", "AsyncRuntime", "ResourceUpdates"]

logger = logging.getLogger(__name__)


AsyncProgress = Callable[[float, float | None, str | None], Awaitable[None]]
"""``await progress(progress, total, message)``, in order, on the awaiting task's loop."""

_FLUSH_TIMEOUT = 5.0
"""How long an answer waits, at most, for the progress reported before it to be handed over."""


class AsyncRuntime:
    """An asyncio host's handle on a `Runtime`: ``async with AsyncRuntime.start(...)``.

    `start` takes the arguments of `Runtime.start`; the runtime starts when the ``async with``
    block is entered (or the result of `start` is awaited), and shuts down when it is left
    (or at `aclose`).
    """

    def __init__(self, starting: Callable[[], Runtime]) -> None:
        self._starting = starting
        self._runtime: Runtime | None = None
        self.skills = AsyncSkills(self._request, self._namespaces, self._skill_pins)
        """The servers' skills, awaited (`actors.runtime.skills.AsyncSkills`)."""

    def _namespaces(self) -> list[str]:
        return self.runtime.dispatch.namespaces()

    def _skill_pins(self) -> SkillPins:
        return SkillPins(self.runtime.pins, self.runtime.dispatch.config)

    @classmethod
    def start(
        cls, config: RuntimeConfig | Mapping[str, Any] | str | Path | None = None, **options: Any
    ) -> AsyncRuntime:
        """The runtime of ``config``, to be entered: ``options`` are `Runtime.start`'s."""
        return cls(lambda: Runtime.start(config, **options))

    async def open(self) -> AsyncRuntime:
        """Start the runtime (on a worker thread: starting blocks). Idempotent."""
        if self._runtime is None:
            self._runtime = await asyncio.to_thread(self._starting)
        return self

    async def aclose(self, timeout: float = 15.0) -> None:
        """Shut the runtime down (on a worker thread), every server with it. Idempotent."""
        if self._runtime is not None:
            await asyncio.to_thread(self._runtime.shutdown, timeout)

    def __await__(self) -> Generator[Any, None, AsyncRuntime]:
        """``rt = await AsyncRuntime.start(...)``: started, to be closed with `aclose`."""
        return self.open().__await__()

    async def __aenter__(self) -> AsyncRuntime:
        return await self.open()

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    @property
    def runtime(self) -> Runtime:
        """The `Runtime` underneath (its registry, its loop); raises before `open`."""
        if self._runtime is None:
            raise RuntimeError("the AsyncRuntime was not entered: use `async with` or `await open()`")
        return self._runtime

    # ---- requests ---------------------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        *,
        progress: OnProgress | AsyncProgress | None = None,
    ) -> ToolResult:
        """`Runtime.call_tool`, awaited. ``progress`` may be a plain function (called on a host
        thread) or an async one (awaited here, in order, before the answer is returned)."""
        if progress is None or not inspect.iscoroutinefunction(progress):
            call = tool_call(name, arguments, timeout, cast(OnProgress | None, progress))
            return call if isinstance(call, ToolResult) else await self._request(call, name)
        reports: asyncio.Queue[tuple[float, float | None, str | None] | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def reported(done: float, total: float | None, message: str | None) -> None:
            # On a host thread: handed to the awaiting loop, in order.
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(reports.put_nowait, (done, total, message))

        call = tool_call(name, arguments, timeout, reported)
        if isinstance(call, ToolResult):
            return call
        relaying = asyncio.ensure_future(_relay(reports, progress))
        try:
            result = await self._request(call, name)
            # What the host thread was handed before the answer reaches this loop first.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.wrap_future(self.runtime.host.delivered()), _FLUSH_TIMEOUT)
            reports.put_nowait(None)
            await relaying
            return result
        finally:
            relaying.cancel()

    async def start_task(
        self, name: str, arguments: Mapping[str, Any] | None = None, timeout: float | None = None
    ) -> AsyncTaskHandle:
        """`Runtime.start_task`, awaited: an `AsyncTaskHandle`."""
        request = start_request(name, arguments, timeout)
        state = state_of(await self._request(request, name), request.namespace)
        return AsyncTaskHandle(request.namespace, state, self._request, timeout)

    async def task(self, task_id: str, timeout: float | None = None) -> AsyncTaskHandle:
        """`Runtime.task`, awaited."""
        request = find_request(task_id, timeout)
        state = state_of(await self._request(request, "tasks/get"), request.namespace)
        return AsyncTaskHandle(request.namespace, state, self._request, timeout)

    async def read_resource(self, namespace: str, uri: str, timeout: float | None = None) -> ToolResult:
        """`Runtime.read_resource`, awaited."""
        return await self._request(ReadResource(namespace, uri, timeout), f"{namespace} {uri}")

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, timeout: float | None = None
    ) -> ToolResult:
        """`Runtime.get_prompt`, awaited."""
        request = prompt_request(name, arguments, timeout)
        return request if isinstance(request, ToolResult) else await self._request(request, name)

    async def complete(
        self,
        namespace: str,
        ref: str | Mapping[str, Any],
        argument: Mapping[str, str] | tuple[str, str],
        context: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> ToolResult:
        """`Runtime.complete`, awaited."""
        message = completion(namespace, ref, argument, context, timeout)
        return await self._request(message, f"{namespace} completion")

    def subscribe_resource(
        self, namespace: str, uri: str, timeout: float = REQUEST_TIMEOUT
    ) -> ResourceUpdates:
        """The updates of a resource, as an async iterator of its URI:
        ``async with rt.subscribe_resource("ns", uri) as updates: async for uri in updates``.
        The server starts, and stays up, while the iterator is open."""
        return ResourceUpdates(self, namespace, uri, timeout)

    async def _request(self, message: ServerRequest, name: str) -> ToolResult:
        runtime = self.runtime
        if runtime.closed:
            return ToolResult.fail(ErrorType.CANCELLED, "the runtime is shut down")
        dispatch = runtime.dispatch
        deadline = dispatch.deadline(message)
        if isinstance(deadline, ToolResult):
            return deadline
        try:
            route = dispatch.route(message.namespace)
            if route is None:
                asked = dispatch.ask_route(message.namespace)
                with contextlib.suppress(TimeoutError):
                    route = await asyncio.wait_for(asyncio.wrap_future(asked.reply), REQUEST_TIMEOUT)
            dispatch.send(message, route)
        except Exception as exc:  # the registry could not route it (an actor failed to start)
            logger.exception("runtime: could not send %s", name)
            return ToolResult.fail(ErrorType.EXECUTION, f"{name} could not be sent: {exc}")
        try:
            # Cancelling this task cancels the reply slot, and so the request at its server.
            async with asyncio.timeout(deadline.wait):
                return await asyncio.wrap_future(message.reply)
        except TimeoutError:
            return ToolResult.fail(
                ErrorType.TIMEOUT, f"{name} gave no answer within {duration_text(deadline.limit)}"
            )
        except asyncio.CancelledError:
            if message.reply.cancelled() and not _cancelling():
                return ToolResult.fail(ErrorType.CANCELLED, f"{name} was cancelled")
            raise

    # ---- lists, status, servers ----------------------------------------------------------------

    async def list_tools(self, namespace: str | None = None, timeout: float = 60.0) -> list[ToolSpec]:
        """`Runtime.list_tools`, awaited."""
        tools: list[ToolSpec] = await self._ask(ListTools(namespace), timeout)
        return tools

    async def list_resources(self, namespace: str | None = None, timeout: float = 60.0) -> list[ResourceSpec]:
        """`Runtime.list_resources`, awaited."""
        resources: list[ResourceSpec] = await self._ask(ListResources(namespace), timeout)
        return resources

    async def list_resource_templates(
        self, namespace: str | None = None, timeout: float = 60.0
    ) -> list[ResourceTemplateSpec]:
        """`Runtime.list_resource_templates`, awaited."""
        templates: list[ResourceTemplateSpec] = await self._ask(ListResourceTemplates(namespace), timeout)
        return templates

    async def list_prompts(self, namespace: str | None = None, timeout: float = 60.0) -> list[PromptSpec]:
        """`Runtime.list_prompts`, awaited."""
        prompts: list[PromptSpec] = await self._ask(ListPrompts(namespace), timeout)
        return prompts

    async def status(
        self, namespace: str | None = None, timeout: float = REQUEST_TIMEOUT
    ) -> list[ServerStatus]:
        """`Runtime.status`, awaited."""
        statuses: list[ServerStatus] = await self._ask(GetStatus(namespace), timeout)
        return statuses

    async def start_server(self, namespace: str, timeout: float | None = None) -> ServerStatus:
        """`Runtime.start_server`, awaited: raises `ToolError` if the server cannot start."""
        limit = timeout or start_limit(self.runtime.dispatch, namespace)
        status: ServerStatus = await self._ask(StartServer(namespace), limit)
        return status

    async def stop_server(self, namespace: str, timeout: float = REQUEST_TIMEOUT) -> ServerStatus:
        """`Runtime.stop_server`, awaited."""
        status: ServerStatus = await self._ask(StopServer(namespace), timeout)
        return status

    async def register_server(
        self, config: ServerConfig | Mapping[str, Any], transport: Any = None, *, name: str | None = None
    ) -> ServerConfig:
        """`Runtime.register_server`, on a worker thread (it reads the schema cache)."""
        return await asyncio.to_thread(self.runtime.register_server, config, transport, name=name)

    async def unregister_server(self, namespace: str, timeout: float = REQUEST_TIMEOUT) -> bool:
        """`Runtime.unregister_server`, awaited."""
        removed: bool = await self._ask(UnregisterServer(namespace), timeout)
        self.runtime.dispatch.forget(namespace)
        return removed

    async def approve(self, namespace: str, names: Iterable[str] = ()) -> list[Drift]:
        """`Runtime.approve`, on a worker thread (it logs what it approved)."""
        return await asyncio.to_thread(self.runtime.approve, namespace, tuple(names))

    async def _ask(self, message: Any, timeout: float) -> Any:
        runtime = self.runtime
        if runtime.closed:
            raise ToolError("runtime", ErrorType.CANCELLED, "the runtime is shut down")
        runtime.registry.tell(message)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(message.reply), timeout)
        except TimeoutError:
            raise ToolError(
                "runtime", ErrorType.TIMEOUT, f"{type(message).__name__} got no answer within {timeout}s"
            ) from None

    def __repr__(self) -> str:
        inner = repr(self._runtime) if self._runtime is not None else "not started"
        return f"<AsyncRuntime {inner}>"


class ResourceUpdates:
    """A resource's updates (its URI, once per update) while open; `AsyncRuntime.subscribe_resource`.

    Owned by the task that iterates it; the host thread hands each update to that task's loop.
    """

    def __init__(self, runtime: AsyncRuntime, namespace: str, uri: str, timeout: float) -> None:
        self._runtime = runtime
        self._namespace = namespace
        self._uri = uri
        self._timeout = timeout
        self._updates: asyncio.Queue[str] = asyncio.Queue()
        self._subscription: ResourceSubscription | None = None

    async def __aenter__(self) -> ResourceUpdates:
        loop = asyncio.get_running_loop()

        def updated(uri: str) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._updates.put_nowait, uri)

        self._subscription = await self._runtime._ask(
            SubscribeResource(self._namespace, self._uri, updated), self._timeout
        )
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """End the subscription (the server may idle-stop again). Idempotent."""
        subscription, self._subscription = self._subscription, None
        if subscription is not None:
            await asyncio.to_thread(subscription.cancel)

    def __aiter__(self) -> AsyncIterator[str]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[str]:
        if self._subscription is None:
            raise RuntimeError("enter the subscription first: `async with rt.subscribe_resource(...)`")
        while True:
            yield await self._updates.get()


async def _relay(
    reports: asyncio.Queue[tuple[float, float | None, str | None] | None], progress: AsyncProgress
) -> None:
    """Await ``progress`` with each report, in order, until the end (None)."""
    while (report := await reports.get()) is not None:
        try:
            await progress(*report)
        except Exception:
            logger.exception("runtime: the host's progress function raised")


def _cancelling() -> bool:
    """Whether the running task is being cancelled (its CancelledError is not the reply's)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
