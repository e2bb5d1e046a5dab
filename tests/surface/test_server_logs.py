"""Servers' log messages become Python log records on ``actors.server.<namespace>`` at the mapped
level, with the structured ``extra``; a server's ``logLevel`` sets what it sends."""

from __future__ import annotations

import logging

import pytest

from actors import Runtime
from tests.conftest import wait_until
from tests.servers.surface_server import LEVELS
from tests.surface.conftest import WAIT, ServerEntry, config, text_of

NS = "s"
EV = "ev"
# MCP (RFC 5424) levels as Python logging levels.
MAPPED = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO + 5,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL + 5,
    "emergency": logging.CRITICAL + 10,
}


def level(record: logging.LogRecord) -> str:
    """The MCP level a server log record carries in its ``extra``."""
    return str(record.__dict__.get("level"))


def server_logs(caplog: pytest.LogCaptureFixture, namespace: str) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.name == f"actors.server.{namespace}" and getattr(r, "mcp_event", None) == "server_log"
    ]


def test_each_log_level_maps_to_a_python_level_with_the_structured_extra(
    surface: ServerEntry, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=f"actors.server.{NS}")
    with Runtime.start(config({NS: surface(logLevel="debug")})) as rt:
        assert text_of(rt.call_tool(f"{NS}/log", {}, timeout=WAIT)) == "logged"
        # Sent in order: once the last has arrived, every one has.
        assert wait_until(lambda: any(level(r) == "emergency" for r in server_logs(caplog, NS)), WAIT)
    records = server_logs(caplog, NS)
    assert [level(r) for r in records] == list(LEVELS)
    for record in records:
        mcp_level, extra = level(record), record.__dict__
        assert record.levelno == MAPPED[mcp_level], (mcp_level, record.levelno)
        assert f"log at {mcp_level}" in record.getMessage()
        assert (extra["namespace"], extra["source"], extra["data"]) == (NS, "surface", f"log at {mcp_level}")


def test_log_level_sets_the_least_severe_message_the_server_sends(
    surface: ServerEntry, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=f"actors.server.{NS}")
    with Runtime.start(config({NS: surface(logLevel="error")})) as rt:
        assert text_of(rt.call_tool(f"{NS}/log", {}, timeout=WAIT)) == "logged"
        assert wait_until(lambda: any(level(r) == "emergency" for r in server_logs(caplog, NS)), WAIT)
    assert [level(r) for r in server_logs(caplog, NS)] == ["error", "critical", "alert", "emergency"]


def test_server_everything_log_messages_arrive_at_their_mapped_level(
    everything: ServerEntry, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=f"actors.server.{EV}")
    with Runtime.start(config({EV: everything(logLevel="debug")})) as rt:
        started = rt.call_tool(f"{EV}/toggle-simulated-logging", {}, timeout=WAIT)
        assert "Started simulated" in text_of(started)
        # The first message is sent at once (then one every 5 s).
        assert wait_until(lambda: server_logs(caplog, EV), WAIT)
        assert "Stopped simulated" in text_of(
            rt.call_tool(f"{EV}/toggle-simulated-logging", {}, timeout=WAIT)
        )
    for record in server_logs(caplog, EV):
        assert record.levelno == MAPPED[level(record)], record
