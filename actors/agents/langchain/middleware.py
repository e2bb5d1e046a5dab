"""`McpActorsMiddleware`: the runtime's tools for ``create_agent``, listed afresh every model call.

LangChain's way of adding tools at run time ("dynamic tools"): ``wrap_model_call`` declares the
tools listed before each model call, ``wrap_tool_call`` hands the agent's tool node the ones it
was not built with. So a server's list change reaches the model on its next turn, once the
runtime has listed it again (a few milliseconds after the call that changed it answers).

Owner: the host's event loop. The tool map is read and replaced there, between awaits only.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    ToolCallRequest,
)
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, ToolException
from langgraph.prebuilt.tool_node import INVALID_TOOL_NAME_ERROR_TEMPLATE
from langgraph.types import Command
from pydantic import PrivateAttr

from actors.agents.langchain.tools import McpActorsTool
from actors.agents.toolbox import AgentTool, Toolbox
from actors.runtime.async_facade import AsyncRuntime

__all__ = ["McpActorsMiddleware"]

logger = logging.getLogger(__name__)


class McpActorsMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """``create_agent(model, middleware=[McpActorsMiddleware(rt)])``: the runtime's tools, listed
    afresh before every model call (a list change reaches the model on its next turn).

    The tools bound to the model are the agent's own, less the runtime's it was built with
    (`langchain_tools` of the same runtime and namespaces, or of the same names), plus the
    runtime's tools now; the agent's tool node runs those it was not built with (LangChain's
    "dynamic tools": ``wrap_model_call`` declares them, ``wrap_tool_call`` hands the tool node
    the tool). If a listing fails, the model gets the last tools listed. Middlewares of disjoint
    ``namespaces`` may share an agent. ``skills``: offer the servers' skills too, as
    ``load_skill`` and ``read_skill_file`` (`actors.agents.skills`).
    """

    def __init__(
        self,
        source: AsyncRuntime | Toolbox,
        *,
        namespaces: Collection[str] | None = None,
        timeout: float | None = None,
        skills: bool = False,
    ) -> None:
        self.toolbox = Toolbox.of(source, namespaces, timeout, skills)
        self.tools: list[BaseTool] = []  # none at build time: each model call lists afresh
        self._listed: list[McpActorsTool] = []
        # Every tool listed so far, by name, as last listed: one the model saw on an earlier turn
        # still runs (the runtime answers ``not_found`` if its server dropped it).
        self._known: dict[str, McpActorsTool] = {}
        # The names of the tools the model was last offered (this middleware's and the others').
        self._offered: list[str] = []

    @property
    def name(self) -> str:
        """Its name in the agent (one per agent), which names its namespaces when limited."""
        namespaces = self.toolbox.namespaces
        return (
            f"McpActorsMiddleware[{','.join(sorted(namespaces))}]"
            if namespaces is not None
            else "McpActorsMiddleware"
        )

    async def current_tools(self) -> list[McpActorsTool]:
        """The runtime's tools now (the last listed, if listing fails: `Toolbox.tools`)."""
        declared = await self.toolbox.tools()
        self._listed = [self._tool(each) for each in declared]
        self._known.update((tool.name, tool) for tool in self._listed)
        return list(self._listed)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        listed = await self.current_tools()
        names = {tool.name for tool in listed}
        others = [tool for tool in request.tools if not self._replaces(tool, names)]
        tools = [*others, *listed]
        self._offered = [tool.name for tool in tools if isinstance(tool, BaseTool)]
        return await handler(request.override(tools=tools))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        name = request.tool_call["name"]
        known = self._known.get(name)
        if request.tool is None or isinstance(request.tool, McpActorsTool | _MadeUp):
            if known is not None:
                request = request.override(tool=known)
            elif not isinstance(request.tool, McpActorsTool):
                # A name no tool has (the model made it up): answered as LangChain's tool node
                # answers one, naming the tools the model was offered (its own node knows only
                # those the agent was built with). A middleware inside this one that knows the
                # name puts its tool in place of this answer; one that does not, its own answer
                # (it was offered every tool this one was, and its own).
                offered = self._offered or [tool.name for tool in self._listed]
                request = request.override(tool=_MadeUp.of(name, offered))
        return await handler(request)

    def _replaces(self, tool: BaseTool | dict[str, Any], names: set[str]) -> bool:
        """Whether the listing stands for ``tool``: it has a listed name, or it is one of this
        runtime's tools, of these namespaces, the server no longer offers."""
        if isinstance(tool, dict):
            return False  # a provider's built-in tool
        if tool.name in names:
            return True
        mine = self.toolbox
        return (
            isinstance(tool, McpActorsTool)
            and tool.toolbox.runtime is mine.runtime
            and mine.admits(tool.declared.tool.partition("/")[0])
        )

    def _tool(self, declared: AgentTool) -> McpActorsTool:
        known = self._known.get(declared.name)
        return (
            known
            if known is not None and known.declared == declared
            else McpActorsTool.of(self.toolbox, declared)
        )


class _MadeUp(BaseTool):
    """The answer to a tool name no tool has: an error ``ToolMessage`` with LangChain's own text."""

    handle_tool_error: bool = True
    _text: str = PrivateAttr()

    @classmethod
    def of(cls, name: str, offered: list[str]) -> _MadeUp:
        tool = cls(name=name, description="")
        tool._text = INVALID_TOOL_NAME_ERROR_TEMPLATE.format(
            requested_tool=name, available_tools=", ".join(offered)
        )
        return tool

    def _to_args_and_kwargs(
        self, tool_input: str | dict[str, Any], tool_call_id: str | None
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return (), {}  # whatever the model sent: none of it goes anywhere

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        raise ToolException(self._text)

    async def _arun(self, *args: Any, **kwargs: Any) -> Any:
        raise ToolException(self._text)
