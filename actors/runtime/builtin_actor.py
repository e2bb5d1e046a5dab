"""`BuiltinActor`: runs the built-in tools off the registry actor's thread."""

from __future__ import annotations

import logging
from typing import Any

import pykka

from actors.runtime.messages import CallTool
from actors.runtime.reply import settle
from actors.tools import ErrorType, ToolRegistry, ToolResult, ToolRunner

__all__ = ["BuiltinActor"]

logger = logging.getLogger(__name__)


class BuiltinActor(pykka.ThreadingActor):
    """Executes ``builtin/*`` calls with a `ToolRunner`.

    Built-in tools do local file and git work: it blocks this actor's own thread, which is
    what the actor is for, never the registry's.
    """

    use_daemon_thread = True

    def __init__(self, registry: ToolRegistry, namespace: str = "builtin") -> None:
        super().__init__()
        self.runner = ToolRunner(registry)
        self.namespace = namespace

    def on_receive(self, message: Any) -> Any:
        match message:
            case CallTool(tool=tool, arguments=arguments, reply=reply):
                name = f"{self.namespace}/{tool}"
                if self.runner.registry.get(name) is None:
                    settle(
                        reply, ToolResult.fail(ErrorType.NOT_FOUND, f"not found: no built-in tool {name!r}")
                    )
                    return None
                try:
                    settle(reply, self.runner.execute(name, arguments))
                except Exception as exc:  # execute only raises for a missing tool; be safe anyway
                    logger.exception("builtin: %s failed", name)
                    settle(reply, ToolResult.fail(ErrorType.EXECUTION, f"execution error: {exc}"))
        return None
