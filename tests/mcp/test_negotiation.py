"""A pinned 2026-07-28 session is confirmed with ``server/discover``: the SDK bounds each one by a
fixed 10 s, so a server still starting past that is asked again (the connect timeout around the
handshake is the bound); any other error ends the handshake at once. No server, no clock: the
SDK's session is stood in for by its two calls."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from actors.mcp.eras import MODERN_PROTOCOL, EraMemo
from actors.mcp.sdk_transport.negotiation import EraNegotiation

DISCOVERED = {
    "supportedVersions": [MODERN_PROTOCOL],
    "capabilities": {},
    "serverInfo": {"name": "s", "version": "1"},
}


class _Session:
    def __init__(self, failures: list[MCPError]) -> None:
        self.failures = failures
        self.asked = 0
        self.adopted: types.DiscoverResult | None = None

    async def send_discover(self, version: str) -> dict[str, Any]:
        self.asked += 1
        if self.failures:
            raise self.failures.pop(0)
        return dict(DISCOVERED)

    def adopt(self, result: types.DiscoverResult) -> None:
        self.adopted = result


class _Client:
    def __init__(self, session: _Session) -> None:
        self.session = session


def _negotiation() -> EraNegotiation:
    return EraNegotiation("s", MODERN_PROTOCOL, EraMemo({}), "stdio:s")


def test_a_discover_that_timed_out_is_asked_again() -> None:
    timed_out = MCPError(types.REQUEST_TIMEOUT, "Request 'server/discover' timed out")
    session = _Session([timed_out, timed_out])
    anyio.run(_negotiation().confirm, _Client(session), MODERN_PROTOCOL)  # type: ignore[arg-type]
    assert session.asked == 3
    assert session.adopted is not None and session.adopted.supported_versions == [MODERN_PROTOCOL]


def test_another_error_ends_the_handshake() -> None:
    session = _Session([MCPError(types.METHOD_NOT_FOUND, "Method not found")])
    with pytest.raises(MCPError):
        anyio.run(_negotiation().confirm, _Client(session), MODERN_PROTOCOL)  # type: ignore[arg-type]
    assert session.asked == 1


def test_a_legacy_session_sends_no_discover() -> None:
    session = _Session([])
    anyio.run(_negotiation().confirm, _Client(session), "legacy")  # type: ignore[arg-type]
    assert session.asked == 0
