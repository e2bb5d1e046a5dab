"""`AnthropicTools`: the runtime's tools declared to, and run for, the Messages API.

Owner: the host's event loop. Nothing here is mutable but the toolbox's name map, which is
thread-safe; each `AnthropicTools.run` owns the tasks of its calls and cancels them if it is
cancelled itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import anthropic
from anthropic.lib.tools import BetaAsyncBuiltinFunctionTool, BetaFunctionToolResultType
from anthropic.lib.tools import ToolError as BetaToolError
from anthropic.types import Message, MessageParam, ToolParam, ToolResultBlockParam, UserMessageParam
from anthropic.types.beta import BetaMessage, BetaToolParam
from anthropic.types.beta.beta_tool_result_block_param import Content as BetaContent

from actors.agents.answers import ToolAnswer
from actors.agents.anthropic.content import result_content, tool_param, tool_result
from actors.agents.toolbox import Toolbox
from actors.runtime.async_facade import AsyncProgress, AsyncRuntime
from actors.runtime.messages import OnProgress
from actors.tools import ErrorType, ToolResult

__all__ = ["AnthropicTools", "Progress", "run_agent_turns"]

logger = logging.getLogger(__name__)

Progress = OnProgress | AsyncProgress
"""A call's progress function: plain (called on a host thread) or async (awaited on the loop)."""


@dataclass(frozen=True, slots=True)
class _ToolUse:
    id: str
    name: str
    input: Any
    toolset: str | None


class AnthropicTools:
    """A `Toolbox`'s tools for the Messages API: `tools` to declare, `run`/`reply` to answer.
    ``skills``: offer the servers' skills too, as ``load_skill`` and ``read_skill_file``
    (`actors.agents.skills`)."""

    def __init__(
        self,
        source: AsyncRuntime | Toolbox,
        *,
        namespaces: Collection[str] | None = None,
        timeout: float | None = None,
        skills: bool = False,
    ) -> None:
        self.toolbox = Toolbox.of(source, namespaces, timeout, skills)

    async def tools(self) -> list[ToolParam]:
        """The ``tools`` of the next request, listed afresh (a list change shows here)."""
        return [tool_param(tool) for tool in await self.toolbox.tools()]

    async def run(
        self,
        message: Message | BetaMessage | MessageParam | Iterable[Any],
        *,
        progress: Progress | None = None,
        timeout: float | None = None,
    ) -> list[ToolResultBlockParam]:
        """Run every ``tool_use`` block of ``message`` (a `Message`, its param or its content
        blocks) at once; one ``tool_result`` per block, in the blocks' order. ``progress`` is
        passed to every call. Cancelling the awaiting task cancels the calls at the servers."""
        uses = _tool_uses(message)
        if any(self.toolbox.internal(use.name) is None for use in uses if use.toolset is None):
            # A name this toolbox never gave out (its tools were declared elsewhere, or not
            # listed since a change): list once, so the map knows every current tool.
            await self.toolbox.tools()
        async with asyncio.TaskGroup() as group:
            answers = [group.create_task(self._answer(use, progress, timeout)) for use in uses]
        return [tool_result(use.id, answer.result()) for use, answer in zip(uses, answers, strict=True)]

    async def reply(
        self,
        message: Message | BetaMessage | MessageParam | Iterable[Any],
        *,
        progress: Progress | None = None,
        timeout: float | None = None,
    ) -> UserMessageParam:
        """The ``user`` message that answers ``message``'s tool calls (`run`, wrapped): for a
        message that stopped on ``tool_use`` (without calls its content would be empty)."""
        return {"role": "user", "content": await self.run(message, progress=progress, timeout=timeout)}

    async def beta_tools(
        self, *, progress: Progress | None = None, timeout: float | None = None
    ) -> list[BetaAsyncBuiltinFunctionTool]:
        """The tools now, for ``client.beta.messages.tool_runner(tools=...)``. That runner keeps
        the tools it was given (and runs calls one at a time): list again for a new runner."""
        return [_BetaTool(self, tool_param(tool), progress, timeout) for tool in await self.toolbox.tools()]

    async def _answer(self, use: _ToolUse, progress: Progress | None, timeout: float | None) -> ToolAnswer:
        if use.toolset is not None:
            # A toolset member (the API's browser or computer families) is never one of ours.
            return ToolAnswer.of(ToolResult.fail(ErrorType.NOT_FOUND, f"there is no {use.toolset} toolset"))
        try:
            # A non-object input goes to the runtime as it is: its check refuses it (validation).
            return await self.toolbox.call(use.name, use.input, progress=progress, timeout=timeout)
        except Exception as exc:  # the model's turn goes on; the host's log says what broke
            logger.exception("agents: %s failed in the host", use.name)
            return ToolAnswer.of(
                ToolResult.fail(ErrorType.EXECUTION, f"{use.name} failed in the host: {exc}")
            )


