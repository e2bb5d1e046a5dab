"""An idle client connection outlives the client's own idle expiry (httpx's pool keeps one 5 s):
a gateway that closed it first would race a client reusing it, whose request then fails with
a reset (seen under load with uvicorn's default of 5 s)."""

from __future__ import annotations

import http.client
import time
from pathlib import Path

from tests.gateway.conftest import GatewayProcess, fixture, write_config

CLIENT_IDLE_EXPIRY = 5.0
"""httpx's default ``keepalive_expiry``, which the SDK's HTTP client keeps."""


def test_an_idle_connection_is_still_open_after_the_clients_idle_expiry(tmp_path: Path) -> None:
    gateway = GatewayProcess(write_config(tmp_path, {"s": fixture("--name", "s")}), tmp_path).start()
    try:
        connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=30)
        connection.request("GET", "/healthz")
        first = connection.getresponse()
        first.read()
        assert first.status == 200
        # Idle past the client's expiry: the one wait of this test is the property under test.
        time.sleep(CLIENT_IDLE_EXPIRY + 1.0)
        connection.request("GET", "/healthz")  # the same socket: http.client does not reconnect
        second = connection.getresponse()
        second.read()
        assert second.status == 200
        connection.close()
    finally:
        gateway.stop()
