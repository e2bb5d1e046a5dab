"""External tool names: ``namespace/tool`` mapped to names models and gateways accept.

Outside the runtime a tool name must match ``^[A-Za-z0-9_-]{1,64}$``. The mapping is
deterministic, reversible through a `NameMap`, and collision-free.
"""

from __future__ import annotations

import hashlib
import re
import threading

__all__ = ["EXTERNAL_NAME", "NameMap", "external_name"]

EXTERNAL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_SEPARATOR = "__"
_ILLEGAL = re.compile(r"[^A-Za-z0-9_-]+")
_HASH_LENGTH = 8


def external_name(name: str) -> str:
    """``gh/list_repos`` becomes ``gh__list_repos``; a name that would be illegal or too long
    becomes a legal prefix plus a hash of the whole name."""
    namespace, sep, tool = name.partition("/")
    # The plain form must split back unambiguously at its first "__".
    unambiguous = _SEPARATOR not in namespace and not namespace.endswith("_") and not tool.startswith("_")
    if sep and namespace and unambiguous and not _ILLEGAL.search(namespace + tool):
        plain = f"{namespace}{_SEPARATOR}{tool}"
        if EXTERNAL_NAME.match(plain):
            return plain
    digest = hashlib.sha256(name.encode()).hexdigest()[:_HASH_LENGTH]
    prefix = _ILLEGAL.sub("_", name.replace("/", _SEPARATOR))[: 64 - _HASH_LENGTH - 1].rstrip("_")
    return f"{prefix}_{digest}" if prefix else f"t_{digest}"


class NameMap:
    """Both directions of the mapping for a set of tools. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._to_external: dict[str, str] = {}
        self._to_internal: dict[str, str] = {}

    def add(self, name: str) -> str:
        """Map ``name``; return its external name, unique among the names added."""
        with self._lock:
            if name in self._to_external:
                return self._to_external[name]
            candidate = external_name(name)
            salt = 0
            # Distinct names map to distinct external names, except with the odds of a hash
            # collision, or a plain name that happens to look like another's hashed form.
            while candidate in self._to_internal:
                salt += 1
                candidate = external_name(f"{name}#{salt}")
            self._to_external[name] = candidate
            self._to_internal[candidate] = name
            return candidate

    def internal(self, external: str) -> str | None:
        """The ``namespace/tool`` behind an external name, or None."""
        with self._lock:
            return self._to_internal.get(external)

    def external(self, name: str) -> str | None:
        with self._lock:
            return self._to_external.get(name)
