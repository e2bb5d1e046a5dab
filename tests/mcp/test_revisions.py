"""`actors.mcp.revisions`: the table of what differs between protocol revisions, pinned, and
kept in step with the SDK's own list of versions."""

from __future__ import annotations

import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, KNOWN_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from actors.mcp.revisions import HANDSHAKE, REVISIONS, Input, Liveness, Notices, revision_of

# version: handshake, input, liveness, notices, cache hints, log level per request, extensions,
# name headers.
H = (True, Input.SERVER_REQUESTS, Liveness.PING, Notices.SESSION, False, False, False, False)
TABLE = {
    "2024-11-05": H,
    "2025-03-26": H,
    "2025-06-18": H,
    "2025-11-25": H,
    "2026-07-28": (False, Input.ROUNDS, Liveness.DISCOVER, Notices.LISTEN, True, True, True, True),
}


def test_the_table_as_pinned() -> None:
    assert {
        r.version: (
            r.handshake,
            r.input,
            r.liveness,
            r.notices,
            r.cache_hints,
            r.log_level_per_request,
            r.extensions,
            r.name_headers,
        )
        for r in REVISIONS
    } == TABLE


def test_every_revision_the_sdk_knows_has_a_row_in_its_order() -> None:
    """A revision the SDK adds fails here until its row says what it does differently."""
    assert tuple(r.version for r in REVISIONS) == KNOWN_PROTOCOL_VERSIONS
    assert {r.version for r in REVISIONS if r.handshake} == set(HANDSHAKE_PROTOCOL_VERSIONS)
    assert {r.version for r in REVISIONS if not r.handshake} == set(MODERN_PROTOCOL_VERSIONS)


@pytest.mark.parametrize("version", [None, "", "1999-01-01", "zzz"])
def test_a_version_nobody_knows_is_read_as_the_newest_handshake_revision(version: str | None) -> None:
    assert revision_of(version) is HANDSHAKE


def test_a_known_version_is_its_own_row() -> None:
    for revision in REVISIONS:
        assert revision_of(revision.version) is revision
