"""Skills through the gateway (the Skills extension, SEP-2640): every backend's, namespaced.

The gateway declares ``io.modelcontextprotocol/skills`` (with ``directoryRead``) and answers
``skills/list``, ``skills/get`` and ``resources/directory/read`` from its backends' skills, each
under its namespace (`actors.gateway.skill_uris`). Their files are read with ``resources/read``
(`actors.gateway.resources`). A skill is behind the policy gate as a read of its ``SKILL.md``
is. Its entry is pinned: a skill whose frontmatter or files changed since it was approved is
held, as a changed tool definition is: left out of the list, refused by ``skills/get``, its
files unread (`actors.runtime.skill_pins`), until ``mcp-actors approve``. The backends'
entries are relayed unchanged but for their URIs: digests bind content end to end.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection
from typing import Any, Final

import anyio.to_thread
import mcp_types as types
from mcp.shared.exceptions import MCPError

from actors.gateway.access.gate import AccessGate
from actors.gateway.access.principal import principal_of
from actors.gateway.access.use import Use
from actors.gateway.conversion import protocol_error
from actors.gateway.hints import OWN_VIEW, CacheHints
from actors.gateway.routing import RuntimeRequests
from actors.gateway.skill_uris import inward, outward, outward_entry
from actors.mcp.skill_requests import SkillAction
from actors.mcp.skills import EXTENSION
from actors.runtime.facade import Runtime
from actors.runtime.skill_messages import SkillRequest
from actors.runtime.skill_pins import SkillPins
from actors.tools import ErrorType, ToolResult

__all__ = ["DECLARED", "DirectoryParams", "GatewaySkills", "SkillParams"]

logger = logging.getLogger(__name__)

DECLARED: Final = {EXTENSION: {"directoryRead": True}}
"""What the gateway declares of the extension."""

_JUDGED: Final = frozenset({SkillAction.LIST, SkillAction.GET, SkillAction.LOAD})
"""What `SkillPins.after` judges: the answers that carry entries."""


class SkillParams(types.RequestParams):
    """The params of ``skills/get``."""

    uri: str


class DirectoryParams(types.PaginatedRequestParams):
    """The params of ``resources/directory/read``."""

    uri: str


class GatewaySkills:
    """The gateway's skills handlers. Run on the gateway's loop and hold no state: the pins are
    judged on a worker thread (their digests cost CPU)."""

    def __init__(
        self,
        requests: RuntimeRequests,
        gate: AccessGate,
        cache_hints: CacheHints,
        namespaces: Callable[[], Collection[str]],
        runtime: Runtime,
    ) -> None:
        self._requests = requests
        self._gate = gate
        self._hints = cache_hints
        self._namespaces = namespaces
        self._pins = SkillPins(runtime.pins, runtime.dispatch.config)

    async def list_skills(self, ctx: Any, params: Any) -> dict[str, Any]:
        """Every backend's skills that the caller may read and that are not held. A backend that
        cannot answer is left out (and logged): the others' skills are listed all the same."""
        self._requests.seen(ctx)
        namespaces = sorted(self._namespaces())
        answers = await asyncio.gather(*(self._ask(ctx, SkillRequest.list(ns)) for ns in namespaces))
        found: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        for namespace, answer in zip(namespaces, answers, strict=True):
            if not answer.success or answer.output is None:
                logger.warning("gateway: the skills of %s are not listed: %s", namespace, answer.error)
                continue
            for entry in answer.output.get("skills", ()):
                relayed = outward_entry(namespace, entry)
                if relayed is not None:
                    found.append((namespace, entry, relayed))
        # Decided by the gateway's URI, never the backend's: two backends may both serve it.
        shown = await self._gate.visible(principal_of(ctx), found, lambda f: Use.read(f[0], f[2]["uri"]))
        return {"skills": [relayed for _, _, relayed in shown], **self._fields(ctx)}

    async def get_skill(self, ctx: Any, params: SkillParams) -> dict[str, Any]:
        namespace, uri = self._located(params.uri)
        await self._admitted(ctx, namespace, params.uri)
        answer = await self._ask(ctx, SkillRequest.get(namespace, uri))
        if not answer.success or answer.output is None:
            # A skill held until approved says so, as a held tool does; an unknown one is unknown.
            unknown = answer.error_type == ErrorType.NOT_FOUND and answer.refusal is None
            raise _unserved(params.uri) if unknown else protocol_error(answer)
        relayed = outward_entry(namespace, answer.output["skill"])
        if relayed is None:
            raise _unserved(params.uri)
        return {"skill": relayed, **self._fields(ctx)}

    async def read_directory(self, ctx: Any, params: DirectoryParams) -> dict[str, Any]:
        namespace, uri = self._located(params.uri)
        await self._admitted(ctx, namespace, params.uri)
        answer = await self._ask(ctx, SkillRequest.directory(namespace, uri))
        if not answer.success or answer.output is None:
            raise protocol_error(answer)
        children = []
        for child in answer.output.get("resources", ()):
            relayed = outward(namespace, str(child.get("uri", "")))
            if relayed is not None:
                children.append({**child, "uri": relayed})
        return {"resources": children}

    async def _ask(self, ctx: Any, request: SkillRequest) -> ToolResult:
        answer = await self._requests.request(ctx, request.namespace, request)
        if request.action not in _JUDGED:
            return answer  # the pins judge entries; a directory read has none
        # Off the loop: judging reads and writes the pin store.
        return await anyio.to_thread.run_sync(self._pins.after, request, answer)

    def _located(self, uri: str) -> tuple[str, str]:
        located = inward(uri, self._namespaces())
        if located is None:
            raise _unserved(uri)
        return located

    async def _admitted(self, ctx: Any, namespace: str, asked: str) -> None:
        """A caller the policy does not let read the skill is told no such skill is served."""
        admission = await self._gate.admit(principal_of(ctx), Use.read(namespace, asked))
        if not admission.allowed:
            raise _unserved(asked)

    def _fields(self, ctx: Any) -> dict[str, Any]:
        """``ttlMs`` and ``cacheScope`` (2026-07-28): a view of the gateway's own, never cached."""
        fields = self._hints.of(ctx, OWN_VIEW)
        return {"ttlMs": fields["ttl_ms"], "cacheScope": fields["cache_scope"]} if fields else {}


def _unserved(uri: str) -> MCPError:
    return MCPError(types.INVALID_PARAMS, f"No skill is served at {uri}")
