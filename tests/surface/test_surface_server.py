"""The surface server itself, driven by the SDK's own client in both eras: what the runtime tests
rely on it to do, checked without the runtime (so a failure there is the runtime's)."""

from __future__ import annotations

import base64
import warnings
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.harness import forkserver
from tests.servers.http_server import REPO_ROOT
from tests.servers.surface_server import (
    COUNTER_URI,
    HELLO_TEXT,
    HELLO_URI,
    PIXEL,
    PIXEL_URI,
    TASK_ONLY,
    build,
)
from tests.surface.conftest import ERAS, WAIT

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")


async def _sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="hi"), model="sdk-model"
    )


async def _elicitation(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"ok": True, "note": "sure"})


async def _roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult.model_validate({"roots": [{"uri": "file:///tmp/root", "name": "root"}]})


def _text(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def _exercise(era: str) -> None:
    command, *args = forkserver.python_module("tests.servers.surface_server")
    params = StdioServerParameters(command=command, args=args, cwd=str(REPO_ROOT))
    logs: list[str] = []
    news: list[str] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.level)

    async def on_message(message: Any) -> None:
        news.append(str(getattr(message, "method", type(message).__name__)))

    client = Client(
        params,
        mode=era,
        sampling_callback=_sampling,
        elicitation_callback=_elicitation,
        list_roots_callback=_roots,
        logging_callback=on_log,
        message_handler=on_message,
        log_level="warning",
    )
    async with client:
        assert client.protocol_version == ("2025-11-25" if era == "legacy" else era)
        [blob] = (await client.read_resource(PIXEL_URI)).contents
        assert isinstance(blob, types.BlobResourceContents) and blob.mime_type == "image/png"
        assert base64.b64decode(blob.blob) == PIXEL
        prompt = await client.get_prompt("greet", {"name": "Ann"})
        assert isinstance(prompt.messages[0].content, types.TextContent)
        assert prompt.messages[0].content.text == "Say hello to Ann in a plain style."
        styles = await client.complete(
            types.PromptReference(type="ref/prompt", name="greet"), {"name": "style", "value": "f"}
        )
        assert styles.completion.values == ["formal", "friendly"]

        steps: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            steps.append(progress)

        done = await client.call_tool("progress", {"steps": 3}, progress_callback=on_progress)
        assert _text(done) == "done 3"
        assert steps == [1, 2, 3]
        assert _text(await client.call_tool("sample", {"prompt": "x"})) == "model sdk-model said: hi"
        assert _text(await client.call_tool("elicit", {"question": "ok?"})) == "accept ok=True note=sure"
        assert "file:///tmp/root" in _text(await client.call_tool("roots", {}))
        if era == "legacy":
            await client.set_logging_level("warning")
        assert _text(await client.call_tool("log", {})) == "logged"
        with anyio.fail_after(WAIT):
            while len(logs) < 5:
                await anyio.sleep(0.02)
        assert logs == ["warning", "error", "critical", "alert", "emergency"]

        if era == "legacy":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.subscribe_resource(COUNTER_URI)
            await client.call_tool("bump", {})
            await client.call_tool("add_resource", {"name": "n", "text": "t"})
            with anyio.fail_after(WAIT):
                while "notifications/resources/list_changed" not in news:
                    await anyio.sleep(0.02)
            assert "notifications/resources/updated" in news
        else:
            listening = client.listen(resource_subscriptions=[COUNTER_URI], resources_list_changed=True)
            async with listening as events:
                await client.call_tool("bump", {})
                await client.call_tool("add_resource", {"name": "n", "text": "t"})
                seen: list[str] = []
                with anyio.fail_after(WAIT):
                    async for event in events:
                        seen.append(type(event).__name__)
                        if len(seen) == 2:
                            break
                assert sorted(seen) == ["ResourceUpdated", "ResourcesListChanged"]
        uris = [str(r.uri) for r in (await client.list_resources()).resources]
        assert "surface://added/n" in uris
        task_only = [t for t in (await client.list_tools()).tools if t.name == TASK_ONLY]
        if era == "legacy":
            assert task_only[0].execution is not None
            assert task_only[0].execution.task_support == "required"


@pytest.mark.parametrize("era", ERAS)
def test_the_surface_server_serves_the_whole_surface_in_each_era(era: str) -> None:
    anyio.run(_exercise, era)


def test_the_constants_match_what_it_serves() -> None:
    async def read(uri: str) -> Any:
        return list(await build().read_resource(uri))

    [hello] = anyio.run(read, HELLO_URI)
    [pixel] = anyio.run(read, PIXEL_URI)
    assert hello.content == HELLO_TEXT
    assert pixel.content == PIXEL and pixel.content.startswith(b"\x89PNG")
