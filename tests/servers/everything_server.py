"""An SDK `MCPServer` with what the official conformance **server** suite asks of a server.

Run it as ``python -m tests.servers.everything_server [--transport stdio|streamable-http] [--port N]``.
tests/gateway/test_requirements_server.py puts it behind ``mcp-actors serve --http`` (with
``"prefix": false``, so the suite sees the names it expects) and runs the suite against the gateway;
tests/conformance/test_reference_server.py runs the suite against it directly.

What the server scenarios of ``@modelcontextprotocol/conformance`` look for, by name:

- tools: ``test_simple_text``, ``test_image_content``, ``test_audio_content``,
  ``test_embedded_resource``, ``test_multiple_content_types``, ``test_tool_with_logging`` (three
  info log messages ~50 ms apart), ``test_tool_with_progress`` (progress 0, 50, 100 of 100),
  ``test_error_handling`` (an ``isError`` result), ``test_sampling(prompt)``,
  ``test_elicitation(message)``, ``test_elicitation_sep1034_defaults``,
  ``test_elicitation_sep1330_enums``, ``test_reconnection`` and ``json_schema_2020_12_tool``
  (its input schema keeps ``$schema``, ``$defs`` and ``additionalProperties``);
- resources: ``test://static-text``, ``test://static-binary``, ``test://watched-resource``
  (subscribable) and the template ``test://template/{id}/data``;
- prompts: ``test_simple_prompt``, ``test_prompt_with_arguments(arg1, arg2)``,
  ``test_prompt_with_embedded_resource(resourceUri)``, ``test_prompt_with_image``;
- completion (an empty list), ``logging/setLevel``, ``resources/(un)subscribe``.

The 2026-07-28 scenarios of the 0.2.0 suite (``--requirements 2026-07-28``, talked to directly)
add the ``input-required-result-*`` tools and prompt and the ``server-stateless`` diagnostics:
tests/servers/everything_modern.py, registered by `build`, lists them.
"""

from __future__ import annotations

import argparse
import base64
import json
import warnings
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, Elicit, ElicitationResult, MCPServer, Resolve, Sample
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.server.mcpserver.tools.base import Tool
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import (
    AudioContent,
    Completion,
    CompletionArgument,
    CompletionContext,
    CreateMessageResult,
    EmbeddedResource,
    EmptyResult,
    ImageContent,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    TextResourceContents,
    UnsubscribeRequestParams,
)
from pydantic import BaseModel, Field

from tests.servers import everything_modern

# A 1x1 PNG and a tiny WAV: the suite checks the type and MIME type, not the pixels.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


class Reply(BaseModel):
    response: str = Field(description="The user's response")


class Defaults(BaseModel):
    """SEP-1034: a default for every primitive type."""

    name: str = Field(default="John Doe", description="User name")
    age: int = Field(default=30, description="User age")
    score: float = Field(default=95.5, description="User score")
    status: str = Field(
        default="active",
        description="User status",
        json_schema_extra={"enum": ["active", "inactive", "pending"]},
    )
    verified: bool = Field(default=True, description="Verification status")


class Enums(BaseModel):
    """SEP-1330: every way of writing an enum."""

    # The field names are the suite's.
    untitledSingle: str = Field(
        description="Simple enum without titles",
        json_schema_extra={"enum": ["active", "inactive", "pending"]},
    )
    titledSingle: str = Field(
        description="Enum with titled options (oneOf)",
        json_schema_extra={
            "oneOf": [
                {"const": "low", "title": "Low Priority"},
                {"const": "medium", "title": "Medium Priority"},
                {"const": "high", "title": "High Priority"},
            ]
        },
    )
    untitledMulti: list[str] = Field(
        description="Multi-select without titles",
        json_schema_extra={"items": {"type": "string", "enum": ["read", "write", "execute"]}},
    )
    titledMulti: list[str] = Field(
        description="Multi-select with titled options",
        json_schema_extra={
            "items": {
                "anyOf": [
                    {"const": "feature", "title": "New Feature"},
                    {"const": "bug", "title": "Bug Fix"},
                    {"const": "docs", "title": "Documentation"},
                ]
            }
        },
    )
    legacyEnum: str = Field(
        description="Legacy enum with enumNames",
        json_schema_extra={
            "enum": ["small", "medium", "large"],
            "enumNames": ["Small Size", "Medium Size", "Large Size"],
        },
    )


