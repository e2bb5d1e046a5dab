"""Answers to a server's ``elicitation/create`` requests, by policy.

A runtime has no user of its own to ask, so a server that elicits gets a policy's answer
instead: ``decline``, or ``accept-defaults``, which accepts with each field's schema default
(SEP-1034) and declines when a required field has none. ``ask`` hands the request to the host's
handler (`actors.mcp.transport.ClientHandlers`); with no handler there is nobody to ask, and it
declines. Without a policy the client does not declare the elicitation capability, and servers
do not elicit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

__all__ = ["ElicitationPolicy", "answer"]

ElicitationPolicy = Literal["decline", "accept-defaults", "ask"]


def answer(policy: ElicitationPolicy, mode: str, schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``ElicitResult`` (as JSON) for a request in ``mode`` (``form`` or ``url``) with ``schema``."""
    if policy != "accept-defaults" or mode != "form" or schema is None:
        return {"action": "decline"}
    properties = schema.get("properties") or {}
    content = {
        name: spec["default"]
        for name, spec in properties.items()
        if isinstance(spec, Mapping) and "default" in spec
    }
    if any(name not in content for name in schema.get("required") or ()):
        return {"action": "decline"}
    return {"action": "accept", "content": content}
