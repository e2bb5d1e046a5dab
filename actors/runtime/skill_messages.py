"""The skills requests of the message API (the Skills extension, `actors.mcp.skills`).

One message, `SkillRequest`, made by its constructors: `list` a server's skills (entries only,
nothing read), `get` one entry, `load` a skill (its ``SKILL.md`` read and verified against its
entry), `read` one file of a skill the host holds the entry of, `directory` to read a
directory's children. Each goes to the server actor of its namespace like a call (the server
starts lazily for it) and is answered with a `ToolResult`: its ``output`` is JSON
(`actors.mcp.skill_requests`); a skill or file that fails verification is a ``validation``
failure whose `skill_fault` says why.
"""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass, field
from typing import Any

from actors.mcp.skill_requests import SkillAction
from actors.mcp.skills import SKILL_FAULT, Skill, SkillFault
from actors.runtime.telemetry import current_context
from actors.tools import ErrorType, RefusalReason, ToolResult
from actors.tools.check import Refusal, check_timeout

__all__ = ["SKILL_FAULT", "SkillAction", "SkillRequest", "skill_fault"]


def _slot() -> concurrent.futures.Future[ToolResult]:
    return concurrent.futures.Future()


@dataclass(frozen=True, eq=False)
class SkillRequest:
    """A request about the skills of server ``namespace``; build it with a constructor."""

    namespace: str
    action: SkillAction
    uri: str = ""
    """The skill's ``SKILL.md`` URI (``get``, ``load``), a file's URI or path relative to the
    skill (``read``), a directory's URI (``directory``)."""
    skill: Skill | None = None
    """The entry the host holds (``read``; ``load`` from a listed entry)."""
    timeout: float | None = None
    trace_context: Any = field(default_factory=current_context, repr=False, compare=False)
    reply: concurrent.futures.Future[ToolResult] = field(default_factory=_slot, repr=False)

    @classmethod
    def list(cls, namespace: str, *, timeout: float | None = None) -> SkillRequest:
        """Every skill ``namespace`` lists: ``{"skills": [entry...], "rejected": [...]}``."""
        return cls(namespace, SkillAction.LIST, timeout=timeout)

    @classmethod
    def get(cls, namespace: str, uri: str, *, timeout: float | None = None) -> SkillRequest:
        """The entry of the skill at ``uri``: ``{"skill": entry}``."""
        return cls(namespace, SkillAction.GET, uri, timeout=timeout)

    @classmethod
    def load(cls, namespace: str, skill: Skill | str, *, timeout: float | None = None) -> SkillRequest:
        """Load a skill (a held entry, or its URI: its entry is asked for first):
        ``{"skill": entry, "text": its SKILL.md}``, verified."""
        if isinstance(skill, Skill):
            return cls(namespace, SkillAction.LOAD, skill.uri, skill, timeout=timeout)
        return cls(namespace, SkillAction.LOAD, skill, timeout=timeout)

    @classmethod
    def read(cls, namespace: str, skill: Skill, path: str, *, timeout: float | None = None) -> SkillRequest:
        """One file of ``skill`` (a URI, or relative to its root), only if the entry lists it:
        ``{"uri", "text" | "blob"}``, verified."""
        return cls(namespace, SkillAction.READ, path, skill, timeout=timeout)

    @classmethod
    def directory(cls, namespace: str, uri: str, *, timeout: float | None = None) -> SkillRequest:
        """The direct children of the directory ``uri``: ``{"uri", "resources": [...]}``."""
        return cls(namespace, SkillAction.DIRECTORY, uri, timeout=timeout)

    @property
    def target(self) -> str:
        return self.uri or self.namespace

    def refusal(self, max_argument_bytes: int | None = None) -> Refusal | None:
        """Why this request must not be sent, classified, or None."""
        if not isinstance(self.action, SkillAction):
            return _malformed(f"{self.action!r} is not a skills request")
        if self.action is not SkillAction.LIST and (not isinstance(self.uri, str) or not self.uri):
            return _malformed(f"skills/{self.action.value} needs a uri, not {self.uri!r}")
        if self.action is SkillAction.READ and not isinstance(self.skill, Skill):
            return _malformed("a skill's file is read under the skill's entry (load it first)")
        return check_timeout(self.timeout)

    def problem(self, max_argument_bytes: int | None = None) -> str | None:
        """The message of `refusal`, or None."""
        refused = self.refusal(max_argument_bytes)
        return None if refused is None else refused.message


def skill_fault(result: ToolResult) -> SkillFault | None:
    """Why a skills request's result was not used (a verification failure), or None."""
    fault = result.metadata.get(SKILL_FAULT)
    return SkillFault(fault) if isinstance(fault, str) and fault in set(SkillFault) else None


def _malformed(why: str) -> Refusal:
    return Refusal(ErrorType.VALIDATION, RefusalReason.MALFORMED, why)
