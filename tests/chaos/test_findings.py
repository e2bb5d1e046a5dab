"""Library bugs the chaos runs exposed, each reduced to a small deterministic test.

Under load, a restarted fixture server sometimes took longer than the SDK's discovery timeout
(10 s) to answer ``server/discover`` in the protocol era remembered for it; the start then failed
instead of falling back to auto mode, and cost an extra restart that no kill explains (the chaos
run counts these as ``start_failures_not_from_kills``).
"""

from __future__ import annotations

import mcp.client.session
import pytest

from actors import Runtime
from actors.mcp.sdk_transport import MODERN_PROTOCOL, SDKTransport, StdioCommand
from tests.runtime.conftest import config, stdio_server

# The cause was that the rejected pinned attempt's own teardown reached SDKTransport._peer_lost,
# which set the transport-wide `_stop` event and `_lost_hint`; the auto attempt then started
# with `_stop` already set and ended at once. The fallback now starts clean.


def _pin_modern(monkeypatch: pytest.MonkeyPatch, entry: dict[str, object]) -> None:
    args = [str(a) for a in entry["args"]]  # type: ignore[attr-defined]
    key = SDKTransport(StdioCommand(str(entry["command"]), tuple(args), cwd=str(entry["cwd"]))).memo_key
    monkeypatch.setitem(SDKTransport.default_protocol_memo, key, MODERN_PROTOCOL)


def test_a_server_that_no_longer_speaks_the_remembered_era_still_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Remembered as 2026-07-28, now a legacy-only server that refuses server/discover.
    entry = stdio_server("noisy_server", maxRestarts=0)
    _pin_modern(monkeypatch, entry)
    with Runtime.start(config({"n": entry})) as rt:
        result = rt.call_tool("n/echo", {"text": "hi"}, timeout=30)
        assert result.success, result
        assert rt.status("n")[0].restarts == 0


def test_a_slow_starting_server_with_a_remembered_era_starts_within_its_connect_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What chaos under load hit: the server takes longer than the SDK's discovery timeout.
    monkeypatch.setattr(mcp.client.session, "DISCOVER_TIMEOUT_SECONDS", 1.0)
    entry = stdio_server("slow_start_server", "2", maxRestarts=0, connectTimeout=30)
    _pin_modern(monkeypatch, entry)
    with Runtime.start(config({"s": entry})) as rt:
        result = rt.call_tool("s/echo", {"text": "hi"}, timeout=30)
        assert result.success, result
        assert rt.status("s")[0].restarts == 0
