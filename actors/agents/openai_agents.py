"""mcp-actors for the OpenAI Agents SDK (``openai-agents``, import name ``agents``).

    async with AsyncRuntime.start(load_config("mcp.json")) as rt:
        agent = Agent(name="assistant", model=..., mcp_servers=[ActorsMCPServer(rt)])
        result = await Runner.run(agent, "What time is it in Tokyo?")

`ActorsMCPServer` is an `agents.mcp.MCPServer`, the SDK's own extension point for MCP. The
agent lists its tools on every turn (so a server's list change reaches the model on its next
turn) and calls them through a `Toolbox`, that is through the runtime: a server starts on its
first call, stops when idle, and is restarted after a crash. `connect` and `cleanup` start and
stop nothing (the host owns the runtime); listing starts no server the schema cache knows.
`ActorsMCPServer.function_tools` gives the same tools as `FunctionTool`s: a snapshot.

Names are the toolbox's (``namespace__tool``); schemas go to the model as the server gave them.
A result reaches the SDK as MCP content with its structured output, which the SDK maps as it
maps any MCP server's. A failed call raises `ToolCallFailed`, an MCP error to the SDK, which its
``failure_error_function`` path turns into the model's tool output (`tool_error_message`, the
default here, gives the classified error). Cancelling the run's task cancels the call at the
server; progress goes to the ``progress`` function, as the SDK has no place for it.

Owner: the host's event loop (the SDK lists and calls tools there). Nothing here is shared with
the runtime's threads but the toolbox's name map, which is thread-safe.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any

from agents import FunctionTool, RunContextWrapper, default_tool_error_function
from agents.agent import AgentBase
from agents.mcp import MCPServer, MCPToolCustomDataExtractor, MCPUtil
from agents.mcp.server import RequireApprovalSetting
from agents.strict_schema import ensure_strict_json_schema
from agents.tool import ToolErrorFunction
from agents.tool_guardrails import ToolInputGuardrail, ToolOutputGuardrail
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    ListPromptsResult,
    Prompt,
    PromptArgument,
    ResourceLink,
    TextContent,
    TextResourceContents,
    Tool,
    ToolAnnotations,
)

from actors.agents.answers import AudioPart, ImagePart, LinkPart, Part, ResourcePart, TextPart, ToolAnswer
from actors.agents.toolbox import AgentTool, Toolbox
from actors.mcp.names import NameMap
from actors.runtime.async_facade import AsyncRuntime
from actors.tools import ErrorType, ToolResult

__all__ = ["ActorsMCPServer", "ToolCallFailed", "ToolProgress", "tool_error_message"]

logger = logging.getLogger(__name__)

ToolProgress = Callable[[str, float, float | None, str | None], Awaitable[None]]
"""``await progress(tool, progress, total, message)``: a call's progress, ``tool`` its external
name; awaited in order on the host's loop before the call's answer reaches the SDK."""


class ToolCallFailed(MCPError):
    """A call (or a prompt) that failed: ``error_type`` classifies it, ``answer`` is all of it.

    An `MCPError` so the SDK takes it as an MCP client's failure: it logs a warning and hands it
    to the ``failure_error_function`` unwrapped. The JSON-RPC code is always ``INTERNAL_ERROR``;
    decide on ``error_type``.
    """

    def __init__(self, name: str, answer: ToolAnswer) -> None:
        super().__init__(INTERNAL_ERROR, answer.error or answer.text)
        self.name = name
        self.answer = answer
        self.error_type: ErrorType = answer.error_type or ErrorType.EXECUTION


def tool_error_message(context: RunContextWrapper[Any], error: Exception) -> str:
    """The tool output a model reads for a failed call: the classified error of a
    `ToolCallFailed` (``validation error: ...``, ``server error: ...``, ``timeout: ...``), the
    SDK's fixed message for anything else (which may hold what the model should not see)."""
    if isinstance(error, ToolCallFailed):
        return str(error)
    return default_tool_error_function(context, error)


