"""What the 2026-07-28 scenarios of the conformance **server** suite (0.2.0) ask of a server.

`register(server)` adds them to `everything_server`'s `MCPServer`. Two SDK ways to ask the client
for input on 2026-07-28 (SEP-2322), one per need:

- ``Resolve(...)`` resolvers that return ``Elicit``/``Sample``/``ListRoots``: the SDK batches the
  questions into an ``InputRequiredResult``, carries the answers in ``requestState`` and checks
  the client's capabilities (-32021 when one is missing). Its input-request keys are the
  resolvers' ``module:qualname``, so it serves the scenarios that read any key.
- a body returning an ``InputRequiredResult`` itself, reading ``ctx.input_responses``: for the
  scenarios that name the key (``user_name``, ``user_context``) and retry without
  ``requestState``.

Either way the SDK's ``RequestStateBoundary`` (installed by ``MCPServer``) seals every outgoing
``requestState`` with AES-GCM and answers a tampered one with -32602.

By scenario (``input-required-result-*`` unless said otherwise):

- ``basic-elicitation``, ``missing-input-response``, ``result-type``, ``ignore-extra-params``,
  ``validate-input``: ``test_input_required_result_elicitation`` asks ``user_name``, answers
  ``Hello, <name>!``, re-asks when the answer is missing or does not fit;
- ``basic-sampling``: ``test_input_required_result_sampling``; ``basic-list-roots``:
  ``test_input_required_result_list_roots``; ``multiple-input-requests``:
  ``test_input_required_result_multiple_inputs`` (elicitation, sampling and roots in one round);
- ``request-state``: ``test_input_required_result_request_state`` (answers ``state-ok``: the
  resolver takes an answer only for the question its sealed state says was asked);
- ``multi-round``: ``test_input_required_result_multi_round`` (step 2 depends on step 1);
- ``tampered-state``: ``test_input_required_result_tampered_state``;
- ``capability-check``: ``test_input_required_result_capabilities`` asks only what the
  client's capabilities offer;
- ``non-tool-request``: the prompt ``test_input_required_result_prompt`` asks ``user_context``;
- ``server-stateless``: ``test_missing_capability`` (needs sampling: -32021 without it),
  ``test_streaming_elicitation``, ``test_logging_tool``, and ``test_trigger_tool_change`` /
  ``test_trigger_prompt_change``, which add or remove ``test_dynamic_tool`` /
  ``test_dynamic_prompt`` and publish the list change to ``subscriptions/listen`` streams.

On the handshake era the resolvers send their requests mid-call, and the hand-written flows
fall back to ``ctx.elicit``.
"""

from __future__ import annotations

from typing import Annotated, TypeVar

from mcp.server.elicitation import render_elicitation_schema
from mcp.server.mcpserver import Context, Elicit, ElicitationResult, MCPServer, Resolve, Sample
from mcp.server.mcpserver.prompts.base import Prompt, UserMessage
from mcp.server.mcpserver.resolve import ListRoots
from mcp.shared.exceptions import MCPError
from mcp_types import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    ClientCapabilities,
    CreateMessageResult,
    ElicitationCapability,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    FormElicitationCapability,
    InputRequiredResult,
    ListRootsResult,
    MissingRequiredClientCapabilityErrorData,
    SamplingMessage,
    TextContent,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


class Name(BaseModel):
    name: str


class Color(BaseModel):
    color: str


class Confirm(BaseModel):
    ok: bool


class PromptContext(BaseModel):
    context: str


def _text(answer: CreateMessageResult) -> str:
    return answer.content.text if isinstance(answer.content, TextContent) else "(no text)"


def _ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


def _ask_confirm() -> Elicit[Confirm]:
    return Elicit("Please confirm", Confirm)


def _ask_capital() -> Sample:
    question = TextContent(type="text", text="What is the capital of France?")
    return Sample([SamplingMessage(role="user", content=question)], max_tokens=100)


def _ask_greeting() -> Sample:
    question = TextContent(type="text", text="Generate a greeting")
    return Sample([SamplingMessage(role="user", content=question)], max_tokens=50)


