"""A handshake-era stdio server whose definitions change between starts, for the pinning tests.

Each list reads what it says now, so that two starts (or two lists) may differ: from the JSON
object in the file named by ``DRIFT_FILE`` when it is set, else from the environment:

- ``DRIFT_DESCRIPTION``: the description of tool ``echo`` (default ``Echo the text.``);
- ``DRIFT_READ_ONLY``: ``echo``'s ``readOnlyHint`` (``true``, the default, or ``false``);
- ``DRIFT_PROMPT``: the description of prompt ``greet``;
- ``DRIFT_TEMPLATE``: the description of resource template ``note`` (``note://{name}``);
- ``DRIFT_EXTRA``: the name of one more tool, when set.

The file's keys are the same names without the ``DRIFT_`` prefix, in lower case (``{"description":
"...", "read_only": false}``). Tools: ``echo(text)``; ``steady()`` (never changes); ``relist()``,
which says every list changed (after the file was rewritten). Read at each list, never at import:
a forked server (tests/harness/forkserver.py) imported this module long before its start.
"""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server

_TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
_DEFAULTS = {
    "description": "Echo the text.",
    "read_only": "true",
    "prompt": "Greet someone.",
    "template": "A note by name.",
    "extra": "",
}


def said(key: str) -> str:
    """What the server says for ``key`` now: the file's value, else the environment's."""
    path = os.environ.get("DRIFT_FILE")
    if path:
        try:
            with open(path, encoding="utf-8") as file:
                saying = json.load(file)
        except (OSError, ValueError):
            saying = {}
        if key in saying:
            value = saying[key]
            return json.dumps(value) if isinstance(value, bool) else str(value)
    return os.environ.get(f"DRIFT_{key.upper()}", _DEFAULTS[key])


async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    read_only = said("read_only").lower() == "true"
    tools = [
        types.Tool(
            name="echo",
            description=said("description"),
            input_schema=_TEXT,
            annotations=types.ToolAnnotations(read_only_hint=read_only),
        ),
        types.Tool(name="steady", description="Never changes.", input_schema={"type": "object"}),
        types.Tool(name="relist", description="Say every list changed.", input_schema={"type": "object"}),
    ]
    if extra := said("extra"):
        tools.append(
            types.Tool(name=extra, description=f"The extra tool {extra}.", input_schema={"type": "object"})
        )
    return types.ListToolsResult(tools=tools)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    if params.name == "relist":
        await ctx.session.send_tool_list_changed()
        await ctx.session.send_prompt_list_changed()
        await ctx.session.send_resource_list_changed()
        text = "relisted"
    elif params.name == "echo":
        text = str(arguments.get("text", ""))
    else:
        text = params.name
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def list_prompts(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
    argument = types.PromptArgument(name="who", required=True)
    return types.ListPromptsResult(
        prompts=[types.Prompt(name="greet", description=said("prompt"), arguments=[argument])]
    )


async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    who = (params.arguments or {}).get("who", "you")
    message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=f"Hello {who}"))
    return types.GetPromptResult(messages=[message])


async def list_resources(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[])


async def list_templates(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    template = types.ResourceTemplate(uri_template="note://{name}", name="note", description=said("template"))
    return types.ListResourceTemplatesResult(resource_templates=[template])


async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    contents = types.TextResourceContents(uri=str(params.uri), text=f"note {params.uri}")
    return types.ReadResourceResult(contents=[contents])


server: Server[Any] = Server(
    "drifting",
    version="0.1.0",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_prompts=list_prompts,
    on_get_prompt=get_prompt,
    on_list_resources=list_resources,
    on_list_resource_templates=list_templates,
    on_read_resource=read_resource,
)


async def serve() -> None:
    everything = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
    async with stdio_server() as (read_stream, write_stream), server.lifespan(server) as state:
        await serve_loop(
            server,
            read_stream,
            write_stream,
            lifespan_state=state,
            init_options=server.create_initialization_options(everything),
        )


def main() -> None:
    anyio.run(serve)


if __name__ == "__main__":
    main()
