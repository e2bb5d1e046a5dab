"""`OwnerCheck`: a debug switch under which an owned part asserts it is touched on its owner.

Every part a server actor owns is touched on one thread only (the actor's), and says so. With
``MCP_ACTORS_CHECK_OWNER=1`` in the environment when this module is imported (the test suite
sets it), each owned part remembers the first thread that touches it and fails any touch from
another. Off, a check is one global read.
"""

from __future__ import annotations

import os
import threading

__all__ = ["CHECK_OWNER", "OwnerCheck", "WrongThread"]

CHECK_OWNER = os.environ.get("MCP_ACTORS_CHECK_OWNER", "") == "1"


class WrongThread(AssertionError):
    """An owned part was touched off its owner thread."""


class OwnerCheck:
    """Binds to the first thread that touches it; `touch` from any other fails (when on)."""

    __slots__ = ("_owner", "_what")

    def __init__(self, what: str) -> None:
        self._what = what
        self._owner: int | None = None

    def touch(self) -> None:
        if not CHECK_OWNER:
            return
        me = threading.get_ident()
        if self._owner is None:
            self._owner = me
        elif self._owner != me:
            raise WrongThread(
                f"{self._what} is owned by thread {self._owner}, touched on {threading.current_thread().name}"
            )

    def release(self) -> None:
        """Forget the owner: the next toucher owns it (for a part built on one thread and handed
        to another before use)."""
        self._owner = None
