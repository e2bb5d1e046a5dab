"""`Relay`: the adapter's own transport listener, between a transport and the adapter's owner."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["Relay", "RelayedAdapter"]


class RelayedAdapter(Protocol):
    """What the relay keeps true of the adapter before it passes the news on."""

    @property
    def redact(self) -> Callable[[str], str]: ...

    def lost(self, reason: str) -> None: ...

    def forget_tools(self) -> None: ...


class Relay:
    """The adapter's own transport listener: keeps its state true, then tells the owner.

    An owner may listen to only part of the news (a test's listener, say): what it has no
    method for is dropped. Called on the loop.
    """

    def __init__(self, adapter: RelayedAdapter, owner: Any) -> None:
        self._adapter = adapter
        self._owner = owner

    def _tell(self, method: str, *args: Any, **keywords: Any) -> None:
        handler = getattr(self._owner, method, None)
        if handler is not None:
            handler(*args, **keywords)

    def on_closed(self, reason: str, *, auth: bool = False) -> None:
        reason = self._adapter.redact(reason)
        self._adapter.lost(reason)
        self._tell("on_closed", reason, auth=auth)

    def on_tools_changed(self) -> None:
        self._adapter.forget_tools()
        self._tell("on_tools_changed")

    def on_resources_changed(self) -> None:
        self._tell("on_resources_changed")

    def on_prompts_changed(self) -> None:
        self._tell("on_prompts_changed")

    def on_resource_updated(self, uri: str) -> None:
        self._tell("on_resource_updated", uri)

    def on_log(self, level: str, logger: str | None, data: Any) -> None:
        self._tell("on_log", level, logger, data)
