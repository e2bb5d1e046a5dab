"""The deadline of the built-in call running on this thread, for tools that can stop early."""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator

__all__ = ["remaining", "until"]

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("builtin_deadline", default=None)


@contextlib.contextmanager
def until(deadline: float | None) -> Iterator[None]:
    """Run the block with ``deadline`` (a `time.monotonic` value) as the current call's deadline."""
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining(limit: float) -> float:
    """Seconds left for the current call, at most ``limit`` (``limit`` when there is no deadline)."""
    deadline = _deadline.get()
    if deadline is None:
        return limit
    return max(min(limit, deadline - time.monotonic()), 0.001)
