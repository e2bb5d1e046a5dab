"""Notification routing: what the server announces, told to the session's `TransportEvents`.

List changes and resource updates arrive as notifications (handshake era) or on listen streams
(2026-07-28, `actors.mcp.listen`); both end in `NotificationRouter.on_event`. Log messages go to
``events.on_log`` as they are, and progress to the caller's `Progress` (the SDK routes that per
request): nothing here logs what the server says.

Owned by the event-loop thread: the SDK calls the handlers there, and the events are handed
over from there (`TransportEvents` implementations must not block).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.client.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY

from actors.mcp.redaction import Redactor
from actors.mcp.sdk_transport.failures import unreadable_text
from actors.mcp.transport import TransportEvents

__all__ = ["NotificationRouter"]

logger = logging.getLogger(__name__)


class NotificationRouter:
    """Routes one session's notifications to its listener (set once, at connect)."""

    def __init__(self, label: str, redact: Redactor, on_unreadable: Callable[[str], None]) -> None:
        self._label = label
        self._redact = redact
        self._on_unreadable = on_unreadable
        self._events: TransportEvents | None = None

    def listen(self, events: TransportEvents | None) -> None:
        """Tell ``events`` from now on."""
        self._events = events

    def closed(self, reason: str, *, auth: bool = False) -> None:
        """The peer went away without being asked to: ``events.on_closed(reason, auth=auth)``."""
        if self._events is None:
            return
        try:
            self._events.on_closed(reason, auth=auth)
        except Exception:
            logger.exception("%s: the on_closed callback failed", self._label)

    def _tell(self, news: str, *args: Any) -> None:
        """Call ``events.<news>(*args)``; a listener without that method does not want that news."""
        handler = getattr(self._events, news, None) if self._events is not None else None
        if handler is None:
            return
        try:
            handler(*args)
        except Exception:
            logger.exception("%s: the %s callback failed", self._label, news)

    def on_event(self, event: ServerEvent) -> None:
        """A change the server announced, on a listen stream or as a notification."""
        match event:
            case ToolsListChanged():
                logger.debug("%s: the tool list changed", self._label)
                self._tell("on_tools_changed")
            case ResourcesListChanged():
                logger.debug("%s: the resource list changed", self._label)
                self._tell("on_resources_changed")
            case PromptsListChanged():
                logger.debug("%s: the prompt list changed", self._label)
                self._tell("on_prompts_changed")
            case ResourceUpdated(uri=uri):
                self._tell("on_resource_updated", uri)

    async def on_message(self, message: types.ServerNotification | Exception) -> None:
        """The SDK's message handler: notifications, and output that is not JSON-RPC."""
        if isinstance(message, Exception):
            text = unreadable_text(message)
            self._on_unreadable(text)
            logger.warning("%s: unreadable message from the server: %s", self._label, self._redact(text))
            return
        meta = getattr(message.params, "meta", None)
        if meta and SUBSCRIPTION_ID_META_KEY in meta:
            return  # a listen stream's event, which the SDK tees here too: the stream reports it
        match message:
            case types.ToolListChangedNotification():
                self.on_event(ToolsListChanged())
            case types.ResourceListChangedNotification():
                self.on_event(ResourcesListChanged())
            case types.PromptListChangedNotification():
                self.on_event(PromptsListChanged())
            case types.ResourceUpdatedNotification(params=params):
                self.on_event(ResourceUpdated(uri=str(params.uri)))
            case _:
                pass

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        """The SDK's logging callback (``notifications/message``)."""
        self._tell("on_log", params.level, params.logger, params.data)
