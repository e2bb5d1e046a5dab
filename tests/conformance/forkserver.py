"""The fork server of ``client.py``: the conformance suite starts the client once per scenario,
and each start spent most of its CPU time importing the SDK and the runtime anew.

`ClientForkServer` is the test harness's fork server (tests/harness/forkserver.py) for the
script ``client.py``: one process imports it (the SDK, the runtime) once, then forks a process
per scenario. The suite runs its `command`: ``python -I -S tests/harness/launch.py SOCKET ARGS``
(the standard library only, a few milliseconds), which hands its arguments, environment, working
directory and standard streams to the fork server and exits with the forked client's status.
Every scenario still runs in a process of its own with a runtime started from nothing; only
the imports are shared. What a module reads from the environment at import time it reads from
the fork server's, which is the test process's, as the suite's own would be.

A forked client dies with its launcher (the fork server sees the launcher's connection close),
and every forked client dies with the fork server (one process group, killed when the context
exits).
"""

from __future__ import annotations

from pathlib import Path

from tests.harness.forkserver import ForkServer

CLIENT = Path(__file__).resolve().with_name("client.py")

__all__ = ["ClientForkServer"]


class ClientForkServer(ForkServer):
    """The fork server as a context: `command` is what the suite is to run for the client
    (``client.py`` with the given arguments; the suite appends the URL)."""

    def __init__(self) -> None:
        super().__init__(str(CLIENT))
