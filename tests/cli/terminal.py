"""A command run with its stderr on a pseudo-terminal, as a person at a terminal runs it."""

from __future__ import annotations

import errno
import os
import pty
import select
import subprocess
import time
from collections.abc import Callable
from typing import Any


def run_on_terminal(
    argv: list[str],
    *,
    on_output: Callable[[bytes], None] = lambda drawn: None,
    timeout: float = 120.0,
    **popen: Any,
) -> tuple[int, bytes, bytes]:
    """Run ``argv`` with stderr on a pseudo-terminal until it exits: its status, its stdout and
    what the terminal showed. ``on_output`` sees all the terminal showed so far after each
    chunk (to answer what it shows); the command is killed if it outlives ``timeout``."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=terminal, stdin=subprocess.DEVNULL, **popen
    )
    os.close(terminal)
    drawn = b""
    try:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([controller], [], [], left)
            if not ready:
                continue
            try:
                chunk = os.read(controller, 4096)
            except OSError as exc:  # the terminal closed: every writer has exited
                if exc.errno != errno.EIO:
                    raise
                break
            if not chunk:
                break
            drawn += chunk
            on_output(drawn)
        stdout, _ = process.communicate(timeout=timeout)
    finally:
        os.close(controller)
        if process.poll() is None:
            process.kill()
            process.wait(10)
    return process.returncode, stdout, drawn
