"""The launch wrapper's part of a boundary: the server joins its cgroup and takes its rlimits
before its first instruction, with the default signal dispositions, or does not run at all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from actors.mcp.stdio_process import PDEATHSIG_SCRIPT
from actors.sandbox import SandboxLimits
from actors.sandbox.limits import Limiter

WRAPPER = [sys.executable, "-I", "-S", str(PDEATHSIG_SCRIPT), f"--ppid={os.getpid()}"]
SHOW = "ulimit -n; grep SigIgn /proc/self/status; cat /proc/self/cgroup"


def run(*options: str) -> subprocess.CompletedProcess[str]:
    argv = [*WRAPPER, *options, "sh", "-c", SHOW]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def test_rlimits_and_default_signals() -> None:
    done = run("--rlimit=NOFILE:64")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "64"
    ignored = int(lines[1].split()[1], 16)  # what the test run itself ignores (nohup) may stay
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        assert not ignored & (1 << (sig - 1)), f"{sig.name} left ignored"


def test_the_cgroup_is_joined_before_the_exec() -> None:
    applied = Limiter().build("wrapper-test", SandboxLimits(memory=256 * 1024**2, processes=16))
    try:
        if applied.group is None:
            assert applied.how.startswith("rlimits only")
            return
        done = run(*(f"--join={procs}" for procs in applied.group.procs_files))
        assert done.returncode == 0, done.stderr
        leaves = {Path(folder).name for folder in applied.group.folders}
        joined = [line for line in done.stdout.splitlines() if any(leaf in line for leaf in leaves)]
        assert joined, done.stdout
        limits = [
            (folder / name).read_text().strip()
            for folder in applied.group.folders
            for name in ("memory.limit_in_bytes", "memory.max")  # cgroup v1, v2
            if (folder / name).exists()
        ]
        assert limits == [str(256 * 1024**2)]
    finally:
        if applied.group is not None:
            applied.group.remove()
            assert not any(folder.exists() for folder in applied.group.folders)


def test_limits_that_cannot_be_applied_stop_the_start(tmp_path: Path) -> None:
    done = run(f"--join={tmp_path / 'no-such-cgroup' / 'cgroup.procs'}")
    assert done.returncode == 126
    assert "cannot apply the sandbox's limits" in done.stderr
    assert "SigIgn" not in done.stdout  # the command never ran
