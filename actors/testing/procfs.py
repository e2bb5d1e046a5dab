"""Process facts read from Linux's ``/proc``: is a process alive, what are its children.

Used by the Robot library and the tests to prove that no server process is left behind.
Elsewhere (no ``/proc``) every process reads as gone and nobody has children.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["child_pids", "is_alive", "process_state"]

_PROC = Path("/proc")


def _stat_fields(pid: int | str) -> list[str] | None:
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: the fields start after the last ')'.
    return stat.rsplit(")", 1)[1].split()


def process_state(pid: int) -> str | None:
    """The one-letter state of ``pid`` (``R``, ``S``, ``T``, ``Z`` ...), or None if it is gone."""
    fields = _stat_fields(pid)
    return fields[0] if fields else None


def is_alive(pid: int) -> bool:
    """``pid`` exists and is not a zombie."""
    state = process_state(pid)
    return state is not None and state != "Z"


def child_pids(parent: int) -> set[int]:
    """The live (non-zombie) children of ``parent``."""
    children: set[int] = set()
    try:
        entries = list(_PROC.iterdir())
    except OSError:
        return children
    for entry in entries:
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(entry.name)
        if fields and fields[0] != "Z" and int(fields[1]) == parent:
            children.add(int(entry.name))
    return children
