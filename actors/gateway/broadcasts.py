"""Broadcasts: a backend's list changes, to every client of the gateway.

Handshake-era clients get ``notifications/*/list_changed`` on each connection that has talked
to the gateway; 2026-07-28 clients get events on their ``subscriptions/listen`` streams, through
the subscription bus (a cluster's bus fans them out to the other replicas too).
"""

from __future__ import annotations

from mcp.server.subscriptions import SubscriptionBus
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ServerEvent, ToolsListChanged

from actors.gateway.handoff import LoopHandoff
from actors.gateway.sessions import Sessions

__all__ = ["KINDS", "Broadcasts", "kind_of"]

_EVENTS: dict[str, ServerEvent] = {
    "tools": ToolsListChanged(),
    "resources": ResourcesListChanged(),
    "prompts": PromptsListChanged(),
}

KINDS = tuple(_EVENTS)
"""What a list change is of: ``tools``, ``resources``, ``prompts``."""


def kind_of(event: ServerEvent) -> str | None:
    """The list ``event`` says changed, or None if it is not a list change."""
    return next((kind for kind, known in _EVENTS.items() if known == event), None)


class Broadcasts:
    """Tells clients that a list changed. Entered from any thread (the host thread for the
    runtime's list changes, the reloader's, the bus's for other replicas' events); the sessions
    it tells are the loop's, so telling them runs on the loop."""

    def __init__(self, sessions: Sessions, handoff: LoopHandoff, bus: SubscriptionBus) -> None:
        self._sessions = sessions
        self._handoff = handoff
        self._bus = bus

    def lists_changed(self, namespace: str, kind: str) -> None:
        """A backend's ``kind`` list changed: tell handshake-era sessions and listen streams."""
        self.notify_sessions(kind)
        self._handoff.send_soon(self._bus.publish(_EVENTS[kind]))

    def notify_sessions(self, kind: str) -> None:
        """Tell every handshake-era session that ``kind`` changed (not the bus: for events the
        bus brought from another replica)."""
        self._handoff.call(self._notify_on_loop, kind)

    def _notify_on_loop(self, kind: str) -> None:
        for session in self._sessions.connections():
            send = {
                "tools": session.send_tool_list_changed,
                "resources": session.send_resource_list_changed,
                "prompts": session.send_prompt_list_changed,
            }[kind]
            self._handoff.start(send())
