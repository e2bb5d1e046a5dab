"""A backend's log messages reach a 2026-07-28 client through ``mcp-actors serve`` (stdio) only on
a request that opted in (``_meta`` log level, the SDK client's ``log_level``), and then every one
of them before the answer (the gateway waits for them only then); a request that did not opt in
gets none. The backend: the fixture server's ``log`` tool, five messages right before its answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.gateway.conftest import ROOT, WAIT, fixture, gateway_env, serve_args, write_config

CALLS = 20
LEVELS = ["debug", "info", "notice", "warning", "error"]


async def _calls(config: Path, folder: Path, level: Any) -> list[list[str]]:
    """For each call, the levels of the log messages heard by the time it returned."""
    heard: list[str] = []

    async def logged(params: types.LoggingMessageNotificationParams) -> None:
        heard.append(str(params.level))

    command, *args = serve_args(config)
    target = StdioServerParameters(command=command, args=args, env=gateway_env(folder), cwd=str(ROOT))
    seen = []
    with anyio.fail_after(WAIT):
        async with Client(target, mode="2026-07-28", log_level=level, logging_callback=logged) as client:
            for n in range(CALLS):
                result = await client.call_tool("fx__log", {"text": str(n)})
                assert not result.is_error, result
                seen.append(list(heard))
                heard.clear()
    return seen


@pytest.mark.parametrize("level", ["debug", None])
def test_log_messages_come_before_the_answer_only_when_asked_for(tmp_path: Path, level: Any) -> None:
    config = write_config(tmp_path, {"fx": fixture("--surface", logLevel="debug")})
    seen = anyio.run(_calls, config, tmp_path, level)
    assert seen == [LEVELS if level else []] * CALLS, seen
