"""A server whose tool list is partly unusable still serves the rest, and answers every call."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from actors import CallTool, Runtime
from tests.conftest import wait_until
from tests.runtime.conftest import config, stdio_server

WAIT = 30.0


def odd_server(**lifecycle: Any) -> dict[str, Any]:
    return stdio_server("odd_server", protocol="legacy", **lifecycle)


def test_an_unusable_tool_name_is_left_out_and_the_rest_is_served(caplog: pytest.LogCaptureFixture) -> None:
    with (
        caplog.at_level(logging.WARNING, logger="actors"),
        Runtime.start(config({"odd": odd_server()})) as rt,
    ):
        result = rt.call_tool("odd/echo", {"text": "still here"}, timeout=WAIT)
        assert result.success, result
        assert result.text == "still here"
        names = {spec.name for spec in rt.list_tools("odd")}
        assert names == {"odd/echo", "odd/refd", "odd/changed", "odd/lists"}
        status = rt.status("odd")[0]
        assert (status.state, status.tools) == ("running", 4)
    assert any("left out tool 'oops/'" in record.getMessage() for record in caplog.records)


def test_a_dangling_ref_refuses_its_calls_and_every_queued_call_is_answered() -> None:
    with Runtime.start(config({"odd": odd_server()})) as rt:
        # Sent before the server ever ran: they wait for the start, then meet the schema.
        calls = [
            CallTool("odd", "refd", {"x": 1}),
            CallTool("odd", "echo", {"text": "a"}),
            CallTool("odd", "refd", {"x": 2}),
        ]
        for call in calls:
            rt.registry.tell(call)
        refd, echo, refd_again = (call.reply.result(timeout=WAIT) for call in calls)
        assert echo.success and echo.text == "a", echo
        for result in (refd, refd_again):
            assert result.error_type == "validation", result
            assert "schema" in (result.error or ""), result
        assert rt.status("odd")[0].state == "running"


def test_a_burst_of_list_changed_keeps_one_relist_in_flight() -> None:
    with Runtime.start(config({"odd": odd_server()})) as rt:

        def lists() -> tuple[int, int]:
            answered, most = rt.call_tool("odd/lists", {}, timeout=WAIT).text.split()
            return int(answered), int(most)

        assert lists() == (1, 1)  # the start listed once
        assert rt.call_tool("odd/changed", {"times": 500}, timeout=WAIT).success
        # Relists never overlap, and a burst folds into far fewer of them than notifications.
        assert wait_until(lambda: lists()[0] >= 2, WAIT), lists()
        answered, most = lists()
        assert most == 1, f"{most} tools/list requests were in flight at once"
        assert answered < 250, f"{answered} relists for 500 notifications"


@pytest.mark.parametrize("protocol", ["legacy", "2026-07-28"])
def test_a_result_that_breaks_its_output_schema_is_refused(protocol: str) -> None:
    """The server's own output schema holds it to its answers, in either era (the 2026-07-28
    era's calls run through the input-rounds driver)."""
    with Runtime.start(config({"liar": stdio_server("lying_server", protocol=protocol)})) as rt:
        honest = rt.call_tool("liar/count", {"n": 3}, timeout=WAIT)
        assert honest.success, honest
        assert honest.output["structuredContent"] == {"n": 3}
        lie = rt.call_tool("liar/lie", {"n": 3}, timeout=WAIT)
        assert not lie.success, lie
        assert lie.error_type == "server_error", lie
        assert "structured content" in (lie.error or ""), lie
        assert rt.status("liar")[0].state == "running"
