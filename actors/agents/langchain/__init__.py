"""The runtime's tools for LangChain and LangGraph agents (``langchain.agents.create_agent``).

Two ways in, both through LangChain's own extension points:

- `langchain_tools`: the tools now, as `BaseTool` instances (`McpActorsTool`), for any LangChain
  tool-calling loop (``create_agent(model, tools=...)``, a LangGraph ``ToolNode``, ``ainvoke``).
- `McpActorsMiddleware`: an ``AgentMiddleware`` for ``create_agent`` that lists the tools afresh
  before every model call and runs the ones the agent was not built with, so a server's list
  change reaches the model on its next turn.

Names are ``namespace__tool``; argument schemas are the servers' own; results are LangChain
content blocks plus a `ToolArtifact`; a failed call is an error ``ToolMessage`` for the model
(`McpToolError`), never an exception in the host; progress is a custom event (`PROGRESS_EVENT`)
and a ``custom`` stream chunk (`ProgressChunk`); cancelling the agent's task cancels the call at
the server. Every call goes through the runtime, so servers still start lazily, stop when idle
and are restarted after a crash.

Owner: the host's event loop (everything here is async: ``ainvoke``, ``astream``).
"""

from __future__ import annotations

from actors.agents.langchain.middleware import McpActorsMiddleware
from actors.agents.langchain.tools import (
    PROGRESS_EVENT,
    McpActorsTool,
    McpToolError,
    ProgressChunk,
    ToolArtifact,
    content_blocks,
    langchain_tools,
)

__all__ = [
    "PROGRESS_EVENT",
    "McpActorsMiddleware",
    "McpActorsTool",
    "McpToolError",
    "ProgressChunk",
    "ToolArtifact",
    "content_blocks",
    "langchain_tools",
]
