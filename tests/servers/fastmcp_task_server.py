"""A FastMCP 4 server serving the tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663)
through ``fastmcp-tasks``: a task server the project did not write, for the runtime and the
gateway to be proved against (tests/runtime/test_fastmcp_tasks.py,
tests/gateway/test_fastmcp_tasks_gateway.py).

It does not run in the project's virtual environment: ``fastmcp-tasks`` 4.1.4 (the newest on
PyPI) pins ``fastmcp-slim[server]==4.1.4``, while the test extra has fastmcp 4.2.3. ``make
pytest`` makes ``tests/servers/.venv-fastmcp-tasks`` from ``tests/servers/fastmcp-tasks.txt``;
run it as ``tests/servers/.venv-fastmcp-tasks/bin/python -m tests.servers.fastmcp_task_server
[--transport stdio|streamable-http] [--port N] [--ttl-ms N] [--poll-ms N]`` with the repository
as the working directory and on ``PYTHONPATH``. (mypy checks ``actors`` only, so this module,
which the main venv cannot import, is not type-checked there.)

What is FastMCP's and what is ours: the extension (``TasksExtension``, on Docket's in-memory
backend, its worker in this process) answers ``tools/call`` of a task tool with a
``CreateTaskResult`` when the request declares the extension, and serves ``tasks/get`` (result,
error or ``inputRequests`` inlined), ``tasks/update`` and ``tasks/cancel``. A task's progress
(``ctx.report_progress(..., message=...)``) is its ``statusMessage``. Input mid-run is FastMCP's
guard pattern: the tool *returns* an ``InputRequiredResult``, the task shows ``input_required``
(under keys FastMCP mints), and after ``tasks/update`` the tool runs again from the top with the
answers in ``ctx.input_responses`` (``ctx.elicit()`` is refused inside a task). A raised
``ToolError`` is a ``completed`` task with ``isError``; a raised ``MCPError`` a ``failed`` one.
Ours: ``--poll-ms`` is each task tool's ``TaskConfig.poll_interval`` (FastMCP's default is 5 s),
and ``--ttl-ms`` the ``execution_ttl`` of the Docket the extension made (``TasksExtension`` does
not take one; Docket's default is 15 minutes): how long a finished task is kept, after which
``tasks/get`` answers -32602.

Tools (task support in brackets):

- ``greet(name)`` [sync only]: ``Hello, {name}!``;
- ``slow_compute(seconds, label)`` [optional]: status ``computing for {seconds}s``, sleeps, then
  ``Computed {label} after {seconds}s``; cancelled, its sleep stops (``counter``'s ``cancelled``);
- ``progress_job(steps, interval)`` [optional]: status ``step i/n`` for each step;
- ``failing_job(seconds)`` [required]: a ``ToolError`` after ``seconds``;
- ``protocol_error_job`` [optional]: raises a JSON-RPC internal error (-32603);
- ``confirm_delete(filename)`` [required]: asks ``confirm`` (``{confirm: bool}``), then
  ``Deleted {filename}`` or ``Kept {filename} ({action})``;
- ``counter`` [sync only]: how many times this process ``started`` a task tool's body (a task
  that asked runs twice: once to ask, once with the answer), ``completed``, ``cancelled`` (a
  body stopped by cancellation), how many times a body ``asked``, and how many
  ``slow_compute`` runs were a task's (``in_task``), not a plain call's.
"""

from __future__ import annotations

import argparse
import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
)

__all__ = ["build", "main"]


class TimedTasksExtension(TasksExtension):
    """FastMCP's extension, with the Docket it starts keeping finished tasks ``ttl`` long."""

    def __init__(self, ttl: timedelta) -> None:
        super().__init__(minimum_check_interval=timedelta(milliseconds=20))
        self._ttl = ttl

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        async with super().lifespan():
            docket = self.server._docket
            if docket is not None:
                docket.execution_ttl = self._ttl
            yield


