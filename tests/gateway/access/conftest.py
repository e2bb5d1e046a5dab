"""Fixtures of the access tests: a real OIDC issuer of our own on loopback, one per module
(tests/servers/oidc_issuer.py; a module that registers clients at it defines its own)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers.oidc_issuer import OIDCIssuer, serve_issuer


@pytest.fixture(scope="module")
def issuer() -> Iterator[OIDCIssuer]:
    with serve_issuer() as issuer:
        yield issuer
