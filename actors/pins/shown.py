"""`Shown`: what a list may show of the servers it covers, leaving out what they hold.

The registry answers every list through it (tools, resource templates, prompts), and so does
the command line's listing from the schema cache: a definition held until approved is never
listed, whoever answers. Pure, apart from asking the book (no I/O).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from actors.mcp.catalog import PromptSpec, ResourceTemplateSpec
from actors.mcp.config import ServerConfig
from actors.pins.book import PinBook
from actors.pins.definitions import PinKind
from actors.pins.model import Ref
from actors.tools import ToolSpec

__all__ = ["Shown"]


class Shown:
    """What a list answer may show of the servers it covers: not what they hold until approved."""

    def __init__(self, pins: PinBook | None, configs: Mapping[str, ServerConfig]) -> None:
        self._hidden: dict[str, frozenset[Ref]] = {}
        if pins is not None:
            self._hidden = {ns: held for ns, config in configs.items() if (held := pins.hidden(config))}

    def _shown(self, kind: PinKind, namespace: str, name: str) -> bool:
        return (kind, name) not in self._hidden.get(namespace, ())

    def tools(self, specs: Iterable[ToolSpec]) -> list[ToolSpec]:
        return [s for s in specs if self._shown("tools", s.namespace, s.tool_name)]

    def templates(self, templates: Iterable[ResourceTemplateSpec]) -> list[ResourceTemplateSpec]:
        return [t for t in templates if self._shown("templates", t.namespace, t.name)]

    def prompts(self, prompts: Iterable[PromptSpec]) -> list[PromptSpec]:
        return sorted((p for p in prompts if self._shown("prompts", p.namespace, p.prompt_name)), key=_name)


def _name(prompt: PromptSpec) -> str:
    return prompt.name
