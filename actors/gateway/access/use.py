"""`Use`: what one request would use, as every access decision (policy, limits, audit) sees it.

A request acts (`CedarAction`) on one thing a server offers: a tool, a prompt, a resource, a resource
template (a URI served by a template counts as that template), or on the gateway itself (its
operator page). The gateway's handlers build a `Use` once they know which server serves the
request, and hand it to the `AccessGate` (`actors.gateway.access.gate`).

Immutable values: built on the gateway's loop, read on any thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

__all__ = ["GATEWAY", "CedarAction", "EntityType", "Use"]

GATEWAY = "gateway"
"""The id of the one `EntityType.GATEWAY` entity (``Gateway::"gateway"``)."""


class CedarAction(StrEnum):
    """What a request does: Cedar's ``Action::"<value>"``."""

    CALL = "call"
    """``tools/call`` (directly, or through the ``call_tool`` meta-tool)."""
    READ = "read"
    """``resources/read``."""
    SUBSCRIBE = "subscribe"
    """``resources/subscribe``, or a resource named in a ``subscriptions/listen`` stream."""
    GET = "get"
    """``prompts/get``."""
    COMPLETE = "complete"
    """``completion/complete`` of a prompt's or a resource template's argument."""
    ADMIN = "admin"
    """The operator's page."""


class EntityType(StrEnum):
    """What a request acts on: Cedar's entity type."""

    TOOL = "Tool"
    PROMPT = "Prompt"
    RESOURCE = "Resource"
    TEMPLATE = "Template"
    GATEWAY = "Gateway"

    @property
    def seen_by(self) -> CedarAction:
        """The action whose permission makes a thing of this kind visible: what a principal may
        not use, they do not see."""
        return _SEEN_BY[self]


_SEEN_BY = {
    EntityType.TOOL: CedarAction.CALL,
    EntityType.PROMPT: CedarAction.GET,
    EntityType.RESOURCE: CedarAction.READ,
    EntityType.TEMPLATE: CedarAction.READ,
    EntityType.GATEWAY: CedarAction.ADMIN,
}

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Use:
    """One request's action on one thing of one server.

    ``name``: a tool's or prompt's name without its server, a resource's URI, a template's URI
    template. ``uri``: the URI a read or subscription names (for a template, the concrete one).
    ``arguments``: a tool call's or a prompt's arguments, as the client sent them.
    """

    action: CedarAction
    kind: EntityType
    server: str
    name: str
    uri: str | None = None
    arguments: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)

    @property
    def entity_id(self) -> str:
        """The id of the Cedar entity it acts on: ``ns/name`` for tools and prompts, the URI
        (template) for resources (templates)."""
        if self.kind in (EntityType.TOOL, EntityType.PROMPT):
            return f"{self.server}/{self.name}"
        return self.name

    def seeing(self) -> Use:
        """The use whose permission makes this one's target visible (itself for a call, a read,
        a prompt; a read for a subscription or a template's completion)."""
        action = self.kind.seen_by
        return self if action is self.action else Use(action, self.kind, self.server, self.name)

    @classmethod
    def call(cls, server: str, tool: str, arguments: Mapping[str, Any] | None = None) -> Use:
        return cls(CedarAction.CALL, EntityType.TOOL, server, tool, arguments=_frozen(arguments))

    @classmethod
    def prompt(cls, server: str, prompt: str, arguments: Mapping[str, Any] | None = None) -> Use:
        return cls(CedarAction.GET, EntityType.PROMPT, server, prompt, arguments=_frozen(arguments))

    @classmethod
    def read(
        cls, server: str, uri: str, template: str | None = None, action: CedarAction = CedarAction.READ
    ) -> Use:
        """A read (or, with ``action``, a subscription) of ``uri``: of the resource itself, or
        of the ``template`` that serves it."""
        if template is None:
            return cls(action, EntityType.RESOURCE, server, uri, uri=uri)
        return cls(action, EntityType.TEMPLATE, server, template, uri=uri)

    @classmethod
    def listed_template(cls, server: str, template: str) -> Use:
        """A template as a list shows it: readable for some URIs, which is all visibility asks."""
        return cls(CedarAction.READ, EntityType.TEMPLATE, server, template)

    def completing(self) -> Use:
        """The completion of an argument of this prompt or template."""
        return Use(CedarAction.COMPLETE, self.kind, self.server, self.name, uri=self.uri)

    @classmethod
    def admin(cls) -> Use:
        """The operator's page."""
        return cls(CedarAction.ADMIN, EntityType.GATEWAY, "", GATEWAY)


def _frozen(arguments: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(arguments)) if arguments else _EMPTY