def build(ttl_ms: int = 60_000, poll_ms: int = 250) -> FastMCP:
    counts: Counter[str] = Counter()
    poll = timedelta(milliseconds=poll_ms)
    optional = TaskConfig(mode="optional", poll_interval=poll)
    required = TaskConfig(mode="required", poll_interval=poll)

    mcp = FastMCP("fastmcp-task-server")
    mcp.add_extension(TimedTasksExtension(timedelta(milliseconds=ttl_ms)))

    @mcp.tool
    def greet(name: str) -> str:
        """Greets ``name``; never a task."""
        return f"Hello, {name}!"

    @mcp.tool(task=optional)
    async def slow_compute(ctx: Context, seconds: float = 1.0, label: str = "") -> str:
        """Sleeps ``seconds`` then answers; a task when the client declares the tasks extension."""
        counts["started"] += 1
        if ctx.is_background_task:
            counts["in_task"] += 1
        await ctx.report_progress(0, 1, f"computing for {seconds}s")
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            counts["cancelled"] += 1
            raise
        counts["completed"] += 1
        return f"Computed {label or 'result'} after {seconds}s"

    @mcp.tool(task=optional)
    async def progress_job(ctx: Context, steps: int = 5, interval: float = 0.2) -> str:
        """Works ``steps`` steps of ``interval`` seconds, saying ``step i/n`` for each."""
        counts["started"] += 1
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step}/{steps}")
            await asyncio.sleep(interval)
        counts["completed"] += 1
        return f"Done {steps} steps"

    @mcp.tool(task=required)
    async def failing_job(seconds: float = 1.0) -> str:
        """Fails (a tool error) after ``seconds``; runs only as a task."""
        counts["started"] += 1
        await asyncio.sleep(seconds)
        raise ToolError("failing_job failed, as it always does")

    @mcp.tool(task=optional)
    async def protocol_error_job() -> str:
        """Raises a JSON-RPC internal error (-32603): a failed task."""
        counts["started"] += 1
        await asyncio.sleep(0.1)
        raise MCPError(code=INTERNAL_ERROR, message="protocol_error_job broke, as it always does")

    @mcp.tool(task=required)
    async def confirm_delete(ctx: Context, filename: str) -> str | InputRequiredResult:
        """Asks for a confirmation (key ``confirm``), then deletes ``filename`` (pretends to)."""
        counts["started"] += 1
        answer = (ctx.input_responses or {}).get("confirm")
        if not isinstance(answer, ElicitResult):
            counts["asked"] += 1
            schema: dict[str, Any] = {
                "type": "object",
                "properties": {"confirm": {"type": "boolean", "description": "Go ahead?"}},
                "required": ["confirm"],
            }
            ask = ElicitRequest(
                params=ElicitRequestFormParams(message=f"Delete {filename}?", requested_schema=schema)
            )
            return InputRequiredResult(input_requests={"confirm": ask})
        counts["completed"] += 1
        if answer.action == "accept" and (answer.content or {}).get("confirm") is True:
            return f"Deleted {filename}"
        return f"Kept {filename} ({answer.action})"

    @mcp.tool
    def counter() -> dict[str, int]:
        """How many task tools' bodies ran (``started``), ``completed``, were ``cancelled``,
        ``asked``, and how many ``slow_compute`` runs were a task's (``in_task``)."""
        return {key: counts[key] for key in ("started", "completed", "cancelled", "asked", "in_task")}

    return mcp


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--ttl-ms", type=int, default=60_000, help="how long a finished task is kept")
    parser.add_argument("--poll-ms", type=int, default=250, help="the pollIntervalMs asked of clients")
    args = parser.parse_args(argv)
    if args.ttl_ms <= 0 or args.poll_ms <= 0:
        parser.error("--ttl-ms and --poll-ms must be positive")
    server = build(args.ttl_ms, args.poll_ms)
    if args.transport == "stdio":
        server.run("stdio", show_banner=False)
    else:
        server.run("streamable-http", show_banner=False, host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
