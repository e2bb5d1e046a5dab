"""`AgentTool`: a tool as an agent framework declares it to a model (the runtime's, a skill's).

Pure data: no I/O, no threads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from actors.tools import ToolSpec

__all__ = ["AgentTool"]


@dataclass(frozen=True, slots=True)
class AgentTool:
    """A tool as a framework declares it to a model."""

    name: str
    """The external name: ``namespace__tool`` (legal, at most 64 characters); a skill tool's
    own name (``load_skill``, ``read_skill_file``: `actors.agents.skills`)."""
    tool: str
    """The runtime's name: ``namespace/tool``; a skill tool's own name."""
    description: str
    input_schema: Mapping[str, Any]
    """The server's JSON Schema, as it gave it (2020-12, ``$defs`` and all)."""
    output_schema: Mapping[str, Any] | None = None
    read_only: bool = False
    spec: ToolSpec | None = field(default=None, compare=False, repr=False)
    """The runtime's spec (None for a skill tool, which no server declares)."""