def _ask_roots() -> ListRoots:
    return ListRoots()


def _ask_step1() -> Elicit[Name]:
    return Elicit("Step 1: What is your name?", Name)


def _ask_step2(name: Annotated[Name, Resolve(_ask_step1)]) -> Elicit[Color]:
    return Elicit("Step 2: What is your favorite color?", Color)


def _name_if_offered(ctx: Context) -> Elicit[Name] | str:
    capabilities = ctx.client_capabilities
    offered = capabilities is not None and capabilities.elicitation is not None
    return _ask_name() if offered else "not offered"


def _greeting_if_offered(ctx: Context) -> Sample | str:
    capabilities = ctx.client_capabilities
    offered = capabilities is not None and capabilities.sampling is not None
    return _ask_greeting() if offered else "not offered"


def _is_modern(ctx: Context) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _require_elicitation(ctx: Context) -> None:
    """Refuse (-32021) a client that cannot answer a form elicitation, as the SDK's resolvers do."""
    elicitation = ctx.client_capabilities.elicitation if ctx.client_capabilities else None
    if elicitation is not None and (elicitation.form is not None or elicitation.url is None):
        return
    required = ClientCapabilities(elicitation=ElicitationCapability(form=FormElicitationCapability()))
    data = MissingRequiredClientCapabilityErrorData(required_capabilities=required)
    raise MCPError(
        code=MISSING_REQUIRED_CLIENT_CAPABILITY,
        message="Client did not declare the form elicitation capability",
        data=data.model_dump(by_alias=True, mode="json", exclude_none=True),
    )


async def _elicit(ctx: Context, key: str, message: str, schema: type[M]) -> M | str | InputRequiredResult:
    """Ask under the wire key `key`: the accepted answer, a declined/cancelled action, or the question.

    On 2026-07-28 the question is an `InputRequiredResult` (asked again while the answer under
    `key` is missing or does not fit `schema`); on the handshake era it is asked mid-call.
    """
    if not _is_modern(ctx):
        outcome: ElicitationResult[M] = await ctx.elicit(message, schema)
        return outcome.data if outcome.action == "accept" else outcome.action
    answer = (ctx.input_responses or {}).get(key)
    if isinstance(answer, ElicitResult):
        if answer.action != "accept":
            return answer.action
        try:
            return schema.model_validate(answer.content)
        except ValidationError:
            pass
    _require_elicitation(ctx)
    params = ElicitRequestFormParams(message=message, requested_schema=render_elicitation_schema(schema))
    return InputRequiredResult(input_requests={key: ElicitRequest(params=params)})


