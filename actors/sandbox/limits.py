"""A sandboxed server's limits: a cgroup where the runtime can make one, else rlimits.

`Limiter.build` makes the cgroup (v1 as root: the memory and pids controllers; v2 where this
process's cgroup is delegated to it) and says which way each limit is kept; the process joins
the cgroup and takes its rlimits in the launch wrapper (`actors.mcp.pdeathsig`) before it execs
bubblewrap, so that everything the server starts is inside from its first instruction.
`CgroupGroup.remove` kills what is left in the group and removes it.

File-system work: call it off the event loop (the boundary is built on a worker thread).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from actors.sandbox.profile import SandboxLimits

__all__ = ["AppliedLimits", "CgroupGroup", "Limiter"]

logger = logging.getLogger(__name__)

_V1_ROOT = Path("/sys/fs/cgroup")
_GROUP_PREFIX = "mcp-actors"
_counter = itertools.count(1)
# Held while this process makes or removes its folders under its per-process tag folder, so
# that one sandbox removing the emptied tag folder never races another making its leaf in it.
_tree = threading.Lock()
_EMPTY_WAIT = 5.0


@dataclass(frozen=True)
class CgroupGroup:
    """The cgroup folders of one sandbox (one per v1 controller, or one v2 folder)."""

    folders: tuple[Path, ...]

    @property
    def procs_files(self) -> tuple[str, ...]:
        """The files the launch wrapper writes its pid to."""
        return tuple(str(folder / "cgroup.procs") for folder in self.folders)

    def pids(self) -> set[int]:
        """The processes in the group now."""
        found: set[int] = set()
        for folder in self.folders:
            with contextlib.suppress(OSError, ValueError):
                found.update(int(line) for line in (folder / "cgroup.procs").read_text().split())
        return found

    def remove(self) -> None:
        """Kill whatever is left in the group, then remove its folders. Bounded; idempotent."""
        deadline = time.monotonic() + _EMPTY_WAIT
        while (left := self.pids()) and time.monotonic() < deadline:
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)
        for folder in self.folders:
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # EBUSY while the kernel lets the last task go
                    time.sleep(0.02)
            else:
                logger.warning("sandbox: could not remove cgroup %s", folder)
                continue
            with _tree, contextlib.suppress(OSError):  # still holds another sandbox's group
                folder.parent.rmdir()


@dataclass(frozen=True)
class AppliedLimits:
    """How a sandbox's limits are kept: its cgroup (if any), the rlimits the wrapper sets,
    and a line for status and check."""

    group: CgroupGroup | None
    rlimits: tuple[tuple[str, int], ...]
    how: str


def _own_v1_path(controller: str) -> str | None:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path
    return None


def _own_v2_folder() -> Path | None:
    mount = None
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split(" - ", 1)
        if len(fields) == 2 and fields[1].startswith("cgroup2 "):
            mount = Path(fields[0].split()[4])
            break
    if mount is None:
        return None
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            return mount / line[3:].lstrip("/")
    return None


class Limiter:
    """Makes the cgroups of this process's sandboxes, under one folder of its own per
    controller. Used from worker threads; it holds no state but the folders' names."""

    def __init__(self) -> None:
        self._tag = f"{_GROUP_PREFIX}-{os.getpid()}"

    def build(self, name: str, limits: SandboxLimits) -> AppliedLimits:
        """The group (made now) and rlimits that keep ``limits`` for the sandbox ``name``."""
        rlimits: list[tuple[str, int]] = []
        if limits.open_files is not None:
            rlimits.append(("NOFILE", limits.open_files))
        if limits.cpu_seconds is not None:
            rlimits.append(("CPU", limits.cpu_seconds))
        wanted = {"memory": limits.memory, "pids": limits.processes}
        if all(value is None for value in wanted.values()):
            return AppliedLimits(None, tuple(rlimits), "rlimits" if rlimits else "none")
        leaf = f"{name}-{next(_counter)}"
        group = self._v1(leaf, limits) or self._v2(leaf, limits)
        if group is not None:
            kept = ", ".join(k for k, v in wanted.items() if v is not None)
            return AppliedLimits(group, tuple(rlimits), f"cgroup ({kept}) and rlimits")
        if limits.memory is not None:
            rlimits.append(("AS", limits.memory))
        if limits.processes is not None:
            # Per user, not per sandbox, and root is exempt: the weaker of the two ways.
            rlimits.append(("NPROC", limits.processes))
        return AppliedLimits(None, tuple(rlimits), "rlimits only (no cgroup could be made)")

    def _v1(self, leaf: str, limits: SandboxLimits) -> CgroupGroup | None:
        files = {"memory": {}, "pids": {}}  # type: dict[str, dict[str, int]]
        if limits.memory is not None:
            files["memory"] = {"memory.limit_in_bytes": limits.memory}
        if limits.processes is not None:
            files["pids"] = {"pids.max": limits.processes}
        made: list[Path] = []
        try:
            for controller, values in files.items():
                own = _own_v1_path(controller)
                root = _V1_ROOT / controller
                if own is None or not (root / "cgroup.procs").exists():
                    raise OSError(f"no v1 {controller} controller")
                folder = root / own.lstrip("/") / self._tag / leaf
                with _tree:
                    folder.mkdir(parents=True, exist_ok=True)
                made.append(folder)
                for file, value in values.items():
                    (folder / file).write_text(str(value))
                swap = folder / "memory.memsw.limit_in_bytes"
                if controller == "memory" and limits.memory is not None and swap.exists():
                    with contextlib.suppress(OSError):
                        swap.write_text(str(limits.memory))
        except OSError as exc:
            logger.debug("sandbox %s: no cgroup v1: %s", leaf, exc)
            CgroupGroup(tuple(made)).remove()
            return None
        return CgroupGroup(tuple(made))

    def _v2(self, leaf: str, limits: SandboxLimits) -> CgroupGroup | None:
        try:
            own = _own_v2_folder()
            if own is None:
                return None
            # A delegated v2 tree: this process lives in a leaf; its parent hands out controllers.
            parent = own.parent / self._tag
            folder = parent / leaf
            with _tree:
                parent.mkdir(exist_ok=True)
                (parent / "cgroup.subtree_control").write_text("+memory +pids")
                folder.mkdir()
        except OSError as exc:
            logger.debug("sandbox %s: no cgroup v2: %s", leaf, exc)
            return None
        try:
            if limits.memory is not None:
                (folder / "memory.max").write_text(str(limits.memory))
                with contextlib.suppress(OSError):
                    (folder / "memory.swap.max").write_text("0")
            if limits.processes is not None:
                (folder / "pids.max").write_text(str(limits.processes))
        except OSError as exc:
            logger.debug("sandbox %s: cgroup v2 without its controllers: %s", leaf, exc)
            CgroupGroup((folder,)).remove()
            return None
        return CgroupGroup((folder,))