class ActorsMCPServer(MCPServer):
    """The runtime's tools and prompts as one MCP server of the SDK.

    ``source``: an entered `AsyncRuntime` (its tools under a new `Toolbox` of ``namespaces``
    and ``timeout``), or a `Toolbox`. ``progress`` gets every call's progress. The rest are the
    SDK's `MCPServer` options; ``failure_error_function`` is `tool_error_message` unless given
    (None: a failure raises in the host), and it wins over the agent's ``mcp_config`` one.
    ``skills``: offer the servers' skills too, as the tools ``load_skill`` and ``read_skill_file``
    (`actors.agents.skills`; the SDK's own ``Skills`` capability is its sandbox's).
    """

    def __init__(
        self,
        source: AsyncRuntime | Toolbox,
        *,
        name: str = "mcp-actors",
        namespaces: Collection[str] | None = None,
        timeout: float | None = None,
        progress: ToolProgress | None = None,
        use_structured_content: bool = False,
        require_approval: RequireApprovalSetting = None,
        failure_error_function: ToolErrorFunction | None = tool_error_message,
        custom_data_extractor: MCPToolCustomDataExtractor | None = None,
        tool_input_guardrails: list[ToolInputGuardrail[Any]] | None = None,
        tool_output_guardrails: list[ToolOutputGuardrail[Any]] | None = None,
        skills: bool = False,
    ) -> None:
        super().__init__(
            use_structured_content=use_structured_content,
            require_approval=require_approval,
            failure_error_function=failure_error_function,
            custom_data_extractor=custom_data_extractor,
            tool_input_guardrails=tool_input_guardrails,
            tool_output_guardrails=tool_output_guardrails,
        )
        self.toolbox = Toolbox.of(source, namespaces, timeout, skills)
        self._name = name
        self._progress = progress
        self._prompt_names = NameMap()
        self._tools: list[Tool] | None = None

    @property
    def name(self) -> str:
        return self._name

    async def connect(self) -> None:
        """Nothing to connect: the runtime is the host's, and its servers start on first use."""

    async def cleanup(self) -> None:
        """Nothing to close: the host shuts the runtime (and its servers) down."""

    @property
    def cached_tools(self) -> list[Tool] | None:
        """The tools of the last listing (None before one)."""
        return copy.deepcopy(self._tools)

    async def list_tools(
        self, run_context: RunContextWrapper[Any] | None = None, agent: AgentBase | None = None
    ) -> list[Tool]:
        """The tools now: the SDK asks on every turn, the runtime answers from what it holds."""
        self._tools = [mcp_tool(tool) for tool in await self.toolbox.tools()]
        return copy.deepcopy(self._tools)

    async def call_tool(
        self, tool_name: str, arguments: dict[str, Any] | None, meta: dict[str, Any] | None = None
    ) -> CallToolResult:
        """Call ``tool_name`` (an external name) through the runtime; raise `ToolCallFailed`
        if it fails. ``meta`` is not sent: the runtime's calls carry none of the host's."""
        if meta:
            logger.debug("openai-agents: %s: the _meta of the call is not sent", tool_name)
        progress = self._progress
        if progress is None:
            answer = await self.toolbox.call(tool_name, arguments)
        else:

            async def reported(done: float, total: float | None, message: str | None) -> None:
                await progress(tool_name, done, total, message)

            answer = await self.toolbox.call(tool_name, arguments, progress=reported)
        if not answer.ok:
            raise ToolCallFailed(tool_name, answer)
        return call_result(answer)

    async def function_tools(self, agent: AgentBase | None = None) -> list[FunctionTool]:
        """The tools now as `FunctionTool`s: the SDK's own conversion of an MCP tool, over this
        server (its options and its ``failure_error_function`` hold). Strict where the server's
        schema already is strict-compatible, the schema as it is otherwise. ``agent`` is what a
        callable ``require_approval`` is asked with (without one, every call needs approval)."""
        made = []
        for tool in await self.list_tools():
            function = MCPUtil.to_function_tool(tool, self, False, agent)
            # Strict mode rewrites a schema (every property required, objects closed): only a
            # schema that it leaves as it is keeps its meaning.
            function.strict_json_schema = already_strict(function.params_json_schema)
            made.append(function)
        return made

    async def list_prompts(self) -> ListPromptsResult:
        """The runtime's prompts, under external names as the tools are."""
        toolbox, runtime = self.toolbox, self.toolbox.runtime
        wanted = [None] if toolbox.namespaces is None else sorted(toolbox.namespaces)
        specs = [
            spec
            for namespace in wanted
            for spec in await runtime.list_prompts(namespace, toolbox.list_timeout)
        ]
        return ListPromptsResult(
            prompts=[
                Prompt(
                    name=self._prompt_names.add(spec.name),
                    title=spec.title,
                    description=spec.description,
                    arguments=[
                        PromptArgument(name=a.name, description=a.description, required=a.required)
                        for a in spec.arguments
                    ],
                )
                for spec in specs
            ]
        )

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None) -> GetPromptResult:
        """The prompt ``name`` (as `list_prompts` gave it) filled in; `ToolCallFailed` if not."""
        prompt = self._prompt_names.internal(name)
        if prompt is None:
            result = ToolResult.fail(ErrorType.NOT_FOUND, f"there is no prompt named {name!r}")
        else:
            filled = {key: str(value) for key, value in (arguments or {}).items()}
            result = await self.toolbox.runtime.get_prompt(prompt, filled, self.toolbox.timeout)
        if not result.success:
            raise ToolCallFailed(name, ToolAnswer.of(result))
        return GetPromptResult.model_validate(result.output or {"messages": []})

    def __repr__(self) -> str:
        return f"<ActorsMCPServer {self._name!r} over {self.toolbox.runtime!r}>"


