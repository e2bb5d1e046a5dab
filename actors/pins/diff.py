"""What changed between two definitions, for people: which properties, the old and new values.

`changed_properties` names the top-level properties that differ (``description``,
``annotations``): what a log line and an audit record say. `property_changes` goes down into
objects and gives one `PropertyChange` per leaf that differs (``annotations.readOnlyHint: true
-> false``): what ``mcp-actors pins check`` and ``approve`` print. Lists are compared whole.
Pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["ABSENT", "PropertyChange", "changed_properties", "property_changes"]


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()
"""The value of a property one side does not have."""


@dataclass(frozen=True, slots=True)
class PropertyChange:
    """One property that differs: its dotted ``path``, its ``old`` and ``new`` value (`ABSENT`
    where a side lacks it)."""

    path: str
    old: Any
    new: Any

    def line(self, width: int = 200) -> str:
        """``path: old -> new``, each value as compact JSON cut to ``width`` characters."""
        return f"{self.path}: {_shown(self.old, width)} -> {_shown(self.new, width)}"


def _shown(value: Any, width: int) -> str:
    if value is ABSENT:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=repr)
    return text if len(text) <= width else text[: width - 1] + "…"


def changed_properties(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[str, ...]:
    """The top-level properties whose values differ (added and removed ones too), sorted."""
    keys = old.keys() | new.keys()
    return tuple(sorted(key for key in keys if property_changes(old.get(key, ABSENT), new.get(key, ABSENT))))


def property_changes(old: Any, new: Any, path: str = "") -> list[PropertyChange]:
    """Each leaf that differs between ``old`` and ``new``, in path order."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        found: list[PropertyChange] = []
        for key in sorted(old.keys() | new.keys(), key=str):
            inner = f"{path}.{key}" if path else str(key)
            found += property_changes(old.get(key, ABSENT), new.get(key, ABSENT), inner)
        return found
    if old == new and type(old) is type(new):
        return []
    return [PropertyChange(path or "(definition)", old, new)]