def register(server: MCPServer) -> None:
    """Add the 2026-07-28 tools and prompts to `server`."""

    @server.tool()
    async def test_input_required_result_elicitation(ctx: Context) -> str | InputRequiredResult:
        """Asks the user's name under the key user_name, then greets them."""
        answer = await _elicit(ctx, "user_name", "What is your name?", Name)
        if isinstance(answer, Name):
            return f"Hello, {answer.name}!"
        return answer if isinstance(answer, InputRequiredResult) else f"Elicitation {answer}"

    @server.tool()
    def test_input_required_result_sampling(
        answer: Annotated[CreateMessageResult, Resolve(_ask_capital)],
    ) -> str:
        """Asks the client's model for the capital of France."""
        return f"LLM response: {_text(answer)}"

    @server.tool()
    def test_input_required_result_list_roots(roots: Annotated[ListRootsResult, Resolve(_ask_roots)]) -> str:
        """Asks for the client's roots."""
        return "Roots: " + ", ".join(str(root.uri) for root in roots.roots)

    @server.tool()
    def test_input_required_result_request_state(confirm: Annotated[Confirm, Resolve(_ask_confirm)]) -> str:
        """Asks for a confirmation; the answer counts only with the sealed requestState echoed."""
        return f"state-ok: confirmed={confirm.ok}"

    @server.tool()
    def test_input_required_result_multiple_inputs(
        name: Annotated[Name, Resolve(_ask_name)],
        greeting: Annotated[CreateMessageResult, Resolve(_ask_greeting)],
        roots: Annotated[ListRootsResult, Resolve(_ask_roots)],
    ) -> str:
        """Asks for a name, a greeting from the model and the roots, all in one round."""
        return f"{_text(greeting)} {name.name}, roots: {len(roots.roots)}"

    @server.tool()
    def test_input_required_result_multi_round(
        name: Annotated[Name, Resolve(_ask_step1)], color: Annotated[Color, Resolve(_ask_step2)]
    ) -> str:
        """Asks a name, then (a second round) a favourite colour."""
        return f"{name.name} likes {color.color}"

    @server.tool()
    def test_input_required_result_tampered_state(confirm: Annotated[Confirm, Resolve(_ask_confirm)]) -> str:
        """Asks for a confirmation under a sealed requestState; a tampered one is refused."""
        return f"confirmed={confirm.ok}"

    @server.tool()
    def test_input_required_result_capabilities(
        name: Annotated[Name | str, Resolve(_name_if_offered)],
        greeting: Annotated[CreateMessageResult | str, Resolve(_greeting_if_offered)],
    ) -> str:
        """Asks only what the client's capabilities offer: elicitation, sampling or neither."""
        said = _text(greeting) if isinstance(greeting, CreateMessageResult) else greeting
        return f"name: {name.name if isinstance(name, Name) else name}, greeting: {said}"

    @server.tool()
    def test_missing_capability(answer: Annotated[CreateMessageResult, Resolve(_ask_capital)]) -> str:
        """Needs the client's sampling: refused with -32021 when the client did not declare it."""
        return f"LLM response: {_text(answer)}"

    @server.tool()
    def test_streaming_elicitation(name: Annotated[Name, Resolve(_ask_name)]) -> str:
        """Elicits a name: an InputRequiredResult on 2026-07-28, never a request on the stream."""
        return f"Hello, {name.name}!"

    @server.tool()
    async def test_logging_tool(ctx: Context) -> str:
        """Logs two info messages (sent only when the request asked for a log level)."""
        await ctx.info("Logging tool started")
        await ctx.info("Logging tool finished")
        return "Logging tool executed"

    def test_dynamic_tool() -> str:
        """Present while test_trigger_tool_change has been called an odd number of times."""
        return "dynamic"

    def test_dynamic_prompt() -> list[UserMessage]:
        """Present while test_trigger_prompt_change has been called an odd number of times."""
        return [UserMessage(TextContent(type="text", text="A dynamic prompt."))]

    @server.tool()
    async def test_trigger_tool_change(ctx: Context) -> str:
        """Adds or removes test_dynamic_tool and tells the listen streams."""
        present = any(tool.name == "test_dynamic_tool" for tool in await server.list_tools())
        if present:
            server.remove_tool("test_dynamic_tool")
        else:
            server.add_tool(test_dynamic_tool)
        await ctx.notify_tools_changed()
        return f"test_dynamic_tool {'removed' if present else 'added'}"

    @server.tool()
    async def test_trigger_prompt_change(ctx: Context) -> str:
        """Adds or removes test_dynamic_prompt and tells the listen streams."""
        present = any(prompt.name == "test_dynamic_prompt" for prompt in await server.list_prompts())
        if present:
            server.remove_prompt("test_dynamic_prompt")
        else:
            server.add_prompt(Prompt.from_function(test_dynamic_prompt))
        await ctx.notify_prompts_changed()
        return f"test_dynamic_prompt {'removed' if present else 'added'}"

    @server.prompt()
    async def test_input_required_result_prompt(ctx: Context) -> list[UserMessage] | InputRequiredResult:
        """Asks what context to use (key user_context), then renders with it."""
        answer = await _elicit(ctx, "user_context", "What context should the prompt use?", PromptContext)
        if isinstance(answer, InputRequiredResult):
            return answer
        context = answer.context if isinstance(answer, PromptContext) else f"(elicitation {answer})"
        return [UserMessage(TextContent(type="text", text=f"Use this context: {context}"))]


__all__ = ["register"]
