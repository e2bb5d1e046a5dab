"""`RoutedTools`: the tools each server listed, and the ones of them a `ToolRegistry` offers.

A server's listed tools are routed: each gets a handler that sends its call to the registry
actor. The `ToolRegistry` (``rt.tools``, what a `ToolRunner` runs) holds those not held until
approved (`actors.pins`), and is put right again whenever a server's pins change. Owned by the
registry actor's thread; the `ToolRegistry` it writes is read from any thread.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import Any

import pykka

from actors.mcp.config import ServerConfig
from actors.pins import PinBook
from actors.runtime.messages import CallTool
from actors.tools import ErrorType, ToolRegistry, ToolResult, ToolSpec

__all__ = ["RoutedTools"]

HANDLER_SLACK = 5.0
"""How long a tool handler in the `ToolRegistry` waits beyond the call's own timeout."""


class RoutedTools:
    """Per server: what it listed (routed), and what of it ``tools`` offers."""

    def __init__(self, tools: ToolRegistry, registry: pykka.ActorRef[Any], pins: PinBook | None) -> None:
        self.tools, self.pins = tools, pins
        self._registry = registry
        self._listed: dict[str, list[ToolSpec]] = {}

    def listed(self, ns: str) -> list[ToolSpec]:
        """What ``ns`` listed last, held tools included, without handlers (for the schema cache)."""
        return [s.model_copy(update={"handler": None}) for s in self._listed.get(ns, ())]

    def routed(self, ns: str | None) -> list[ToolSpec]:
        """What ``ns`` (None: every server) listed last, routed, held tools included."""
        if ns is not None:
            return list(self._listed.get(ns, ()))
        return [spec for specs in self._listed.values() for spec in specs]

    def route(self, config: ServerConfig, specs: tuple[ToolSpec, ...]) -> None:
        """``config``'s server listed ``specs``: route them, and offer those not held."""
        ns, timeout = config.name, config.call_timeout
        self._listed[ns] = [
            s.model_copy(update={"handler": self._handler(ns, s.tool_name, timeout)}) for s in specs
        ]
        self.offer(config)

    def offer(self, config: ServerConfig) -> None:
        """Offer the listed tools of ``config``'s server that its pins do not hold (again)."""
        held = self.pins.hidden(config) if self.pins is not None else frozenset()
        offered = [s for s in self._listed.get(config.name, ()) if ("tools", s.tool_name) not in held]
        self.tools.replace_namespace(config.name, offered)

    def forget(self, ns: str) -> None:
        self._listed.pop(ns, None)
        self.tools.replace_namespace(ns, [])

    def _handler(self, ns: str, tool: str, timeout: float) -> Callable[[dict[str, Any]], ToolResult]:
        ref = self._registry

        def call(inputs: dict[str, Any]) -> ToolResult:
            message = CallTool(namespace=ns, tool=tool, arguments=inputs)
            ref.tell(message)
            try:
                result: ToolResult = message.reply.result(timeout=timeout + HANDLER_SLACK)
            except concurrent.futures.TimeoutError:
                return ToolResult.fail(ErrorType.TIMEOUT, f"{ns}/{tool} gave no answer")
            return result

        return call
