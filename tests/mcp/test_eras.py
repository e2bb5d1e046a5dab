"""`EraMemo`: which protocol era each server spoke, and which modes a reconnect tries."""

from __future__ import annotations

from actors.mcp.eras import AUTO, LEGACY, MODERN_PROTOCOL, EraMemo, era_of


def test_a_pinned_protocol_is_tried_alone() -> None:
    memo = EraMemo({"k": MODERN_PROTOCOL})
    assert memo.modes("k", LEGACY) == [LEGACY]
    assert memo.modes("k", MODERN_PROTOCOL) == [MODERN_PROTOCOL]


def test_auto_mode_pins_the_remembered_era_then_falls_back() -> None:
    store: dict[str, str] = {}
    memo = EraMemo(store)
    assert memo.modes("k", AUTO) == [AUTO]
    memo.learn("k", AUTO, MODERN_PROTOCOL)
    assert store == {"k": MODERN_PROTOCOL}
    assert memo.modes("k", AUTO) == [MODERN_PROTOCOL, AUTO]
    memo.forget("k")
    memo.forget("k")  # idempotent
    assert memo.modes("k", AUTO) == [AUTO]


def test_only_auto_mode_teaches_the_memo() -> None:
    store: dict[str, str] = {}
    EraMemo(store).learn("k", LEGACY, LEGACY)
    EraMemo(store).learn("k", MODERN_PROTOCOL, MODERN_PROTOCOL)
    assert store == {}


def test_a_garbled_memo_entry_is_ignored() -> None:
    assert EraMemo({"k": "2019-01-01"}).modes("k", AUTO) == [AUTO]


def test_era_of_a_version() -> None:
    assert era_of("2026-07-28") == MODERN_PROTOCOL
    assert era_of("2025-06-18") == LEGACY
