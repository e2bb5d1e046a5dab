"""`ToolSpecMaker`: a server's listed tools as `ToolSpec`s under a namespace."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import pydantic

from actors.mcp.config import ServerConfig
from actors.mcp.inference import infer_capabilities
from actors.mcp.redaction import Redactor
from actors.mcp.slots import infer_resource_slots
from actors.mcp.transport import RemoteTool
from actors.tools import ToolHandler, ToolSpec

__all__ = ["HandlerFor", "ToolSpecMaker"]

logger = logging.getLogger(__name__)

HandlerFor = Callable[[RemoteTool], ToolHandler]
"""Makes the handler of one tool's spec (a blocking call of it), for specs that carry one."""


class ToolSpecMaker:
    """Turns one server's `RemoteTool`s into `ToolSpec`s, leaving out (once, with a warning)
    what the runtime cannot represent: one bad entry must not cost the server its other tools.

    Used on the event loop and on actor threads alike; its only state, the names already
    warned about, is a set whose updates are atomic.
    """

    def __init__(self, config: ServerConfig, redact: Redactor) -> None:
        self.config = config
        self.redact = redact
        self._left_out: set[str] = set()

    def specs(
        self, namespace: str, tools: Sequence[RemoteTool], handler_for: HandlerFor | None = None
    ) -> list[ToolSpec]:
        """`ToolSpec`s for ``tools`` under ``namespace``; with a handler each when ``handler_for``."""
        specs: dict[str, ToolSpec] = {}
        for remote in tools:
            try:
                spec = self._spec(namespace, remote, handler_for)
            except pydantic.ValidationError as exc:
                self._leave_out(remote.name, exc.errors()[0]["msg"] if exc.errors() else str(exc))
                continue
            if spec.name in specs:
                self._leave_out(remote.name, "a second tool of that name")
                continue
            specs[spec.name] = spec
        return list(specs.values())

    def _leave_out(self, name: str, why: str) -> None:
        # Once per name: the same list comes back on every start and every list_changed.
        if name not in self._left_out:
            self._left_out.add(name)
            logger.warning("%s: left out tool %r: %s", self.config.name, name, self.redact(why))

    def _spec(self, namespace: str, remote: RemoteTool, handler_for: HandlerFor | None) -> ToolSpec:
        metadata: dict[str, Any] = {
            "server": self.config.name,
            "annotations": remote.annotations or {},
            **({"taskSupport": remote.task_support} if remote.task_support else {}),
        }
        return ToolSpec(
            name=f"{namespace}/{remote.name}",
            description=remote.description,
            input_schema=remote.input_schema,
            output_schema=remote.output_schema,
            capabilities=infer_capabilities(
                remote.name, remote.annotations, trusted=self.config.trust_annotations
            ),
            source="mcp",
            resource_slots=tuple(infer_resource_slots(remote.input_schema)),
            handler=handler_for(remote) if handler_for is not None else None,
            metadata=metadata,
        )
