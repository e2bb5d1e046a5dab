"""Skills held until approved: an approval binds to a skill's content, its manifest's digests.

A skill's entry is pinned the first time it is seen (`actors.pins`, kind ``skills``, named by
its ``SKILL.md`` URI). An entry seen later with another frontmatter or another set of files and
digests is, in the server's ``pin`` mode ``block``, held until ``mcp-actors approve``: it is
left out of listings, and getting, loading or reading it is refused as
`RefusalReason.NOT_APPROVED`, before anything is read. Judged on the thread that asked (a host's
thread, or the gateway's), never the runtime's loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actors.mcp.config import ServerConfig
from actors.mcp.skills import Skill
from actors.pins.book import PinBook
from actors.runtime.skill_messages import SkillAction, SkillRequest
from actors.tools import ErrorType, RefusalReason, ToolResult
from actors.tools.check import Refusal

__all__ = ["SkillPins"]


class SkillPins:
    """The skills part of a runtime's `PinBook`; ``config_of`` names each namespace's server."""

    def __init__(self, pins: PinBook, config_of: Callable[[str], ServerConfig | None]) -> None:
        self._pins = pins
        self._config_of = config_of

    def before(self, request: SkillRequest) -> ToolResult | None:
        """The refusal of a request under an entry whose content is held, or None: a load or a
        read under a changed entry reads nothing."""
        config = self._config_of(request.namespace)
        if config is None or request.skill is None:
            return None
        skill = request.skill
        self._pins.judge(config, "skills", {skill.uri: skill.to_json()}, whole=False)
        return self._refused(config, skill.uri)

    def after(self, request: SkillRequest, result: ToolResult) -> ToolResult:
        """``result`` with what is held taken out: a listing without the held skills (named
        under ``held``), a held skill's entry or ``SKILL.md`` refused."""
        config = self._config_of(request.namespace)
        output = result.output
        if config is None or not result.success or output is None:
            return result
        if request.action is SkillAction.LIST:
            entries = list(output.get("skills", ()))
            self._pins.judge(config, "skills", {e["uri"]: e for e in entries})
            hidden = self._pins.hidden(config)
            shown = [e for e in entries if ("skills", e["uri"]) not in hidden]
            held = [
                {"uri": e["uri"], "reason": "changed since it was approved"}
                for e in entries
                if e not in shown
            ]
            return result.model_copy(update={"output": {**output, "skills": shown, "held": held}})
        entry: Any = output.get("skill")
        if request.action in (SkillAction.GET, SkillAction.LOAD) and isinstance(entry, dict):
            uri = Skill.from_json(entry).uri
            self._pins.judge(config, "skills", {uri: entry}, whole=False)
            refused = self._refused(config, uri)
            if refused is not None:
                return refused
        return result

    def _refused(self, config: ServerConfig, uri: str) -> ToolResult | None:
        if ("skills", uri) not in self._pins.hidden(config):
            return None
        why = (
            f"the skill {uri} of {config.name!r} changed since it was approved and is not offered "
            f"until approved again (mcp-actors approve {config.name} {uri})"
        )
        return Refusal(ErrorType.NOT_FOUND, RefusalReason.NOT_APPROVED, why).result()