def _ask_model(ctx: Context, prompt: str) -> Sample | str:
    capabilities = ctx.client_capabilities
    if capabilities is None or capabilities.sampling is None:
        return "not offered: sampling"
    return Sample(
        [SamplingMessage(role="user", content=TextContent(type="text", text=prompt))], max_tokens=100
    )


def _offers_elicitation(ctx: Context) -> bool:
    capabilities = ctx.client_capabilities
    return capabilities is not None and capabilities.elicitation is not None


def _ask_reply(ctx: Context, message: str) -> Elicit[Reply] | str:
    return Elicit(message, Reply) if _offers_elicitation(ctx) else "not offered: elicitation"


def _ask_defaults(ctx: Context) -> Elicit[Defaults] | str:
    if not _offers_elicitation(ctx):
        return "not offered: elicitation"
    return Elicit("Please provide user information", Defaults)


def _ask_enums(ctx: Context) -> Elicit[Enums] | str:
    if not _offers_elicitation(ctx):
        return "not offered: elicitation"
    return Elicit("Please select values using different enum schema types", Enums)


def elicited(answer: ElicitationResult[Any] | str, label: str) -> str:
    if isinstance(answer, str):
        return f"Elicitation not supported or error: {answer}"
    data = getattr(answer, "data", None)
    content = data.model_dump_json() if answer.action == "accept" and isinstance(data, BaseModel) else "{}"
    return f"{label}: action={answer.action}, content={content}"


