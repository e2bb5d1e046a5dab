"""`lazy_exports`: a package's public names, imported where they are first used (PEP 562).

A bare ``import actors`` then costs little, and a name's module is imported on the thread that
first reads the name (the caller's), never on the event loop's or an actor's.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, names: Iterable[str], homes: Mapping[str, str], default: str
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: each of ``names`` comes from its module
    in ``homes`` (else ``default``), imported on first use and then kept in the package."""
    public = frozenset(names)

    def getattr_(name: str) -> Any:
        if name not in public:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(homes.get(name, default)), name)
        setattr(sys.modules[package], name, value)
        return value

    def dir_() -> list[str]:
        return sorted({*vars(sys.modules[package]), *public})

    return getattr_, dir_
