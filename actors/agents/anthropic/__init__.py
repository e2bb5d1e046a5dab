"""The runtime's tools for the Anthropic SDK (``anthropic``): definitions and a tool runner.

`AnthropicTools.tools` gives the `ToolParam` list for ``client.messages.create(tools=...)``,
listed afresh each time (call it once per turn, so a server's list change reaches the model on
its next turn). `AnthropicTools.run` answers an assistant `Message`: every ``tool_use`` block
runs at once (parallel tool use), and the result is one ``tool_result`` per ``tool_use``, in
order, with its ``tool_use_id``. A failure, an unknown tool or a bad input included, is a
``tool_result`` with ``is_error`` for the model, never an exception in the host. `reply` wraps
the results in the ``user`` message; `run_agent_turns` is the whole loop, for a host that wants
no more. `AnthropicTools.beta_tools` offers the same tools in the form the SDK's own runner,
``client.beta.messages.tool_runner``, takes (`BetaAsyncBuiltinFunctionTool`).

Names are the `Toolbox`'s (``namespace__tool``, legal and reversible); input schemas go to the
API as the servers gave them; results are mapped part by part (`result_content`). Every call
goes through the runtime, so servers start lazily, stop when idle, and are supervised.

Owner: the host's event loop. Nothing here is mutable but the toolbox's name map, which is
thread-safe; each call of `run` owns its tasks and cancels them if it is cancelled.
"""

from __future__ import annotations

from actors.agents.anthropic.content import IMAGE_MEDIA_TYPES, result_content, tool_param, tool_result
from actors.agents.anthropic.runner import AnthropicTools, Progress, run_agent_turns

__all__ = [
    "IMAGE_MEDIA_TYPES",
    "AnthropicTools",
    "Progress",
    "result_content",
    "run_agent_turns",
    "tool_param",
    "tool_result",
]