def build() -> MCPServer:
    """The server with every tool, resource and prompt the suite names."""
    # Logging and sampling are deprecated in 2026-07-28; the suite tests the 2025 eras.
    warnings.simplefilter("ignore", MCPDeprecationWarning)
    server = MCPServer("everything", version="1.0.0", instructions="What the conformance suite asks for.")
    subscribed: set[str] = set()

    @server.tool()
    def test_simple_text() -> str:
        """Answers with one text content."""
        return "This is a simple text response for testing."

    @server.tool()
    def test_image_content() -> list[ImageContent]:
        """Answers with one image content."""
        return [ImageContent(type="image", data=PNG, mime_type="image/png")]

    @server.tool()
    def test_audio_content() -> list[AudioContent]:
        """Answers with one audio content."""
        return [AudioContent(type="audio", data=WAV, mime_type="audio/wav")]

    @server.tool()
    def test_embedded_resource() -> list[EmbeddedResource]:
        """Answers with one embedded text resource."""
        resource = TextResourceContents(
            uri="test://embedded-resource",
            mime_type="text/plain",
            text="This is an embedded resource content.",
        )
        return [EmbeddedResource(type="resource", resource=resource)]

    @server.tool()
    def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
        """Answers with text, an image and an embedded resource."""
        resource = TextResourceContents(
            uri="test://mixed-content-resource",
            mime_type="application/json",
            text='{"test": "data", "value": 123}',
        )
        return [
            TextContent(type="text", text="Multiple content types test:"),
            ImageContent(type="image", data=PNG, mime_type="image/png"),
            EmbeddedResource(type="resource", resource=resource),
        ]

    @server.tool()
    async def test_tool_with_logging(ctx: Context) -> str:
        """Sends three info log messages while it runs."""
        await ctx.info("Tool execution started")
        await anyio.sleep(0.05)
        await ctx.info("Tool processing data")
        await anyio.sleep(0.05)
        await ctx.info("Tool execution completed")
        return "Tool with logging executed successfully"

    @server.tool()
    async def test_tool_with_progress(ctx: Context) -> str:
        """Reports progress 0, 50 and 100 of 100; answers with its progress token."""
        for done in (0, 50, 100):
            await ctx.report_progress(done, 100, f"Completed step {done} of 100")
            await anyio.sleep(0.05)
        meta = ctx.request_context.meta
        token = (
            meta.get("progress_token") if isinstance(meta, dict) else getattr(meta, "progress_token", None)
        )
        return str(token if token is not None else 0)

    @server.tool()
    def test_error_handling() -> str:
        """Always fails (an isError result)."""
        raise RuntimeError("This tool intentionally returns an error for testing")

    # Sampling and elicitation go through the SDK's resolvers: a server-to-client request in the
    # handshake era, input-required rounds on 2026-07-28 (the gateway may speak either to it).
    @server.tool()
    def test_sampling(prompt: str, answer: Annotated[CreateMessageResult | str, Resolve(_ask_model)]) -> str:
        """Asks the client's model."""
        if isinstance(answer, str):
            return f"Sampling not supported or error: {answer}"
        content = answer.content
        return f"LLM response: {content.text if isinstance(content, TextContent) else 'No response'}"

    @server.tool()
    def test_elicitation(
        message: str, answer: Annotated[ElicitationResult[Reply] | str, Resolve(_ask_reply)]
    ) -> str:
        """Asks the client's user for a response."""
        return elicited(answer, "User response")

    @server.tool()
    def test_elicitation_sep1034_defaults(
        answer: Annotated[ElicitationResult[Defaults] | str, Resolve(_ask_defaults)],
    ) -> str:
        """Asks with a default for every primitive type."""
        return elicited(answer, "Elicitation result")

    @server.tool()
    def test_elicitation_sep1330_enums(
        answer: Annotated[ElicitationResult[Enums] | str, Resolve(_ask_enums)],
    ) -> str:
        """Asks with every kind of enum."""
        return elicited(answer, "Elicitation completed")

    @server.tool()
    async def test_reconnection(ctx: Context) -> str:
        """Closes its SSE stream mid-call (SEP-1699 polling), then answers."""
        await ctx.info("Before disconnect")
        await ctx.close_sse_stream()
        await anyio.sleep(0.2)
        await ctx.info("After reconnect")
        return "Reconnection test completed"

    def json_schema_2020_12_tool(name: str | None = None, address: dict[str, Any] | None = None) -> str:
        return json.dumps({"name": name, "address": address})

    tool = Tool.from_function(
        json_schema_2020_12_tool,
        name="json_schema_2020_12_tool",
        description="Tool with JSON Schema 2020-12 features",
    )
    # The decorator would derive the schema from the signature: this one is given as is.
    server._tool_manager._tools[tool.name] = tool.model_copy(update={"parameters": SCHEMA_2020_12})

    @server.resource("test://static-text", name="static-text", mime_type="text/plain")
    def static_text() -> str:
        """A static text resource."""
        return "This is the content of the static text resource."

    @server.resource("test://static-binary", name="static-binary", mime_type="image/png")
    def static_binary() -> bytes:
        """A static binary resource (a PNG)."""
        return base64.b64decode(PNG)

    @server.resource("test://template/{id}/data", name="template", mime_type="application/json")
    def template(id: str) -> str:
        """A template: the id substituted."""
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})

    @server.resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
    def watched() -> str:
        """A resource that can be subscribed to."""
        return "Watched resource content"

    @server.prompt()
    def test_simple_prompt() -> list[UserMessage]:
        """A prompt without arguments."""
        return [UserMessage(TextContent(type="text", text="This is a simple prompt for testing."))]

    @server.prompt()
    def test_prompt_with_arguments(arg1: str, arg2: str) -> list[UserMessage]:
        """A prompt with two required arguments."""
        text = f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
        return [UserMessage(TextContent(type="text", text=text))]

    @server.prompt()
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:
        """A prompt with an embedded resource."""
        resource = TextResourceContents(
            uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
        )
        return [
            UserMessage(EmbeddedResource(type="resource", resource=resource)),
            UserMessage(TextContent(type="text", text="Please process the embedded resource above.")),
        ]

    @server.prompt()
    def test_prompt_with_image() -> list[UserMessage]:
        """A prompt with an image."""
        return [
            UserMessage(ImageContent(type="image", data=PNG, mime_type="image/png")),
            UserMessage(TextContent(type="text", text="Please analyze the image above.")),
        ]

    @server.completion()
    async def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion:
        return Completion(values=[], total=0, has_more=False)

    async def subscribe(ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        subscribed.add(str(params.uri))
        return EmptyResult()

    async def unsubscribe(ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        subscribed.discard(str(params.uri))
        return EmptyResult()

    async def set_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        return EmptyResult()

    everything_modern.register(server)
    lowlevel = server._lowlevel_server
    lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)
    lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    server = build()
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
