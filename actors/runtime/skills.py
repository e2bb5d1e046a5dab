"""The skills of the runtime's servers, for a host: `Runtime.skills` and `AsyncRuntime.skills`.

A skill is identified by its origin (the namespace the host gave its server) and its URI, never
by its name alone: two servers may both serve a ``refunds`` skill, and a listing names each
with its origin (`ListedSkill`). Listing reads no file of a skill; loading a skill reads its
``SKILL.md`` and verifies it against the entry; the host then holds the entry (its acting
window) and reads each file under it (`actors.runtime.skill_messages`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field

from actors.mcp.config import ServerConfig
from actors.mcp.skills import Skill, SkillRejected
from actors.pins.book import PinBook
from actors.runtime.skill_messages import SkillRequest
from actors.runtime.skill_pins import SkillPins
from actors.tools import ToolResult

__all__ = ["AsyncSkills", "ListedSkill", "SkillListing", "Skills", "listing_of"]

_MAX_WORKERS = 8
"""Servers asked at once for their skills by a blocking `Skills.list`."""

_Request = Callable[[SkillRequest, str], ToolResult]
"""How a facade sends a request and waits for its answer."""
_AsyncRequest = Callable[[SkillRequest, str], Awaitable[ToolResult]]


@dataclass(frozen=True)
class ListedSkill:
    """A skill as listed, with its origin: what identifies it is ``(origin, skill.uri)``."""

    origin: str
    skill: Skill

    @property
    def label(self) -> str:
        """``origin/<skill-path>``: unique across origins and within one (names are not)."""
        path = self.skill.root.partition("://")[2]
        return f"{self.origin}/{path}"


@dataclass(frozen=True)
class SkillListing:
    """The skills of the servers asked, each with its origin; entries a host may not load and
    servers that could not answer are reported beside them, never dropped silently."""

    skills: tuple[ListedSkill, ...] = ()
    rejected: tuple[tuple[str, Mapping[str, object]], ...] = ()
    """``(origin, {"uri", "fault", "reason"})`` of each entry that breaks the extension's rules."""
    failures: Mapping[str, ToolResult] = field(default_factory=dict)
    """The failed answer of each server that could not list its skills."""
    held: tuple[tuple[str, Mapping[str, object]], ...] = ()
    """``(origin, {"uri", "reason"})`` of each skill held until approved (`actors.runtime.skill_pins`)."""

    def named(self, name: str) -> list[ListedSkill]:
        """Every listed skill called ``name`` (several origins may serve one)."""
        return [s for s in self.skills if s.skill.name == name]


def listing_of(answers: Mapping[str, ToolResult]) -> SkillListing:
    """The listing made of each namespace's answer to `SkillRequest.list`."""
    skills: list[ListedSkill] = []
    rejected: list[tuple[str, Mapping[str, object]]] = []
    held: list[tuple[str, Mapping[str, object]]] = []
    failures: dict[str, ToolResult] = {}
    for origin, answer in sorted(answers.items()):
        if not answer.success or answer.output is None:
            failures[origin] = answer
            continue
        for entry in answer.output.get("skills", ()):
            try:
                skills.append(ListedSkill(origin, Skill.from_json(entry)))
            except SkillRejected as exc:  # checked by the request already; kept for safety
                rejected.append((origin, {"uri": entry.get("uri"), "fault": exc.fault.value}))
        rejected.extend((origin, item) for item in answer.output.get("rejected", ()))
        held.extend((origin, item) for item in answer.output.get("held", ()))
    return SkillListing(tuple(skills), tuple(rejected), failures, tuple(held))


