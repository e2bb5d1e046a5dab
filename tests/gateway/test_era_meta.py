"""Which era a request's caller speaks, and what a forwarded request says of it
(`actors.gateway.era_copies`): pure functions, pinned by a table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from actors.gateway.era_copies import FORWARDED_ERA, caller_version, era_meta


@dataclass
class _Context:
    protocol_version: str | None
    meta: dict[str, Any] = field(default_factory=dict)


CASES = [
    # (the session's version, its _meta) → (the caller's version, what a forward carries)
    ("2025-11-25", {}, "2025-11-25", {FORWARDED_ERA: "2025-11-25"}),
    ("2025-06-18", {}, "2025-06-18", {FORWARDED_ERA: "2025-06-18"}),
    ("2026-07-28", {}, "2026-07-28", {}),
    # Forwarded by a replica: the caller's era, not the forwarding session's.
    ("2026-07-28", {FORWARDED_ERA: "2025-11-25"}, "2025-11-25", {FORWARDED_ERA: "2025-11-25"}),
    ("2026-07-28", {FORWARDED_ERA: "2026-07-28"}, "2026-07-28", {}),
    # Not a version: ignored.
    ("2026-07-28", {FORWARDED_ERA: 7}, "2026-07-28", {}),
    # No version known: read as the handshake era, the cautious reading.
    (None, {}, None, {}),
]


@pytest.mark.parametrize(("version", "meta", "caller", "forwarded"), CASES)
def test_the_callers_era(
    version: str | None, meta: dict[str, Any], caller: str | None, forwarded: Any
) -> None:
    ctx = _Context(version, meta)
    assert caller_version(ctx) == caller
    assert era_meta(ctx) == forwarded
