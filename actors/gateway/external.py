"""`ExternalNames`: the names a gateway's clients see for ``namespace/name`` tools and prompts.

By default ``gh/list_repos`` is ``gh__list_repos`` (`actors.mcp.names`: legal, reversible,
collision-free); a server configured with ``"prefix": false`` keeps its own names. Two
unprefixed servers offering the same name are a configuration error naming both.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping

from actors.config import ConfigError
from actors.mcp.config import ConfigProblem
from actors.mcp.names import EXTERNAL_NAME, NameMap

__all__ = ["ExternalNames", "NameCollision"]

logger = logging.getLogger(__name__)


class NameCollision(ConfigError):
    """Two servers with ``"prefix": false`` offer the same name."""


class ExternalNames:
    """Both directions of the mapping for one gateway. Thread-safe."""

    def __init__(self, unprefixed: Iterable[str] = ()) -> None:
        self._unprefixed = frozenset(unprefixed)
        self._prefixed = NameMap()
        self._lock = threading.Lock()
        self._plain: dict[str, str] = {}
        """External name → ``namespace/name`` for unprefixed servers."""

    def check(self, names_by_namespace: Mapping[str, Iterable[str]]) -> None:
        """Raise `NameCollision` if two unprefixed servers share a name (``names``: bare names)."""
        owner: dict[str, str] = {}
        problems = []
        for ns in sorted(names_by_namespace):
            if ns not in self._unprefixed:
                continue
            for name in names_by_namespace[ns]:
                if name in owner and owner[name] != ns:
                    problems.append(
                        ConfigProblem(
                            server=ns,
                            key="prefix",
                            message=f"{name!r} is offered by both {owner[name]!r} and {ns!r} "
                            'without a prefix; set "prefix": true on one of them',
                        )
                    )
                owner.setdefault(name, ns)
        if problems:
            raise NameCollision(problems)

    def external(self, name: str) -> str:
        """The external name of ``namespace/name``."""
        namespace, _, bare = name.partition("/")
        if namespace in self._unprefixed and EXTERNAL_NAME.match(bare):
            with self._lock:
                taken = self._plain.get(bare)
                if taken is None or taken == name:
                    self._plain[bare] = name
                    return bare
            logger.warning("gateway: %r is taken by %r; %r keeps its prefix", bare, taken, name)
        return self._prefixed.add(name)

    def internal(self, external: str) -> str | None:
        """The ``namespace/name`` behind an external name, or None if it was never handed out."""
        with self._lock:
            plain = self._plain.get(external)
        return plain if plain is not None else self._prefixed.internal(external)
