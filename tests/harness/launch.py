"""``python -I -S launch.py SOCKET ARGS...``: run a fork server's target (`tests/harness/forkserver.py`)
with ``ARGS`` as if this process were it.

It hands ``ARGS``, its environment, its working directory and its standard streams to the fork
server at ``SOCKET``, lets go of its own stdin and stdout (so that the pipes end when the forked
process ends them), and exits with the forked process's status, or by the signal that killed it.
SIGTERM, SIGINT and SIGHUP are passed on to the forked process (which is gone, and reaped, by the
time this process exits); killed by SIGKILL, this process takes the forked one with it: the fork
server sees the connection close. The standard library only: it starts in a few milliseconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import sys
from types import FrameType

_INT = struct.Struct("!i")
_PASSED_ON = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _read_int(connection: socket.socket) -> int | None:
    data = b""
    while len(data) < _INT.size:
        chunk = connection.recv(_INT.size - len(data))
        if not chunk:
            return None
        data += chunk
    return int(_INT.unpack(data)[0])


def _pass_signals_on(child: int) -> None:
    try:
        pidfd = os.pidfd_open(child)  # not the pid: never another process that got it once reaped
    except ProcessLookupError:
        return  # gone and reaped already: its status is on its way

    def pass_on(signum: int, frame: FrameType | None) -> None:
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(pidfd, signum)

    for signum in _PASSED_ON:
        signal.signal(signum, pass_on)


def main(argv: list[str]) -> int:
    path, args = argv[1], argv[2:]
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # no KeyboardInterrupt: until passed on, it ends us
    header = json.dumps({"argv": args, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        try:
            connection.connect(path)
            socket.send_fds(connection, [struct.pack("!Q", len(header))], [0, 1, 2])
            connection.sendall(header)
        except OSError as exc:
            print(f"launch.py: no fork server at {path}: {exc}", file=sys.stderr)
            return 1
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.close(devnull)
        child = _read_int(connection)  # before it, a signal's default action ends us (and so it)
        if child is not None:
            _pass_signals_on(child)
        code = _read_int(connection) if child is not None else None
    if code is None:
        print("launch.py: the forked process died without an exit status", file=sys.stderr)
        return 1
    if code < 0:  # killed by signal -code: so is this process
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        return 128 - code
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
