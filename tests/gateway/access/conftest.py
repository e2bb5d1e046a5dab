"""Fixtures of the access tests, one of each per module: a real OIDC issuer of our own on
loopback (tests/servers/oidc_issuer.py; a module that registers clients at it defines its own)
and a remote MCP server over Streamable HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers.http_server import HTTPServer
from tests.servers.oidc_issuer import OIDCIssuer, serve_issuer


@pytest.fixture(scope="module")
def issuer() -> Iterator[OIDCIssuer]:
    with serve_issuer() as issuer:
        yield issuer


@pytest.fixture(scope="module")
def remote() -> Iterator[HTTPServer]:
    """A remote server (the fixture server over Streamable HTTP), for a gateway to reach with a
    header the test plants a secret in."""
    with HTTPServer("streamable-http") as server:
        yield server
