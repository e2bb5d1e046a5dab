"""What a tool does, inferred from its name, and refined by annotations of trusted servers."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from actors.tools import ToolCapabilities

__all__ = ["READ_VERBS", "WRITE_VERBS", "infer_capabilities", "name_words"]

READ_VERBS = frozenset(
    {"list", "get", "read", "search", "fetch", "find", "show", "describe", "view", "query", "lookup"}
    | {"retrieve", "browse", "inspect", "count", "status", "diff", "log", "cat", "head", "tail"}
)
WRITE_VERBS = frozenset(
    {"create", "update", "delete", "write", "remove", "set", "put", "push", "commit", "deploy", "merge"}
    | {"add", "insert", "edit", "modify", "patch", "move", "rename", "upload", "post", "send", "publish"}
    | {"close", "archive", "drop", "destroy", "kill", "reset", "apply", "install", "revert", "save"}
    | {"store", "upsert", "append", "replace", "clear", "purge", "truncate", "assign", "approve"}
)

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def name_words(name: str) -> list[str]:
    """Split a tool name in snake_case, kebab-case, camelCase (or a mix) into lower-case words."""
    words: list[str] = []
    for chunk in re.split(r"[^A-Za-z0-9]+", name):
        words.extend(w.lower() for w in _CAMEL_BOUNDARY.split(chunk) if w)
    return words


def infer_capabilities(
    name: str, annotations: Mapping[str, Any] | None = None, *, trusted: bool = False
) -> ToolCapabilities:
    """Capabilities of a remote tool; never checkpointable (its effects are out of reach).

    A write verb anywhere in the name wins over a read verb. Annotations (``readOnlyHint``,
    ``destructiveHint``) count only when ``trusted``: the MCP specification says hints from
    untrusted servers must not be relied on.
    """
    words = set(name_words(name))
    writes = bool(words & WRITE_VERBS)
    read_only = not writes and bool(words & READ_VERBS)
    if trusted and annotations:
        read_hint = annotations.get("readOnlyHint")
        destructive = annotations.get("destructiveHint")
        if read_hint is True:
            read_only, writes = True, False
        elif read_hint is False or destructive is True:
            read_only, writes = False, True
    return ToolCapabilities(read_only=read_only, writes=writes, checkpointable=False)