class _BetaTool(BetaAsyncBuiltinFunctionTool):
    """One tool for the SDK's beta tool runner: a failure raises its `ToolError`, which the
    runner sends as an ``is_error`` result with the same content."""

    def __init__(
        self,
        tools: AnthropicTools,
        definition: BetaToolParam,
        progress: Progress | None,
        timeout: float | None,
    ) -> None:
        self._tools = tools
        self._definition = definition
        self._progress = progress
        self._timeout = timeout

    def to_dict(self) -> BetaToolParam:
        return self._definition

    async def call(self, input: object) -> BetaFunctionToolResultType:
        use = _ToolUse("", self._definition["name"], input, None)
        answer = await self._tools._answer(use, self._progress, self._timeout)
        # The beta blocks are the same JSON as the GA ones the mapping builds.
        content: list[BetaContent] = list(result_content(answer))
        if not answer.ok:
            raise BetaToolError(content)
        return content


async def run_agent_turns(
    client: anthropic.AsyncAnthropic,
    tools: AnthropicTools,
    *,
    messages: list[MessageParam],
    model: str,
    max_tokens: int,
    max_turns: int = 10,
    progress: Progress | None = None,
    **create: Any,
) -> Message:
    """Call ``client.messages.create`` until the model stops asking for tools (or after
    ``max_turns`` requests); return its last message. The tools are listed afresh for every
    request; each reply and each tool answer is appended to ``messages``. ``create`` holds the
    other arguments of ``messages.create`` (``system``, ``tool_choice`` ...)."""
    if max_turns < 1:
        raise ValueError(f"max_turns must be at least 1, not {max_turns}")
    for _ in range(max_turns):
        message: Message = await client.messages.create(
            model=model,
            max_tokens=max_tokens,
            messages=messages,
            tools=await tools.tools(),
            stream=False,
            **create,
        )
        messages.append(message.to_param())
        if message.stop_reason != "tool_use":
            break
        messages.append(await tools.reply(message, progress=progress))
    return message


def _tool_uses(message: Message | BetaMessage | MessageParam | Iterable[Any]) -> list[_ToolUse]:
    """The ``tool_use`` blocks of a message, its param, or its content (models or dicts)."""
    content: Any = message
    if isinstance(message, Message | BetaMessage):
        content = message.content
    elif isinstance(message, Mapping):
        content = message.get("content", ())
    if isinstance(content, str):
        return []
    uses = []
    for block in content:
        if _field(block, "type") == "tool_use":
            toolset = _field(block, "toolset_name")
            uses.append(
                _ToolUse(
                    str(_field(block, "id")),
                    str(_field(block, "name")),
                    _field(block, "input"),
                    str(toolset) if toolset is not None else None,
                )
            )
    return uses


def _field(block: Any, name: str) -> Any:
    return block.get(name) if isinstance(block, Mapping) else getattr(block, name, None)
