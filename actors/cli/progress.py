"""`ProgressBar`: a call's progress drawn on the terminal (``call`` at a terminal only)."""

from __future__ import annotations

import os
import threading
from typing import TextIO

__all__ = ["ProgressBar"]


class ProgressBar:
    """A call's progress, redrawn in place on one terminal line and erased when the call ends.

    `update` runs on a host thread of the runtime while the command's thread waits for the
    answer; news that arrives after `close` is dropped.
    """

    WIDTH = 24

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._drawn = False
        self._closed = False
        try:
            columns = os.get_terminal_size(stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            columns = 0
        # A terminal whose size was never set (a fresh pty, some CI runners) says 0 columns.
        self._columns = columns if columns > 0 else 80

    def line(self, progress: float, total: float | None, message: str | None) -> str:
        """The bar for one update: ``[#####-------]  42% message``, or without a total the
        count so far."""
        if total is not None and total > 0:
            fraction = min(max(progress / total, 0.0), 1.0)
            filled = round(fraction * self.WIDTH)
            bar = f"[{'#' * filled}{'-' * (self.WIDTH - filled)}] {fraction:4.0%}"
        else:
            bar = f"[{_number(progress)}]"
        text = f"{bar} {message}" if message else bar
        return text[: max(self._columns - 1, 10)]

    def update(self, progress: float, total: float | None, message: str | None) -> None:
        with self._lock:
            if self._closed:
                return
            self._stream.write("\r\x1b[K" + self.line(progress, total, message))
            self._stream.flush()
            self._drawn = True

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._drawn:
                self._stream.write("\r\x1b[K")
                self._stream.flush()


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
