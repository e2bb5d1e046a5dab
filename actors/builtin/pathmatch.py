"""`PathPattern`: glob patterns over workspace-relative paths, with ``**`` for any depth.

``*``, ``?`` and ``[...]`` match within one path segment; a ``**`` segment matches zero or
more segments. Dotfiles are matched like any other name. Patterns are relative: an absolute
pattern or a ``..`` segment is refused, since a pattern must not reach outside its folder.
"""

from __future__ import annotations

import fnmatch
import functools

from actors.builtin.errors import InvalidInput, SandboxViolation

__all__ = ["PathPattern"]


class PathPattern:
    """A compiled glob pattern; `matches` takes a ``/``-separated relative path."""

    def __init__(self, pattern: str) -> None:
        if "\x00" in pattern:
            raise SandboxViolation(f"glob {pattern!r} contains a NUL byte")
        if pattern.startswith("/"):
            raise SandboxViolation(f"glob {pattern!r} is absolute; globs are relative to their folder")
        segments = [s for s in pattern.split("/") if s not in ("", ".")]
        if ".." in segments:
            raise SandboxViolation(f"glob {pattern!r} uses '..'; globs cannot leave their folder")
        if not segments:
            raise InvalidInput(f"glob {pattern!r} matches nothing")
        # Consecutive ** segments mean the same as one and would only slow matching down.
        collapsed: list[str] = []
        for segment in segments:
            if not (segment == "**" and collapsed and collapsed[-1] == "**"):
                collapsed.append(segment)
        self.pattern = pattern
        self._segments = tuple(collapsed)

    def __repr__(self) -> str:
        return f"PathPattern({self.pattern!r})"

    def matches(self, path: str) -> bool:
        """Whether the relative path ``path`` (``a/b/c``) matches the whole pattern."""
        return _match(self._segments, tuple(path.split("/")))


@functools.lru_cache(maxsize=4096)
def _match(pattern: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    if not pattern:
        return not parts
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match(rest, parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], head) and _match(rest, parts[1:])
