"""`BuiltinAdapter`: the 11 built-in tools (file, git, plan) as one namespace of tools.

It follows the adapter pattern of the MCP adapter (discover, register, activate, deactivate),
though built-in tools need no connection: activation and deactivation do nothing.
"""

from __future__ import annotations

import logging
from pathlib import Path

from actors.builtin.definition import BuiltinContext, BuiltinTool
from actors.builtin.file_tools import FILE_TOOLS
from actors.builtin.git import DEFAULT_GIT_TIMEOUT, GitRepository
from actors.builtin.git_tools import GIT_TOOLS
from actors.builtin.plan_tools import PLAN_TOOLS
from actors.builtin.plans import PlanStore
from actors.builtin.workspace import DEFAULT_MAX_READ_BYTES, Workspace
from actors.tools import ToolError, ToolRegistry, ToolSpec

__all__ = ["BUILTIN_TOOLS", "BuiltinAdapter"]

logger = logging.getLogger(__name__)

BUILTIN_TOOLS: tuple[BuiltinTool, ...] = (*FILE_TOOLS, *GIT_TOOLS, *PLAN_TOOLS)
"""Every built-in tool's declaration, in the order they are discovered."""


class BuiltinAdapter:
    """The built-in tools, confined to one workspace folder."""

    namespace = "builtin"

    def __init__(
        self,
        workspace: str | Path,
        *,
        max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
        git_timeout: float = DEFAULT_GIT_TIMEOUT,
    ) -> None:
        """Raises ``ValueError`` when ``workspace`` is not a directory."""
        self.workspace = Workspace(workspace, max_read_bytes=max_read_bytes)
        self.context = BuiltinContext(
            workspace=self.workspace,
            git=GitRepository(self.workspace, timeout=git_timeout),
            plans=PlanStore(self.workspace),
        )
        self._specs: list[ToolSpec] | None = None

    @property
    def discovered(self) -> bool:
        """Whether `discover` has run."""
        return self._specs is not None

    def discover(self) -> list[ToolSpec]:
        """The specs of the 11 built-in tools, namespaced ``builtin/``."""
        if self._specs is None:
            self._specs = [tool.spec(self.namespace, self.context) for tool in BUILTIN_TOOLS]
            logger.debug("discovered %d built-in tools in %s", len(self._specs), self.workspace.root)
        return list(self._specs)

    def register(self, registry: ToolRegistry) -> list[ToolSpec]:
        """Register every built-in tool, or none: a name already taken raises `ToolError`."""
        specs = self.discover()
        registered: list[ToolSpec] = []
        try:
            for spec in specs:
                registry.register(spec)
                registered.append(spec)
        except ToolError:
            for spec in registered:
                registry.remove(spec.name)
            raise
        return specs

    def activate(self) -> None:
        """Nothing to start: built-in tools run in-process."""

    def deactivate(self) -> None:
        """Nothing to stop."""
