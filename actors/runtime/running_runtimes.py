"""`live`: the runtimes of this process, shut down at interpreter exit (and on SIGTERM, if asked).

A `Runtime` adds itself when it starts and leaves when it shuts down. With
``handle_signals=True`` SIGTERM becomes ``SystemExit``, so that ``with Runtime.start(...)``
blocks unwind and atexit shuts the servers down; the previous handler is put back when the
last runtime is gone.
"""

from __future__ import annotations

import atexit
import signal
import threading
import weakref
from types import FrameType
from typing import Any, Protocol

__all__ = ["LiveRuntimes", "live"]


class _ShutsDown(Protocol):
    def shutdown(self) -> None: ...


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    # Unwind like Ctrl-C does, so `with Runtime.start(...)` blocks and atexit shut servers down.
    raise SystemExit(128 + signum)


class LiveRuntimes:
    """The live runtimes; any thread (one lock). Signal handlers change on the main thread only."""

    def __init__(self) -> None:
        self._runtimes: weakref.WeakSet[Any] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._previous_sigterm: Any = None

    def add(self, runtime: _ShutsDown, *, handle_signals: bool = False) -> None:
        with self._lock:
            self._runtimes.add(runtime)
            if handle_signals:
                self._install_sigterm()

    def discard(self, runtime: _ShutsDown) -> None:
        with self._lock:
            self._runtimes.discard(runtime)
            if not self._runtimes:
                self._restore_sigterm()

    def shutdown_all(self) -> None:
        with self._lock:
            runtimes = list(self._runtimes)
        for runtime in runtimes:
            runtime.shutdown()

    def _install_sigterm(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            self._previous_sigterm = signal.signal(signal.SIGTERM, _on_sigterm)

    def _restore_sigterm(self) -> None:
        if self._previous_sigterm is None or threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) is _on_sigterm:
            signal.signal(signal.SIGTERM, self._previous_sigterm)
        self._previous_sigterm = None


live = LiveRuntimes()
"""This process's runtimes."""

atexit.register(live.shutdown_all)
