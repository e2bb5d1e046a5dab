"""Elicitation policies: decline, or accept with the schema's defaults (SEP-1034)."""

from __future__ import annotations

from actors.mcp.elicitation import answer

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "verified": {"type": "boolean", "default": True},
        "note": {"type": "string"},
    },
}


def test_accept_defaults_fills_every_field_that_has_a_default() -> None:
    assert answer("accept-defaults", "form", SCHEMA) == {
        "action": "accept",
        "content": {"name": "John Doe", "age": 30, "verified": True},
    }


def test_a_required_field_without_a_default_is_declined() -> None:
    assert answer("accept-defaults", "form", {**SCHEMA, "required": ["note"]}) == {"action": "decline"}


def test_decline_and_url_mode_decline() -> None:
    assert answer("decline", "form", SCHEMA) == {"action": "decline"}
    assert answer("accept-defaults", "url", None) == {"action": "decline"}
