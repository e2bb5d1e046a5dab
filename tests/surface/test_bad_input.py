"""Bad input beyond tools: servers that answer garbage or nothing, unknown namespaces, a tool that
needs task augmentation. Every request gets a classified result, nothing hangs, nothing leaks
(the autouse fixture checks threads and child processes)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from actors import ErrorType, Runtime
from actors.runtime.messages import Complete, GetPrompt, ReadResource
from tests.conftest import wait_until
from tests.runtime.conftest import stdio_server
from tests.servers.http_server import REPO_ROOT
from tests.servers.surface_server import HELLO_TEXT, HELLO_URI, TASK_ONLY
from tests.surface.conftest import WAIT, config, read_text, surface_server, text_of

NS = "s"
# A server that cannot start gives these: its start failed, timed out, or it is failed for good.
CANNOT_START = {ErrorType.CONNECTION, ErrorType.TIMEOUT, ErrorType.FAILED}


@pytest.mark.parametrize("module", ["garbage_server", "silent_server"])
def test_a_server_that_answers_garbage_or_nothing_gets_classified_answers(module: str) -> None:
    entry: dict[str, Any] = stdio_server(module, connectTimeout=2, maxRestarts=0, restartBackoff=0.05)
    with Runtime.start(config({"bad": entry})) as rt:
        # Lists wait for the start, which fails: empty, not a hang.
        assert rt.list_resources("bad") == []
        assert rt.list_prompts("bad") == []
        assert rt.list_resource_templates("bad") == []
        requests: list[ReadResource | GetPrompt | Complete] = [
            ReadResource(namespace="bad", uri="x://y", timeout=WAIT),
            GetPrompt(namespace="bad", prompt="p", arguments={}, timeout=WAIT),
            Complete(
                namespace="bad", ref={"type": "ref/prompt", "name": "p"}, argument={"name": "a", "value": ""}
            ),
        ]
        for request in requests:
            rt.registry.tell(request)
        for request in requests:
            result = request.reply.result(timeout=2 * WAIT)
            assert result.error_type in CANNOT_START, result
            assert result.error, result


def test_unknown_namespaces_are_not_found_for_every_request(marker_dir: Path) -> None:
    with surface_server("stdio", "legacy", marker_dir) as entry, Runtime.start(config({NS: entry()})) as rt:
        assert rt.read_resource("nowhere", HELLO_URI).error_type == ErrorType.NOT_FOUND
        assert rt.get_prompt("nowhere/greet", {"name": "x"}).error_type == ErrorType.NOT_FOUND
        assert rt.complete("nowhere", "greet", ("style", "")).error_type == ErrorType.NOT_FOUND
        assert (
            rt.call_tool("nowhere/progress", {"steps": 1}, progress=lambda *_: None).error_type
            == ErrorType.NOT_FOUND
        )
        assert rt.list_resources("nowhere") == []
        assert rt.list_prompts("nowhere") == []
        assert rt.status(NS)[0].state == "idle", "asking about another namespace woke this server"
        assert read_text(rt.read_resource(NS, HELLO_URI, timeout=WAIT)) == HELLO_TEXT


def test_a_tool_that_requires_task_augmentation_is_refused_with_a_clear_reason(marker_dir: Path) -> None:
    # Only the 2025-11-25 listing carries execution.taskSupport (2026-07-28 has no tasks).
    for kind in ("stdio", "streamable-http"):
        with surface_server(kind, "legacy", marker_dir) as entry, Runtime.start(config({NS: entry()})) as rt:
            [spec] = [s for s in rt.list_tools(NS) if s.tool_name == TASK_ONLY]
            assert spec.metadata.get("taskSupport") == "required", spec.metadata
            refused = rt.call_tool(f"{NS}/{TASK_ONLY}", {}, timeout=WAIT)
            assert refused.error_type == ErrorType.VALIDATION, refused
            assert "task" in (refused.error or ""), refused
            # The other tools are not affected.
            assert text_of(rt.call_tool(f"{NS}/progress", {"steps": 1}, timeout=WAIT)) == "done 1"


def test_on_2026_07_28_the_same_tool_is_an_ordinary_one(marker_dir: Path) -> None:
    with (
        surface_server("stdio", "2026-07-28", marker_dir) as entry,
        Runtime.start(config({NS: entry()})) as rt,
    ):
        assert text_of(rt.call_tool(f"{NS}/{TASK_ONLY}", {}, timeout=WAIT)) == "ran without a task"


def test_a_server_that_answers_a_read_with_garbage_or_never_gets_classified_answers() -> None:
    # tests/mcp/raw_server.py: a hand-written handshake-era server that answers some requests badly.
    raw = {"command": sys.executable, "args": ["-m", "tests.mcp.raw_server"], "cwd": str(REPO_ROOT)}
    with Runtime.start(config({"raw": {**raw, "protocol": "legacy"}})) as rt:
        assert read_text(rt.read_resource("raw", "raw://hello", timeout=WAIT)) == "hello"
        garbage = rt.read_resource("raw", "raw://garbage", timeout=WAIT)
        assert garbage.error_type == ErrorType.SERVER_ERROR, garbage
        silent = rt.read_resource("raw", "raw://silent", timeout=1)
        assert silent.error_type == ErrorType.TIMEOUT, silent
        # The server was told to give up on what got no answer.
        assert wait_until(lambda: json_of_read(rt, "raw://cancelled"), WAIT)
        # A prompt without a name is left out of the list; nothing else is lost.
        assert rt.list_prompts("raw") == []
        assert [r.uri for r in rt.list_resources("raw")] == ["raw://hello"]
        status = rt.status("raw")[0]
        assert (status.state, status.restarts, status.in_flight) == ("running", 0, 0)


def json_of_read(rt: Runtime, uri: str) -> Any:
    return json.loads(read_text(rt.read_resource("raw", uri, timeout=WAIT)))
