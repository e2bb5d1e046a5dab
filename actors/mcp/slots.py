"""`infer_resource_slots`: resource slots of an MCP tool, guessed from its input schema.

MCP tools declare no resources, but their parameter names usually say what they touch: a
``file_path`` names a file, a ``directory`` a folder, a ``repo_path`` a git checkout. One slot
is inferred per kind, bound to the first matching property in the order of preference below.
Names are compared without case, ``_`` or ``-``, so ``filePath`` and ``repo-path`` match too.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal

from actors.tools import ResourceSlot

__all__ = ["SLOT_RULES", "SlotRule", "infer_resource_slots"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SlotRule:
    """Which property names give which slot."""

    slot: str
    resource_type: str
    access: Literal["read_only", "read_write"]
    binding: Literal["parameter", "contextual"]
    names: tuple[str, ...]
    """Property names in order of preference, as written in the rule's documentation."""


SLOT_RULES: tuple[SlotRule, ...] = (
    SlotRule("file", "file", "read_write", "parameter", ("file_path", "filepath", "file", "path")),
    SlotRule("directory", "directory", "read_only", "parameter", ("directory", "dir", "folder")),
    SlotRule("repository", "git-checkout", "read_write", "contextual", ("repo_path", "repository", "repo")),
)


def infer_resource_slots(input_schema: dict[str, Any]) -> list[ResourceSlot]:
    """One `ResourceSlot` per kind whose property names occur in ``input_schema["properties"]``."""
    properties = input_schema.get("properties") if isinstance(input_schema, dict) else None
    if not isinstance(properties, dict) or not properties:
        return []
    by_key: dict[str, str] = {}
    for name in properties:
        if isinstance(name, str):
            by_key.setdefault(_key(name), name)
    slots: list[ResourceSlot] = []
    for rule in SLOT_RULES:
        for candidate in rule.names:
            parameter = candidate if candidate in properties else by_key.get(_key(candidate))
            if parameter:
                slots.append(
                    ResourceSlot(
                        name=rule.slot,
                        resource_type=rule.resource_type,
                        access=rule.access,
                        binding=rule.binding,
                        parameter=parameter,
                    )
                )
                break
    return slots


def _key(name: str) -> str:
    return name.replace("_", "").replace("-", "").casefold()
