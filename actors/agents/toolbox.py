"""`Toolbox`: the tools of an `AsyncRuntime` under names an agent framework accepts.

The one seam every adapter of `actors.agents` stands on. It lists the runtime's tools (from the
schema cache where a server has run before: listing starts no server that the cache knows) and
calls them by their external names, ``namespace__tool`` (`actors.mcp.names`: legal for every
model API, at most 64 characters, reversible, collision-free). Calls go through the runtime as
every call does: the server starts lazily, is idle-stopped, supervised and restarted; the
arguments meet the one check before anything is sent.

A framework asks for the tools once per turn (or per run): `tools` lists afresh each time, so a
server's list change reaches the model on its next turn. A listing that fails (the runtime was
shut down during a run, or gave no answer in time) gives the tools last listed, so every adapter
goes on answering the model (each call then fails as a result, ``cancelled`` after a shutdown)
and nothing raises in the host; only a first listing that fails raises the runtime's `ToolError`.

Listing starts the servers it lists that the schema cache does not know (all of them, the first
time, without a cache): a call starts only its own. ``namespaces`` keeps the others out.

With ``skills=True`` it also declares and runs the servers' skills as two tools,
``load_skill`` and ``read_skill_file`` (`actors.agents.skills`, whose `SkillTools` it holds);
their first declaration lists the skills, which starts every server of ``namespaces``.

Owner: the host's event loop. The name map is thread-safe; the last listing is replaced whole,
on the host's loop.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from typing import Any

from actors.agents.answers import ToolAnswer
from actors.agents.declared import AgentTool
from actors.agents.skills import SkillTools
from actors.mcp.names import NameMap
from actors.runtime.async_facade import AsyncProgress, AsyncRuntime
from actors.runtime.messages import OnProgress
from actors.tools import ErrorType, ToolError, ToolResult, ToolSpec

__all__ = ["AgentTool", "Toolbox"]

logger = logging.getLogger(__name__)


class Toolbox:
    """The runtime's tools for a framework: `tools` to declare them, `call` to run one.

    ``namespaces`` limits the tools to those servers (None: every server, the built-in tools
    included); ``timeout`` is each call's (None: the server's ``callTimeout``). ``skills``: offer
    those servers' skills too (`SkillTools`, then ``self.skills``).
    """

    @classmethod
    def of(
        cls,
        source: AsyncRuntime | Toolbox,
        namespaces: Collection[str] | None = None,
        timeout: float | None = None,
        skills: bool = False,
    ) -> Toolbox:
        """A toolbox over ``source``: a runtime's (``namespaces``, ``timeout`` and ``skills`` as
        given), or the toolbox itself, which has its own (giving them again is a `TypeError`). How
        every adapter takes either."""
        if isinstance(source, Toolbox):
            if namespaces is not None or timeout is not None or (skills and source.skills is None):
                raise TypeError(
                    "namespaces, timeout and skills are the Toolbox's own: pass them to Toolbox()"
                )
            return source
        return cls(source, namespaces=namespaces, timeout=timeout, skills=skills)

    def __init__(
        self,
        runtime: AsyncRuntime,
        *,
        namespaces: Collection[str] | None = None,
        timeout: float | None = None,
        list_timeout: float = 60.0,
        skills: bool = False,
    ) -> None:
        self.runtime = runtime
        self.namespaces = frozenset(namespaces) if namespaces is not None else None
        self.timeout = timeout
        self.list_timeout = list_timeout
        self.skills = (
            SkillTools(runtime, namespaces=namespaces, timeout=timeout, list_timeout=list_timeout)
            if skills
            else None
        )
        self._names = NameMap()
        self._last: tuple[AgentTool, ...] | None = None

    async def tools(self) -> tuple[AgentTool, ...]:
        """The tools now, listed afresh (a list change shows on the next call); the tools last
        listed if the listing fails (a `ToolError`, raised when none were listed before). The
        skill tools, if offered, come last."""
        extra = await self.skills.tools() if self.skills is not None else ()
        try:
            if self.namespaces is None:
                specs = await self.runtime.list_tools(timeout=self.list_timeout)
            else:
                # One namespace at a time: listing them all would start every other server the
                # schema cache does not know, for tools this toolbox never offers.
                specs = [
                    spec
                    for namespace in sorted(self.namespaces)
                    for spec in await self.runtime.list_tools(namespace, timeout=self.list_timeout)
                ]
        except ToolError as exc:
            if self._last is None:
                raise
            logger.warning("agents: could not list the tools (%s); offering the last listed", exc)
            return (*self._last, *extra)
        self._last = tuple(self.declared(spec) for spec in specs if self.admits(spec.namespace))
        return (*self._last, *extra)

    def declared(self, spec: ToolSpec) -> AgentTool:
        """``spec`` under its external name."""
        return AgentTool(
            name=self._names.add(spec.name),
            tool=spec.name,
            description=spec.description,
            input_schema=spec.input_schema,
            output_schema=spec.output_schema,
            read_only=spec.capabilities.read_only,
            spec=spec,
        )

    def internal(self, name: str) -> str | None:
        """The ``namespace/tool`` of an external name this toolbox gave out (a skill tool's own
        name for a skill tool), or None."""
        if self.skills is not None and self.skills.handles(name):
            return name
        return self._names.internal(name)

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        progress: OnProgress | AsyncProgress | None = None,
        timeout: float | None = None,
    ) -> ToolAnswer:
        """Call the tool of external name ``name``; a failure is an answer, never an exception
        (a name this toolbox never gave out is ``not_found``; bad arguments ``validation``)."""
        if self.skills is not None and self.skills.handles(name):
            return await self.skills.call(name, arguments, timeout=timeout)
        tool = self._names.internal(name)
        if tool is None or not self.admits(tool.partition("/")[0]):
            result = ToolResult.fail(ErrorType.NOT_FOUND, f"there is no tool named {name!r}")
        else:
            result = await self.runtime.call_tool(
                tool, arguments, self.timeout if timeout is None else timeout, progress=progress
            )
        if not result.success:
            logger.debug("agents: %s failed (%s): %s", name, result.error_type, result.error)
        return ToolAnswer.of(result)

    def admits(self, namespace: str) -> bool:
        """Whether this toolbox offers the tools of server ``namespace``."""
        return self.namespaces is None or namespace in self.namespaces
