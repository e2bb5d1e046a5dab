"""What the reload tests share: telling when a client has been told the tool list changed."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
from mcp import Client

from tests.gateway_search.gateway_process import wait_for

ERAS = ("legacy", "2026-07-28")


class ToolNews:
    """Counts ``tools/list_changed`` a client is told: notifications in the handshake era
    (pass `handler` as the client's ``message_handler``), a listen stream in 2026-07-28
    (enter `listening`)."""

    def __init__(self) -> None:
        self.count = 0

    async def handler(self, message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self.count += 1

    @contextlib.asynccontextmanager
    async def listening(self, client: Client, era: str) -> AsyncIterator[None]:
        if era == "legacy":
            yield
            return
        async with client.listen(tools_list_changed=True) as events, anyio.create_task_group() as tasks:

            async def count() -> None:
                async for _ in events:
                    self.count += 1

            tasks.start_soon(count)
            yield
            tasks.cancel_scope.cancel()

    async def wait_beyond(self, seen: int, what: str) -> None:
        """Until the client has been told of a change since it had been told ``seen``."""
        await wait_for(lambda: self.count > seen, what)
