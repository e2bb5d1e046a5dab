"""How many pytest-xdist workers ``make pytest`` runs: one more than the CPUs this process may use.

A test spends much of its time waiting on the server processes it starts, so one worker per CPU
leaves CPUs idle; one more fills them. Where a CPU quota holds the process to less than the
machine (a cgroup's ``cpu.max``, v2, or ``cpu.cfs_quota_us``, v1), the quota counts, not the
machine: more workers there only make every test slower. Standard library only; run as a script
it prints the number (``python3 tests/harness/workers.py``).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

__all__ = ["cpus_allowed", "quota_of", "workers"]

_ROOT = Path("/sys/fs/cgroup")


def quota_of(cgroup_lines: str, read: dict[str, str] | None = None) -> float | None:
    """The CPUs a CPU quota allows the process whose ``/proc/self/cgroup`` is ``cgroup_lines``
    (None: no quota). ``read`` maps a path to its contents (tests); else the files are read."""

    def text(path: Path) -> str | None:
        if read is not None:
            return read.get(str(path))
        try:
            return path.read_text()
        except OSError:
            return None

    for line in cgroup_lines.splitlines():
        number, _, rest = line.partition(":")
        controllers, _, where = rest.partition(":")
        relative = where.lstrip("/")
        if number == "0" and controllers == "":
            limit = text(_ROOT / relative / "cpu.max")
            fields = limit.split() if limit is not None else []
            if len(fields) == 2 and fields[0] != "max":
                return int(fields[0]) / int(fields[1])
        elif "cpu" in controllers.split(","):
            folder = _ROOT / controllers / relative
            quota_text, period_text = text(folder / "cpu.cfs_quota_us"), text(folder / "cpu.cfs_period_us")
            if quota_text is None and controllers != "cpu":
                folder = _ROOT / "cpu" / relative
                quota_text, period_text = (
                    text(folder / "cpu.cfs_quota_us"),
                    text(folder / "cpu.cfs_period_us"),
                )
            if quota_text is not None and period_text is not None and int(quota_text) > 0:
                return int(quota_text) / int(period_text)
    return None


def cpus_allowed() -> float:
    """The CPUs this process may run on, within its CPU quota if it has one."""
    cpus = float(len(os.sched_getaffinity(0)))
    try:
        quota = quota_of(Path("/proc/self/cgroup").read_text())
    except OSError:
        quota = None
    return min(cpus, quota) if quota is not None else cpus


def workers(cpus: float) -> int:
    """One more worker than ``cpus`` (a fraction of a CPU counts as one)."""
    return max(1, math.ceil(cpus)) + 1


if __name__ == "__main__":
    print(workers(cpus_allowed()))
