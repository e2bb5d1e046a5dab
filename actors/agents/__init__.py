"""mcp-actors in the agent frameworks hosts are built on.

`Toolbox` and `ToolAnswer` are the framework-neutral seam: the runtime's tools under legal,
reversible names, and a call's result as parts. One module per framework maps them onto that
framework's own extension point; each imports its framework, so import the one you use
(``from actors.agents.langchain import ...``). ``import actors.agents`` loads none of them.
`SkillTools` gives the servers' skills as two more tools (``Toolbox(rt, skills=True)``).
"""

from __future__ import annotations

from actors.agents.answers import (
    AudioPart,
    ImagePart,
    LinkPart,
    Part,
    ResourcePart,
    TextPart,
    ToolAnswer,
)
from actors.agents.skills import SkillTools
from actors.agents.toolbox import AgentTool, Toolbox

__all__ = [
    "AgentTool",
    "AudioPart",
    "ImagePart",
    "LinkPart",
    "Part",
    "ResourcePart",
    "SkillTools",
    "TextPart",
    "ToolAnswer",
    "Toolbox",
]
