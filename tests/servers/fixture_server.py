"""A real MCP server built with the SDK's `MCPServer`, for the transport and runtime tests.

Run it as ``python -m tests.servers.fixture_server`` or as a script::

    fixture_server.py [--transport stdio|streamable-http|sse] [--port N]
                      [--extra-tools N] [--page-size N] [--name NAME] [--hold-stdout] [--surface]

Tools: ``echo``, ``add``, ``sleep`` (records start and cancellation), ``fail`` (an isError
result), ``crash`` (the process exits mid-call), ``add_tool`` (registers a tool, then says the
list changed, in either protocol era), ``ask_client`` (sends the client an elicitation request),
``stderr`` (writes a line to stderr), ``header`` (echoes an HTTP request header), plus
``--extra-tools`` numbered tools. ``tools/list`` is paged by ``--page-size`` (0: one page).

``--surface`` adds the rest of the MCP server surface (see `add_surface`): resources, a
template with completion, prompts, resource subscriptions and list changes, progress, logging
with ``logging/setLevel``, and tools that sample the client's model, ask for its roots or elicit.
Without it the server offers only the tools above (the runtime tests count on that).

``--hold-stdout`` starts a child that inherits stdout (so the pipe outlives the server) and
writes its pid to ``holder.pid``.

``sleep`` writes ``<id>.started`` and, when cancelled, ``<id>.cancelled`` into the folder named by
the environment variable ``FIXTURE_MARKER_DIR`` (when it is set).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Annotated, Any, get_args

import anyio
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, ListRoots, Resolve, Sample
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    CreateMessageResult,
    EmptyResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListRootsResult,
    ListToolsResult,
    LoggingLevel,
    PaginatedRequestParams,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    UnsubscribeRequestParams,
)
from pydantic import BaseModel

MODERN = "2026-07-28"


LEVELS: tuple[LoggingLevel, ...] = get_args(LoggingLevel)
"""The MCP log levels, least severe first."""


class PagedServer(MCPServer):
    """`MCPServer` with cursor paging of every list (the stock one lists everything at once)."""

    page_size = 0

    def _page(self, items: list[Any], params: PaginatedRequestParams | None) -> tuple[list[Any], str | None]:
        if self.page_size <= 0:
            return items, None
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + self.page_size
        return items[start:end], str(end) if end < len(items) else None

    async def _handle_list_tools(self, ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        tools, cursor = self._page(await self.list_tools(), params)
        return ListToolsResult(tools=tools, next_cursor=cursor)

    async def _handle_list_resources(
        self, ctx: Any, params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        resources, cursor = self._page(await self.list_resources(), params)
        return ListResourcesResult(resources=resources, next_cursor=cursor)

    async def _handle_list_resource_templates(
        self, ctx: Any, params: PaginatedRequestParams | None
    ) -> ListResourceTemplatesResult:
        templates, cursor = self._page(await self.list_resource_templates(), params)
        return ListResourceTemplatesResult(resource_templates=templates, next_cursor=cursor)

    async def _handle_list_prompts(
        self, ctx: Any, params: PaginatedRequestParams | None
    ) -> ListPromptsResult:
        prompts, cursor = self._page(await self.list_prompts(), params)
        return ListPromptsResult(prompts=prompts, next_cursor=cursor)


def _marker(name: str) -> Path | None:
    folder = os.environ.get("FIXTURE_MARKER_DIR")
    return Path(folder) / name if folder else None


def _touch(name: str) -> None:
    path = _marker(name)
    if path is not None:
        # Whole or not at all: a test waits for the file to exist and then reads the pid in it.
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(str(os.getpid()))
        os.replace(partial, path)


class Confirm(BaseModel):
    ok: bool


def _numbered(offset: int) -> Any:
    def numbered(x: int = 0) -> int:
        return x + offset

    return numbered


def build(
    name: str = "fixture", extra_tools: int = 0, page_size: int = 0, surface: bool = False
) -> PagedServer:
    """The fixture server with its tools registered."""
    server = PagedServer(name, version="1.0.0", instructions="A fixture server for tests.")
    server.page_size = page_size

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    async def sleep(seconds: float, marker: str = "sleep") -> str:
        """Sleep, recording the start and any cancellation in FIXTURE_MARKER_DIR."""
        _touch(f"{marker}.started")
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            _touch(f"{marker}.cancelled")
            raise
        return f"slept {seconds}"

    @server.tool()
    def fail(message: str) -> str:
        """Fail with the message (an isError result)."""
        raise ToolError(message)

    @server.tool()
    def crash() -> str:
        """Exit the process in the middle of the call."""
        print("fixture: crashing on request", file=sys.stderr, flush=True)
        os._exit(3)

    @server.tool()
    def stderr(text: str) -> str:
        """Write a line to stderr."""
        print(text, file=sys.stderr, flush=True)
        return "written"

    @server.tool()
    def header(name: str, ctx: Context) -> str:
        """The value of an HTTP request header ("" when absent or not on HTTP)."""
        headers = ctx.headers or {}
        return str(headers.get(name.lower(), headers.get(name, "")))

    @server.tool()
    async def add_tool(name: str, ctx: Context) -> str:
        """Register a new tool, then tell the client the tool list changed."""

        def added() -> str:
            return f"I am {name}"

        server.add_tool(added, name=name, description=f"Added at run time: {name}")
        if ctx.protocol_version == MODERN:
            await ctx.notify_tools_changed()
        else:
            await ctx.session.send_tool_list_changed()
        return f"added {name}"

    @server.tool()
    async def ask_client(ctx: Context) -> str:
        """Ask the client for input (elicitation): a server-to-client request."""
        try:
            result = await ctx.elicit("Proceed?", Confirm)
        except Exception as exc:
            return f"client refused: {exc}"
        return f"client answered: {result.action}"

    for i in range(extra_tools):
        server.add_tool(_numbered(i), name=f"tool_{i:03d}", description=f"Numbered tool {i}")
    if surface:
        add_surface(server)
    return server


class Name(BaseModel):
    name: str


def _ask_model(prompt: str) -> Sample:
    message = SamplingMessage(role="user", content=TextContent(type="text", text=prompt))
    return Sample([message], max_tokens=64)


def _ask_roots() -> ListRoots:
    return ListRoots()


def _ask_name() -> Elicit[Name]:
    return Elicit("Your name?", Name)


FRUIT = ("apple", "apricot", "banana", "cherry")
PEOPLE = ("alice", "albert", "bob")


def add_surface(server: PagedServer) -> None:
    """Resources, a template, prompts, completion, subscriptions, progress, logging and the
    client-side requests (sampling, roots, elicitation), in both protocol eras.

    Resources: ``fixture://greeting`` (text), ``fixture://blob`` (8 bytes), the template
    ``fixture://items/{item}`` (completed from `FRUIT`). Prompts: ``greet(name, punctuation="!")``
    (``name`` completed from `PEOPLE`) and ``plain``. Tools: ``touch(uri)`` (says the resource
    was updated: ``resources/subscribe`` era or listen streams), ``add_resource(name)`` and
    ``add_prompt(name)`` (then say the list changed), ``progress(steps, delay)``, ``log(text)``
    (one message per level from debug to error, at or above the level set), ``sample(prompt)``,
    ``roots()``, ``elicit_name()``.
    """
    # The logging, sampling and roots features are deprecated in 2026-07-28; the fixture
    # serves both eras on purpose.
    warnings.simplefilter("ignore", MCPDeprecationWarning)
    subscribed: set[str] = set()
    least: list[LoggingLevel] = ["debug"]

    @server.resource("fixture://greeting", name="greeting", description="A greeting.", mime_type="text/plain")
    def greeting() -> str:
        return "hello from the fixture"

    @server.resource("fixture://blob", name="blob", mime_type="application/octet-stream")
    def blob() -> bytes:
        return bytes(range(8))

    @server.resource("fixture://items/{item}", name="item", description="One item.", mime_type="text/plain")
    def item(item: str) -> str:
        return f"item {item}"

    @server.prompt(description="Greet someone.")
    def greet(name: str, punctuation: str = "!") -> str:
        return f"Hello, {name}{punctuation}"

    @server.prompt(description="A prompt without arguments.")
    def plain() -> str:
        return "A plain prompt."

    @server.completion()
    async def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion | None:
        words = FRUIT if isinstance(ref, ResourceTemplateReference) else PEOPLE
        values = [w for w in words if w.startswith(argument.value)]
        return Completion(values=values, total=len(values), has_more=False)

    async def subscribe(ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        subscribed.add(str(params.uri))
        return EmptyResult()

    async def unsubscribe(ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        subscribed.discard(str(params.uri))
        return EmptyResult()

    async def set_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        least[0] = params.level
        return EmptyResult()

    lowlevel = server._lowlevel_server
    lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)
    lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)

    @server.tool()
    async def touch(uri: str, ctx: Context) -> str:
        """Say that the resource at uri changed."""
        if ctx.protocol_version == MODERN:
            await ctx.notify_resource_updated(uri)
        elif uri in subscribed:
            await ctx.session.send_resource_updated(uri)
        return f"touched {uri}"

    @server.tool()
    async def add_resource(name: str, ctx: Context) -> str:
        """Add a resource fixture://added/<name>, then say the resource list changed."""

        def added() -> str:
            return f"added {name}"

        server.resource(f"fixture://added/{name}", name=name)(added)
        if ctx.protocol_version == MODERN:
            await ctx.notify_resources_changed()
        else:
            await ctx.session.send_resource_list_changed()
        return f"added fixture://added/{name}"

    @server.tool()
    async def add_prompt(name: str, ctx: Context) -> str:
        """Add a prompt, then say the prompt list changed."""

        def added() -> str:
            return f"I am {name}"

        server.prompt(name=name)(added)
        if ctx.protocol_version == MODERN:
            await ctx.notify_prompts_changed()
        else:
            await ctx.session.send_prompt_list_changed()
        return f"added {name}"

    @server.tool()
    async def progress(steps: int, ctx: Context, delay: float = 0.0) -> str:
        """Report progress steps times (1/steps ... steps/steps), then answer."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step}")
            await anyio.sleep(delay)
        return f"done {steps}"

    @server.tool()
    async def log(text: str, ctx: Context) -> str:
        """Send one log message per level, debug to error, at or above the level set."""
        for level in LEVELS[: LEVELS.index("error") + 1]:
            if LEVELS.index(level) >= LEVELS.index(least[0]):
                await ctx.log(level, {"level": level, "text": text}, logger_name="fixture")
        return "logged"

    @server.tool()
    async def sample(prompt: str, answer: Annotated[CreateMessageResult, Resolve(_ask_model)]) -> str:
        """Ask the client's model; answer with what it said."""
        content = answer.content
        return f"model said: {content.text}" if isinstance(content, TextContent) else "model said something"

    @server.tool()
    async def roots(listed: Annotated[ListRootsResult, Resolve(_ask_roots)]) -> str:
        """The client's roots, comma-separated."""
        return ",".join(str(root.uri) for root in listed.roots)

    @server.tool()
    async def elicit_name(outcome: Annotated[ElicitationResult[Name], Resolve(_ask_name)]) -> str:
        """Ask the client for a name; answer with the action (and the name when accepted)."""
        data = getattr(outcome, "data", None)
        return f"{outcome.action} {data.name}" if data is not None else outcome.action


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--transport", choices=["stdio", "streamable-http", "sse"], default="stdio")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--extra-tools", type=int, default=0)
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--name", default="fixture")
    parser.add_argument(
        "--hold-stdout",
        action="store_true",
        help="start a child that inherits stdout and outlives us (its pid goes to holder.pid)",
    )
    parser.add_argument("--surface", action="store_true", help="add resources, prompts and the rest")
    args = parser.parse_args(argv)
    if args.hold_stdout:
        holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        path = _marker("holder.pid")
        if path is not None:
            path.write_text(str(holder.pid))
    server = build(args.name, args.extra_tools, args.page_size, args.surface)
    if args.transport == "stdio":
        server.run("stdio")
    elif args.transport == "sse":
        server.run("sse", host="127.0.0.1", port=args.port)
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
