"""Launch a command that dies with the thread that started it (Linux ``PR_SET_PDEATHSIG``).

Usage: ``python pdeathsig.py [--ppid=N] [--join=FILE]... [--rlimit=NAME:N]... <command> [args...]``
(or ``python -m actors.mcp.pdeathsig``).

``--join`` writes this process's pid to a cgroup's ``cgroup.procs`` and ``--rlimit`` sets
``RLIMIT_NAME`` (soft and hard) before the exec: a sandboxed server and all it starts are held
by its limits from the first instruction.

It asks the kernel to send SIGKILL to this process when its parent *thread* exits (so a host
that is SIGKILLed takes its stdio servers with it), then ``execvp``s the command: the server
keeps this process's pid and the death signal.
If the parent is already gone (``--ppid`` no longer matches), it exits before the exec.

The script uses only the standard library so it can run under ``python -I -S`` (fast start).
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys

__all__ = ["main", "set_parent_death_signal"]

_PR_SET_PDEATHSIG = 1
_EXIT_NOT_FOUND = 127
_EXIT_CANNOT_RUN = 126


def set_parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Ask for ``sig`` when the parent thread exits; False where the platform cannot."""
    if not sys.platform.startswith("linux"):
        return False
    # The running process's own symbols include libc's prctl; find_library would spawn ldconfig.
    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0) == 0)


def main(argv: list[str] | None = None) -> int:
    """Set the death signal and exec the command; return only on failure."""
    args = list(sys.argv[1:] if argv is None else argv)
    expected_parent: int | None = None
    joins: list[str] = []
    rlimits: list[tuple[int, int]] = []
    while args and args[0].startswith(("--ppid=", "--join=", "--rlimit=")):
        option, value = args.pop(0).split("=", 1)
        if option == "--ppid":
            expected_parent = int(value)
        elif option == "--join":
            joins.append(value)
        else:
            limit_name, limit_value = value.split(":", 1)
            rlimits.append((getattr(resource, f"RLIMIT_{limit_name}"), int(limit_value)))
    if not args:
        sys.stderr.write("usage: pdeathsig.py [--ppid=N] [--join=FILE] [--rlimit=NAME:N] COMMAND [ARGS...]\n")
        return 2
    set_parent_death_signal()
    # The parent may have died between fork and prctl: then nobody would ever kill us.
    if expected_parent is not None and os.getppid() != expected_parent:
        return 1
    try:
        for procs in joins:
            with open(procs, "w") as file:
                file.write(str(os.getpid()))
        for limit, amount in rlimits:
            resource.setrlimit(limit, (amount, amount))
    except (OSError, ValueError) as exc:
        # Never run a server outside the limits it was given.
        sys.stderr.write(f"cannot apply the sandbox's limits: {exc}\n")
        return _EXIT_CANNOT_RUN
    # Python starts with these ignored, and an exec keeps what is ignored: give the server the
    # defaults any other parent would (as subprocess's restore_signals does for our own start).
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    try:
        os.execvp(args[0], args)
    except FileNotFoundError:
        sys.stderr.write(f"command not found: {args[0]}\n")
        return _EXIT_NOT_FOUND
    except OSError as exc:
        sys.stderr.write(f"cannot run {args[0]}: {exc.strerror or exc}\n")
        return _EXIT_CANNOT_RUN
    return _EXIT_CANNOT_RUN  # pragma: no cover - execvp does not return


if __name__ == "__main__":
    sys.exit(main())
