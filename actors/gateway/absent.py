"""What a request for what its caller may not see is answered with, beyond ``Unknown ...``.

It must be answered exactly as a request for what does not exist, and the runtime checks a
request's own shape (its arguments' form and size against the server's ``maxArgumentBytes``,
the one check of `actors.tools.check`) before whether the server offers what it names. So a
hidden tool call or prompt is checked the same way first: arguments too large are refused as
too large, whatever they are for; only then is it unknown. A call the gateway holds as a task
(``"tasks": {"hold": true}``) is held so too, its task ending as the absent tool's would.
"""

from __future__ import annotations

from actors.config import RuntimeConfig
from actors.runtime.messages import CallTool, GetPrompt
from actors.tools import ToolResult
from actors.tools.check import not_offered

__all__ = ["not_offered_result", "shape_refusal"]


def shape_refusal(config: RuntimeConfig, request: CallTool | GetPrompt) -> ToolResult | None:
    """The runtime's answer to ``request`` if its shape alone refuses it (never sent), else None."""
    server = config.servers.get(request.namespace)
    if server is None:
        return None  # no server of that name: nothing to check it against, as in the runtime
    refusal = request.refusal(server.max_argument_bytes)  # no offered tools: the shape only
    return refusal.result() if refusal is not None else None


def not_offered_result(namespace: str, tool: str) -> ToolResult:
    """The runtime's answer to a call of a tool ``namespace`` does not offer (without its hint:
    under a policy the gateway never passes it on)."""
    return not_offered("tool", tool, (), namespace).result()
