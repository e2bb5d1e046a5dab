"""`TerminalProgress`: what a command at a terminal is waiting for, drawn by Rich on stderr and
erased when it ends: each server still starting (a first ``npx`` or ``uvx`` run downloads its
package: seconds of silence otherwise), and a call's progress notifications.

Nothing is drawn until there is something to wait for, so a quick command prints nothing.
Threads: the command's thread makes and closes it; `update` runs on a host thread of the
runtime; the servers are polled (``Runtime.status``) on a thread of its own, which `close`
joins. Rich's `Progress` takes its own lock for every update from any of them.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from actors.cli.tables import is_terminal

if TYPE_CHECKING:
    from actors.runtime import Runtime, ServerStatus

__all__ = ["TerminalProgress", "on_terminal", "watching"]

_STARTING = frozenset({"starting", "restarting"})
_POLL_S = 0.25
"""How often the servers' states are asked for while they start."""
_CALL = "call"


class TerminalProgress:
    """Progress rows on ``stream`` (a terminal): one per starting server, one for the call."""

    def __init__(self, stream: TextIO, *, terminal: bool | None = None) -> None:
        # Deferred: Rich's progress display loads only for a command at a terminal.
        from rich.console import Console  # noqa: PLC0415
        from rich.progress import (  # noqa: PLC0415
            BarColumn,
            Progress,
            SpinnerColumn,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        console = Console(
            file=stream, force_terminal=terminal, highlight=False, markup=False, emoji=False, stderr=True
        )
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            TaskProgressColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._lock = threading.Lock()
        self._rows: dict[str, Any] = {}
        """Row ids by what they show (a namespace, or `_CALL`); written under ``_lock``."""
        self._started = False
        self._closed = False
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None

    def watch(self, statuses: Callable[[], Sequence[ServerStatus]]) -> None:
        """Show each server that ``statuses()`` says is starting, until `close`."""
        self._watcher = threading.Thread(
            target=self._poll, args=(statuses,), name="mcp-actors-progress", daemon=True
        )
        self._watcher.start()

    def update(self, progress: float, total: float | None, message: str | None) -> None:
        """A call's progress notification (the runtime's ``progress`` callback)."""
        description = message or "working"
        total = total if total is not None and total > 0 else None
        self._show(_CALL, description, total=total, completed=progress)

    def close(self) -> None:
        """Stop watching, and erase what was drawn; news after this is dropped."""
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(timeout=5.0)
        with self._lock:
            self._closed = True
            if self._started:
                self._progress.stop()

    def __enter__(self) -> TerminalProgress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ---- the rows -----------------------------------------------------------------------------

    def _show(self, key: str, description: str, **fields: Any) -> None:
        with self._lock:
            if self._closed:
                return
            if not self._started:
                self._progress.start()
                self._started = True
            row = self._rows.get(key)
            if row is None:
                self._rows[key] = self._progress.add_task(description, **fields)
            else:
                self._progress.update(row, description=description, **fields)

    def _hide(self, key: str) -> None:
        with self._lock:
            row = self._rows.pop(key, None)
            if row is not None and not self._closed:
                self._progress.remove_task(row)

    def _poll(self, statuses: Callable[[], Sequence[ServerStatus]]) -> None:
        while not self._stop.is_set():
            try:
                now = statuses()
            except Exception:
                return
            for status in now:
                if status.state in _STARTING:
                    self._show(status.namespace, f"starting {status.namespace}", total=None)
                else:
                    self._hide(status.namespace)
            self._stop.wait(_POLL_S)


def on_terminal(stream: TextIO) -> TerminalProgress | None:
    """A `TerminalProgress` on ``stream`` if it is a terminal; else None: piped or logged,
    progress would be noise."""
    return TerminalProgress(stream, terminal=True) if is_terminal(stream) else None


@contextlib.contextmanager
def watching(rt: Runtime) -> Iterator[TerminalProgress | None]:
    """Progress on stderr while the block runs, if stderr is a terminal: ``rt``'s servers as
    they start, and what the block hands to `TerminalProgress.update`. Else None."""
    progress = on_terminal(sys.stderr)
    if progress is None:
        yield None
        return
    with progress:
        progress.watch(rt.status)
        yield progress
