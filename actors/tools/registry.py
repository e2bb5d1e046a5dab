"""`ToolRegistry`: the thread-safe table of tools by namespaced name."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from actors.tools.errors import ToolError
from actors.tools.spec import ToolSpec

__all__ = ["ToolRegistry"]


class ToolRegistry:
    """Tools by name. Safe to use from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tools: dict[str, ToolSpec] = {}

    def register(self, spec: ToolSpec) -> None:
        """Add a tool; a name that is taken raises `ToolError` ``RegistrationError``."""
        with self._lock:
            if spec.name in self._tools:
                raise ToolError(spec.name, "RegistrationError", "a tool with this name is registered")
            self._tools[spec.name] = spec

    def get(self, name: str) -> ToolSpec | None:
        with self._lock:
            return self._tools.get(name)

    def list(self, namespace: str | None = None, tool_type: str | None = None) -> list[ToolSpec]:
        """Tools sorted by name, optionally only those of one namespace or tool type."""
        with self._lock:
            tools = list(self._tools.values())
        return sorted(
            (
                t
                for t in tools
                if (namespace is None or t.namespace == namespace)
                and (tool_type is None or t.tool_type == tool_type)
            ),
            key=lambda t: t.name,
        )

    def remove(self, name: str) -> bool:
        """Remove a tool; false when there was none."""
        with self._lock:
            return self._tools.pop(name, None) is not None

    def replace_namespace(self, namespace: str, specs: Iterable[ToolSpec]) -> None:
        """Make ``specs`` the whole of ``namespace`` in one step: readers never see a mix."""
        new = list(specs)
        for spec in new:
            if spec.namespace != namespace:
                raise ToolError(spec.name, "RegistrationError", f"not in namespace {namespace!r}")
        names = [s.name for s in new]
        if len(set(names)) != len(names):
            raise ToolError(namespace, "RegistrationError", "duplicate tool names in one namespace")
        with self._lock:
            for name in [n for n, t in self._tools.items() if t.namespace == namespace]:
                del self._tools[name]
            self._tools.update((s.name, s) for s in new)

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._tools

    def __len__(self) -> int:
        with self._lock:
            return len(self._tools)