class Skills:
    """The skills surface of a `Runtime` (every method blocks; none raises for a server's
    failure: the `ToolResult` says it, classified). With ``pins``, a skill whose content
    changed since it was approved is held (`actors.runtime.skill_pins`)."""

    def __init__(
        self,
        request: _Request,
        namespaces: Callable[[], Iterable[str]],
        config_of: Callable[[str], ServerConfig | None] | None = None,
        pins: PinBook | None = None,
    ) -> None:
        self._send = request
        self._namespaces = namespaces
        self._pins = SkillPins(pins, config_of) if pins is not None and config_of is not None else None

    def _request(self, request: SkillRequest, name: str) -> ToolResult:
        if self._pins is None:
            return self._send(request, name)
        refused = self._pins.before(request)
        return refused if refused is not None else self._pins.after(request, self._send(request, name))

    def list(self, namespace: str | None = None, timeout: float | None = None) -> SkillListing:
        """The skills of one server, or of every server (asked at once); reads no file."""
        names = [namespace] if namespace is not None else list(self._namespaces())
        asked = {ns: SkillRequest.list(ns, timeout=timeout) for ns in names}
        if len(asked) <= 1:
            return listing_of({ns: self._request(r, f"{ns} skills") for ns, r in asked.items()})
        # One server slow to start holds up no other's answer.
        workers = min(len(asked), _MAX_WORKERS)
        with concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="skills-list") as pool:
            answers = {ns: pool.submit(self._request, r, f"{ns} skills") for ns, r in asked.items()}
            return listing_of({ns: answer.result() for ns, answer in answers.items()})

    def get(self, namespace: str, uri: str, timeout: float | None = None) -> ToolResult:
        """The current entry of the skill at ``uri``: ``output["skill"]``."""
        return self._request(SkillRequest.get(namespace, uri, timeout=timeout), f"{namespace} {uri}")

    def load(self, namespace: str, skill: Skill | str, timeout: float | None = None) -> ToolResult:
        """Load a skill: ``output["text"]``, its verified ``SKILL.md``, and ``output["skill"]``,
        the entry to hold while acting on it."""
        request = SkillRequest.load(namespace, skill, timeout=timeout)
        return self._request(request, f"{namespace} {request.uri}")

    def read(self, namespace: str, skill: Skill, path: str, timeout: float | None = None) -> ToolResult:
        """One file of ``skill`` (held), verified: ``output["text"]`` or ``output["blob"]``."""
        return self._request(
            SkillRequest.read(namespace, skill, path, timeout=timeout), f"{namespace} {path}"
        )

    def directory(self, namespace: str, uri: str, timeout: float | None = None) -> ToolResult:
        """The direct children of a directory: ``output["resources"]``."""
        return self._request(SkillRequest.directory(namespace, uri, timeout=timeout), f"{namespace} {uri}")


class AsyncSkills:
    """`Skills`, awaited (the surface of an `AsyncRuntime`)."""

    def __init__(
        self,
        request: _AsyncRequest,
        namespaces: Callable[[], Iterable[str]],
        pins: Callable[[], SkillPins | None] = lambda: None,
    ) -> None:
        self._send = request
        self._namespaces = namespaces
        self._pins = pins

    async def _request(self, request: SkillRequest, name: str) -> ToolResult:
        pins = self._pins()
        if pins is None:
            return await self._send(request, name)
        refused = pins.before(request)
        return refused if refused is not None else pins.after(request, await self._send(request, name))

    async def list(self, namespace: str | None = None, timeout: float | None = None) -> SkillListing:
        """`Skills.list`, awaited."""
        names = [namespace] if namespace is not None else list(self._namespaces())
        answers = await asyncio.gather(
            *(self._request(SkillRequest.list(ns, timeout=timeout), f"{ns} skills") for ns in names)
        )
        return listing_of(dict(zip(names, answers, strict=True)))

    async def get(self, namespace: str, uri: str, timeout: float | None = None) -> ToolResult:
        """`Skills.get`, awaited."""
        return await self._request(SkillRequest.get(namespace, uri, timeout=timeout), f"{namespace} {uri}")

    async def load(self, namespace: str, skill: Skill | str, timeout: float | None = None) -> ToolResult:
        """`Skills.load`, awaited."""
        request = SkillRequest.load(namespace, skill, timeout=timeout)
        return await self._request(request, f"{namespace} {request.uri}")

    async def read(self, namespace: str, skill: Skill, path: str, timeout: float | None = None) -> ToolResult:
        """`Skills.read`, awaited."""
        request = SkillRequest.read(namespace, skill, path, timeout=timeout)
        return await self._request(request, f"{namespace} {path}")

    async def directory(self, namespace: str, uri: str, timeout: float | None = None) -> ToolResult:
        """`Skills.directory`, awaited."""
        request = SkillRequest.directory(namespace, uri, timeout=timeout)
        return await self._request(request, f"{namespace} {uri}")
