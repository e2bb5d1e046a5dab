"""The conformance client's fork server, shared by the tests of a module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conformance.forkserver import ClientForkServer


@pytest.fixture(scope="module")
def forks() -> Iterator[ClientForkServer]:
    """``client.py`` forked per scenario from one process that imported it once."""
    with ClientForkServer() as server:
        yield server
