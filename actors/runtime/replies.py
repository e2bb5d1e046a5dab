"""`Replies`: the start, stop and describe requests waiting for what the lifecycle does next.

Owned by the server actor's thread. Each is answered once: started (or failed) when a start
ends, stopped when a stop ends, described when the tools are known or will not be.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any

from actors.runtime.messages import DescribeTools, Retire, ServerStatus, Shutdown, StartServer, StopServer
from actors.runtime.owner import OwnerCheck
from actors.runtime.reply import settle, settle_exception
from actors.tools import ToolError, ToolSpec

__all__ = ["Replies"]


def _settle_all(slots: list[concurrent.futures.Future[Any]], value: Any) -> None:
    for slot in slots:
        settle(slot, value)
    slots.clear()


class Replies:
    def __init__(self) -> None:
        self.starts: list[concurrent.futures.Future[ServerStatus]] = []
        self.stops: list[concurrent.futures.Future[ServerStatus]] = []
        self.describes: list[concurrent.futures.Future[list[ToolSpec]]] = []
        self._owner = OwnerCheck("a server's waiting replies")

    def keep(self, message: StartServer | StopServer | Shutdown | Retire | DescribeTools) -> None:
        self._owner.touch()
        match message:
            case StartServer(reply=reply):
                self.starts.append(reply)
            case StopServer(reply=reply) | Shutdown(reply=reply) | Retire(reply=reply):
                self.stops.append(reply)
            case DescribeTools(reply=reply):
                self.describes.append(reply)

    def described(self, tools: list[ToolSpec]) -> None:
        _settle_all(self.describes, tools)

    def started(self, status: ServerStatus) -> None:
        _settle_all(self.starts, status)

    def start_failed(self, error: ToolError) -> None:
        for slot in self.starts:
            settle_exception(slot, error)
        self.starts.clear()

    def stopped(self, status: ServerStatus) -> None:
        _settle_all(self.stops, status)
