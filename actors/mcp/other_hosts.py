"""The top-level keys of a configuration file: ours, other hosts' (Claude Desktop, VS Code,
Claude Code: ignored with a warning, so their files load unchanged), and unknown ones (an error,
with the nearest key of ours)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from actors.mcp.config import ConfigProblem

__all__ = ["RUNTIME_KEYS", "top_level_keys"]

# The keys of this runtime; "$schema" is an editor's hint, harmless.
RUNTIME_KEYS = ("mcpServers", "servers", "defaults", "builtin", "toolSearch", "access", "$schema")

# Top-level keys other hosts write into the same file: ignored with a warning, so their files load
# unchanged. The value says whose key it is, and what the user should know beyond "ignored".
_HOST_KEYS: dict[str, tuple[str, str]] = {
    "globalShortcut": ("Claude Desktop", ""),
    "preferences": ("Claude Desktop", ""),
    "isUsingBuiltInNodeForMcp": ("Claude Desktop", ""),
    "isDxtAutoUpdatesEnabled": ("Claude Desktop", ""),
    "inputs": ("VS Code", "only VS Code can prompt for inputs"),
    "projects": ("Claude Code", "its per-project servers are not read"),
    "numStartups": ("Claude Code", ""),
    "userID": ("Claude Code", ""),
    "oauthAccount": ("Claude Code", ""),
    "theme": ("Claude Code", ""),
    "hasCompletedOnboarding": ("Claude Code", ""),
    "lastOnboardingVersion": ("Claude Code", ""),
}

# Claude Code's ~/.claude.json holds its servers beside some ninety keys of its own state, a set
# that changes between releases: once one of these shows the file is that one, any other key is
# taken for Claude Code's too, unless it looks like a misspelt key of ours.
_CLAUDE_CODE_STATE = frozenset({"numStartups", "userID", "oauthAccount", "firstStartTime"})


def top_level_keys(data: Mapping[str, Any], problems: list[ConfigProblem], warnings: list[str]) -> None:
    """Warn about other hosts' top-level keys; report unknown ones."""
    claude_code_state = not _CLAUDE_CODE_STATE.isdisjoint(data)
    others: list[str] = []
    for key in data:
        if key in RUNTIME_KEYS:
            continue
        if key in _HOST_KEYS:
            host, note = _HOST_KEYS[key]
            warnings.append(
                f"top-level key {key!r} ({host}) is not used by mcp-actors and was ignored"
                + (f": {note}" if note else "")
            )
            continue
        near = difflib.get_close_matches(key, RUNTIME_KEYS, n=1, cutoff=0.75)
        if claude_code_state and not near:
            others.append(key)
            continue
        near = near or difflib.get_close_matches(key, sorted(_HOST_KEYS), n=1, cutoff=0.75)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        problems.append(ConfigProblem(server=None, key=key, message=f"unknown top-level key{hint}"))
    if others:
        warnings.append(
            f"{len(others)} more top-level keys of Claude Code's state ({', '.join(map(repr, others[:5]))}"
            f"{', ...' if len(others) > 5 else ''}) are not used by mcp-actors and were ignored"
        )