def mcp_tool(tool: AgentTool) -> Tool:
    """``tool`` as the SDK reads an MCP server's: its external name, its schemas as given."""
    hints = tool.spec.metadata.get("annotations") if tool.spec is not None else None
    try:
        annotations = ToolAnnotations.model_validate(hints) if hints else None
    except ValueError:  # hints MCP does not define: the tool goes on without them
        annotations = None
    return Tool(
        name=tool.name,
        description=tool.description or None,
        input_schema=copy.deepcopy(dict(tool.input_schema)),
        output_schema=copy.deepcopy(dict(tool.output_schema)) if tool.output_schema is not None else None,
        annotations=annotations,
    )


def call_result(answer: ToolAnswer) -> CallToolResult:
    """A successful answer as MCP, each part as the block it came from. Structured output
    beside content with no text (none at all, or an image) is added as its JSON text: the SDK
    shows the model either the content or the structured output, and this way loses neither.
    (Where there is text, it is the server's rendering of the output, as MCP asks.)"""
    blocks = [content_block(part) for part in answer.parts]
    structured = dict(answer.structured) if answer.structured is not None else None
    if structured is not None and not any(isinstance(part, TextPart) for part in answer.parts):
        blocks.append(TextContent(type="text", text=json.dumps(structured, ensure_ascii=False)))
    return CallToolResult(content=blocks, structured_content=structured)


def content_block(part: Part) -> ContentBlock:
    """A part as the MCP content block it was read from."""
    match part:
        case TextPart(text=text):
            return TextContent(type="text", text=text)
        case ImagePart(data=data, mime_type=mime):
            return ImageContent(type="image", data=data, mime_type=mime)
        case AudioPart(data=data, mime_type=mime):
            return AudioContent(type="audio", data=data, mime_type=mime)
        case ResourcePart(uri=uri, mime_type=mime, text=text) if text is not None:
            return EmbeddedResource(
                type="resource", resource=TextResourceContents(uri=uri, mime_type=mime, text=text)
            )
        case ResourcePart(uri=uri, mime_type=mime, blob=blob):
            return EmbeddedResource(
                type="resource", resource=BlobResourceContents(uri=uri, mime_type=mime, blob=blob or "")
            )
        case LinkPart(uri=uri, name=name, mime_type=mime, description=description):
            return ResourceLink(
                type="resource_link", uri=uri, name=name, mime_type=mime, description=description
            )


def already_strict(schema: Mapping[str, Any]) -> bool:
    """Whether the SDK's strict mode would leave ``schema`` as it is."""
    try:
        return ensure_strict_json_schema(copy.deepcopy(dict(schema))) == schema
    except Exception:  # the SDK's strict mode cannot take the schema as it stands (any of its errors)
        return False
