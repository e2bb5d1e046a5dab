"""`ServerPins` and `PinChange` (applied, stored as JSON), and the diff people read."""

from __future__ import annotations

import pytest

from actors.pins import Pin, PinChange, ServerPins, changed_properties, property_changes
from actors.pins.diff import ABSENT, PropertyChange

V1 = {"name": "echo", "description": "Echo.", "annotations": {"readOnlyHint": True, "title": "E"}}
V2 = {"name": "echo", "description": "Echo more.", "annotations": {"readOnlyHint": False, "title": "E"}}


def test_an_approval_makes_the_held_definition_the_pin() -> None:
    pins = ServerPins(
        "ns",
        {
            ("tools", "echo"): Pin.of(V1, 1.0),
            ("prompts", "echo"): Pin.of(V1, 1.0),
            ("tools", "b"): Pin.of(V1, 1.0),
        },
        {
            ("tools", "echo"): Pin.of(V2, 2.0),
            ("prompts", "echo"): Pin.of(V2, 2.0),
            ("tools", "b"): Pin.of(V2, 2.0),
        },
    )
    named = pins.apply(PinChange(approve=frozenset({"echo"}), at=3.0))
    assert named.held.keys() == {("tools", "b")}
    assert named.pinned[("tools", "echo")] == Pin(Pin.of(V2, 0).digest, V2, 3.0)
    assert named.pinned[("prompts", "echo")].digest == Pin.of(V2, 0).digest
    everything = pins.apply(PinChange(approve_all=True, at=3.0))
    assert everything.held == {}
    assert pins.apply(PinChange(approve=frozenset({"nothing"}))) == pins


def test_replace_starts_over() -> None:
    pins = ServerPins("ns", {("tools", "old"): Pin.of(V1, 1.0)}, {("tools", "old"): Pin.of(V2, 1.0)})
    fresh = pins.apply(PinChange(pin={("tools", "new"): Pin.of(V1, 2.0)}, replace=True), "renamed")
    assert fresh == ServerPins("renamed", {("tools", "new"): Pin.of(V1, 2.0)})
    assert not PinChange() and PinChange(replace=True)


def test_pins_survive_json_and_a_tampered_digest_does_not() -> None:
    pins = ServerPins("ns", {("tools", "echo"): Pin.of(V1, 1.5)}, {("tools", "echo"): Pin.of(V2, 2.5)})
    data = pins.to_json()
    assert data["format"] == 1 and set(data["pinned"]["tools"]) == {"echo"}
    assert ServerPins.from_json(data) == pins
    data["pinned"]["tools"]["echo"]["definition"]["description"] = "edited by hand"
    with pytest.raises(ValueError, match="digest"):
        ServerPins.from_json(data)
    with pytest.raises(ValueError, match="format"):
        ServerPins.from_json({"format": 99})


def test_the_diff_names_each_changed_property_with_old_and_new() -> None:
    assert changed_properties(V1, V2) == ("annotations", "description")
    assert changed_properties(V1, {**V1, "title": "Echo"}) == ("title",)
    changes = property_changes(V1, V2)
    assert changes == [
        PropertyChange("annotations.readOnlyHint", True, False),
        PropertyChange("description", "Echo.", "Echo more."),
    ]
    assert changes[0].line() == "annotations.readOnlyHint: true -> false"
    added = property_changes(V1, {**V1, "title": "Echo"})
    assert added == [PropertyChange("title", ABSENT, "Echo")]
    assert added[0].line() == 'title: (absent) -> "Echo"'
    assert "…" in PropertyChange("x", "a" * 500, 1).line(width=20)


def test_a_bool_is_not_a_number_in_a_diff() -> None:
    assert property_changes({"a": True}, {"a": 1}) == [PropertyChange("a", True, 1)]
    assert property_changes({"a": [1, 2]}, {"a": [1, 2]}) == []


def test_the_first_sight_anywhere_wins_and_a_hold_of_the_pin_is_moot() -> None:
    # Another process pinned the name first: a first sight here keeps that pin ...
    theirs = ServerPins("ns", {("tools", "echo"): Pin.of(V1, 1.0)})
    mine = theirs.apply(PinChange(pin={("tools", "echo"): Pin.of(V2, 2.0)}))
    assert mine.pinned[("tools", "echo")].definition == V1
    # ... while warn's re-pin replaces it, and a hold of what is the pin by now is dropped.
    assert (
        theirs.apply(PinChange(repin={("tools", "echo"): Pin.of(V2, 2.0)}))
        .pinned[("tools", "echo")]
        .definition
        == V2
    )
    assert theirs.apply(PinChange(hold={("tools", "echo"): Pin.of(V1, 2.0)})).held == {}
