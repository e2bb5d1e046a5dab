"""A real MCP server for the client surface beyond tools, built with the SDK's `MCPServer`.

Run it as ``python -m tests.servers.surface_server`` or as a script::

    surface_server.py [--transport stdio|streamable-http|sse] [--port N] [--name NAME]

It speaks both protocol eras (the handshake era and 2026-07-28), as the SDK's server does, and
offers, besides tools:

- resources: ``surface://static/hello.txt`` (text), ``surface://static/pixel.png`` (binary),
  ``surface://counter`` (text, changed by ``bump``; subscribable), ``surface://never`` (a read
  that never answers; writes ``never.started`` and, when cancelled, ``never.cancelled``);
- a resource template ``surface://notes/{name}``, whose ``name`` completes from `NOTE_NAMES`;
- prompts ``greet`` (``name`` required, ``style`` optional and completing from `STYLES`) and
  ``plain`` (no arguments).

Tools: ``bump`` (changes ``surface://counter`` and says so to subscribers: ``resources/subscribe``
in the handshake era, ``subscriptions/listen`` on 2026-07-28), ``subscribed`` (the URIs the
handshake-era subscriptions hold), ``add_resource`` / ``add_prompt`` (then list_changed, in either
era), ``progress`` (N progress notifications), ``sample`` (asks the client's model), ``elicit``
(asks the client's user), ``roots`` (asks the client's roots), ``log`` (one log message at each
level, filtered by ``logging/setLevel`` in the handshake era and by the request's opt-in on
2026-07-28), ``sleep`` (records start and cancellation) and ``task_only`` (listed with
``execution.taskSupport: "required"``; 2025-11-25 listings carry it, 2026-07-28 has no tasks).

Sampling, elicitation and roots go through the SDK's resolvers (``Resolve``), which send a
server-to-client request in the handshake era and an ``InputRequiredResult`` on 2026-07-28. A
client that did not declare the capability gets the text ``not offered: <capability>``.

Markers go to the folder named by ``FIXTURE_MARKER_DIR`` (as for the fixture server), if set.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import warnings
from pathlib import Path
from typing import Annotated, Any

import anyio
from mcp.server.lowlevel import NotificationOptions
from mcp.server.mcpserver import (
    Context,
    Elicit,
    ElicitationResult,
    ListRoots,
    MCPServer,
    Resolve,
    Sample,
)
from mcp.server.mcpserver.prompts.base import Prompt
from mcp.server.mcpserver.resources.types import TextResource
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import (
    CompleteRequestParams,
    CompleteResult,
    Completion,
    CreateMessageResult,
    EmptyResult,
    ListRootsResult,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    Tool,
    ToolExecution,
    UnsubscribeRequestParams,
)
from pydantic import BaseModel

# Logging, sampling and roots are deprecated as of 2026-07-28; this server exercises them on purpose.
warnings.simplefilter("ignore", MCPDeprecationWarning)

MODERN = "2026-07-28"
COUNTER_URI = "surface://counter"
HELLO_URI = "surface://static/hello.txt"
HELLO_TEXT = "Hello, surface!"
PIXEL_URI = "surface://static/pixel.png"
# A 1x1 transparent PNG.
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)
NEVER_URI = "surface://never"
NOTE_TEMPLATE = "surface://notes/{name}"
NOTE_NAMES = ("alpha", "alpine", "beta")
STYLES = ("formal", "friendly", "pirate")
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
TASK_ONLY = "task_only"


def _marker(name: str) -> Path | None:
    folder = os.environ.get("FIXTURE_MARKER_DIR")
    return Path(folder) / name if folder else None


def _touch(name: str) -> None:
    path = _marker(name)
    if path is not None:
        path.write_text(str(os.getpid()))


class Confirm(BaseModel):
    ok: bool
    note: str = ""


class SurfaceServer(MCPServer):
    """`MCPServer` plus what it leaves to the low-level server: handshake-era subscriptions and
    ``logging/setLevel``, honest ``listChanged`` flags, and a tool listed as task-only."""

    def __init__(self, name: str) -> None:
        super().__init__(name, version="1.0.0", instructions="A server for the client surface tests.")
        self.counter = 0
        self.subscribed: set[str] = set()
        """URIs subscribed with ``resources/subscribe`` (handshake era; one process, one client)."""
        self.log_level = "debug"
        """The least severe level ``log`` sends in the handshake era (``logging/setLevel``)."""
        low = self._lowlevel_server
        low.add_request_handler("resources/subscribe", SubscribeRequestParams, self._subscribe)
        low.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, self._unsubscribe)
        low.add_request_handler("logging/setLevel", SetLevelRequestParams, self._set_level)
        low.add_request_handler("completion/complete", CompleteRequestParams, self._complete)
        # The handshake era takes listChanged from these options; the server does send them.
        everything = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
        low.create_initialization_options = functools.partial(  # type: ignore[method-assign]
            low.create_initialization_options, everything
        )

    async def _subscribe(self, ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        self.subscribed.add(str(params.uri))
        return EmptyResult()

    async def _unsubscribe(self, ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        self.subscribed.discard(str(params.uri))
        return EmptyResult()

    async def _set_level(self, ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        self.log_level = params.level
        return EmptyResult()

    async def _complete(self, ctx: Any, params: CompleteRequestParams) -> CompleteResult:
        ref, argument = params.ref, params.argument
        choices: tuple[str, ...] = ()
        if isinstance(ref, PromptReference) and ref.name == "greet" and argument.name == "style":
            choices = STYLES
        elif (
            isinstance(ref, ResourceTemplateReference)
            and ref.uri == NOTE_TEMPLATE
            and argument.name == "name"
        ):
            choices = NOTE_NAMES
        values = [c for c in choices if c.startswith(argument.value)]
        return CompleteResult(completion=Completion(values=values, total=len(values), has_more=False))

    async def list_tools(self) -> list[Tool]:
        tools = await super().list_tools()
        return [
            tool.model_copy(update={"execution": ToolExecution(task_support="required")})
            if tool.name == TASK_ONLY
            else tool
            for tool in tools
        ]


def _modern(ctx: Context) -> bool:
    return ctx.protocol_version == MODERN


# ---- resolvers: what the client is asked, unless it did not declare that it can answer ----


def ask_model(ctx: Context, prompt: str) -> Sample | str:
    capabilities = ctx.client_capabilities
    if capabilities is None or capabilities.sampling is None:
        return "not offered: sampling"
    message = SamplingMessage(role="user", content=TextContent(type="text", text=prompt))
    return Sample([message], max_tokens=50, system_prompt="You are a test model.")


def ask_user(ctx: Context, question: str) -> Elicit[Confirm] | str:
    capabilities = ctx.client_capabilities
    if capabilities is None or capabilities.elicitation is None:
        return "not offered: elicitation"
    return Elicit(question, Confirm)


def ask_roots(ctx: Context) -> ListRoots | str:
    capabilities = ctx.client_capabilities
    if capabilities is None or capabilities.roots is None:
        return "not offered: roots"
    return ListRoots()


def build(name: str = "surface") -> SurfaceServer:
    """The surface server with its resources, prompts and tools registered."""
    server = SurfaceServer(name)

    # ---- resources --------------------------------------------------------------------

    @server.resource(
        HELLO_URI,
        name="hello",
        title="Hello",
        description="A greeting.",
        mime_type="text/plain",
    )
    def hello() -> str:
        return HELLO_TEXT

    @server.resource(PIXEL_URI, name="pixel", description="A 1x1 PNG.", mime_type="image/png")
    def pixel() -> bytes:
        return PIXEL

    @server.resource(COUNTER_URI, name="counter", description="Changed by bump.", mime_type="text/plain")
    def counter() -> str:
        return f"count {server.counter}"

    @server.resource(NEVER_URI, name="never", description="A read that never answers.")
    async def never() -> str:
        _touch("never.started")
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            _touch("never.cancelled")
            raise
        return "unreachable"

    @server.resource(NOTE_TEMPLATE, name="note", description="A note by name.", mime_type="text/plain")
    def note(name: str) -> str:
        return f"Note {name}"

    # ---- prompts ----------------------------------------------------------------------

    @server.prompt(description="Greet someone, in a style.")
    def greet(name: str, style: str = "plain") -> str:
        return f"Say hello to {name} in a {style} style."

    @server.prompt(description="A prompt without arguments.")
    def plain() -> str:
        return "Say something plain."

    # ---- tools ------------------------------------------------------------------------

    @server.tool()
    async def bump(ctx: Context) -> str:
        """Change surface://counter and tell its subscribers."""
        server.counter += 1
        if _modern(ctx):
            await ctx.notify_resource_updated(COUNTER_URI)
        elif COUNTER_URI in server.subscribed:
            await ctx.session.send_resource_updated(COUNTER_URI)
        return f"count {server.counter}"

    @server.tool()
    def subscribed() -> str:
        """The URIs subscribed with resources/subscribe (handshake era), as a JSON list."""
        return json.dumps(sorted(server.subscribed))

    @server.tool()
    async def add_resource(name: str, text: str, ctx: Context) -> str:
        """Add the resource surface://added/<name>, then say the resource list changed."""
        uri = f"surface://added/{name}"
        server.add_resource(TextResource(uri=uri, name=name, text=text, mime_type="text/plain"))
        if _modern(ctx):
            await ctx.notify_resources_changed()
        else:
            await ctx.session.send_resource_list_changed()
        return uri

    @server.tool()
    async def add_prompt(name: str, ctx: Context) -> str:
        """Add a prompt named <name>, then say the prompt list changed."""

        def added() -> str:
            return f"I am {name}"

        server.add_prompt(Prompt.from_function(added, name=name, description=f"Added at run time: {name}"))
        if _modern(ctx):
            await ctx.notify_prompts_changed()
        else:
            await ctx.session.send_prompt_list_changed()
        return name

    @server.tool()
    async def progress(steps: int, ctx: Context, delay: float = 0.01) -> str:
        """Report progress 1..steps of steps, then answer."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step}")
            await anyio.sleep(delay)
        return f"done {steps}"

    @server.tool()
    def sample(prompt: str, answer: Annotated[CreateMessageResult | str, Resolve(ask_model)]) -> str:
        """Ask the client's model about the prompt; return what it said."""
        if isinstance(answer, str):
            return answer
        content = answer.content
        text = content.text if isinstance(content, TextContent) else type(content).__name__
        return f"model {answer.model} said: {text}"

    @server.tool()
    def elicit(question: str, answer: Annotated[ElicitationResult[Confirm], Resolve(ask_user)]) -> str:
        """Ask the client's user the question; return the action and the answer."""
        data = getattr(answer, "data", None)
        if isinstance(data, str):
            return data  # not offered: the resolver gave text, not a question
        if answer.action == "accept" and isinstance(data, Confirm):
            return f"accept ok={data.ok} note={data.note}"
        return str(answer.action)

    @server.tool()
    def roots(listed: Annotated[ListRootsResult | str, Resolve(ask_roots)]) -> str:
        """The client's roots as JSON ([{"uri", "name"}])."""
        if isinstance(listed, str):
            return listed
        return json.dumps([{"uri": str(r.uri), "name": r.name} for r in listed.roots])

    @server.tool()
    async def log(ctx: Context) -> str:
        """Send one log message at each level (debug .. emergency) that the client asked for."""
        least = LEVELS.index(server.log_level) if server.log_level in LEVELS else 0
        for level in LEVELS:
            if _modern(ctx) or LEVELS.index(level) >= least:
                await ctx.log(level, f"log at {level}", logger_name="surface")  # type: ignore[arg-type]
        return "logged"

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

    @server.tool(name=TASK_ONLY)
    def task_only() -> str:
        """Listed as needing task augmentation (execution.taskSupport "required")."""
        return "ran without a task"

    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--transport", choices=["stdio", "streamable-http", "sse"], default="stdio")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--name", default="surface")
    args = parser.parse_args(argv)
    server = build(args.name)
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run(args.transport, host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
