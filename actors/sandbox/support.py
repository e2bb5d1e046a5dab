"""Whether this machine can build a sandbox: bubblewrap present, and able to make namespaces.

Asked once per process (a probe run of bubblewrap), from a worker thread; the answer is kept.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass

__all__ = ["SandboxUnavailable", "Support", "sandbox_support"]

_PROBE_TIMEOUT = 15.0
_INSTALL = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap; "
    "Arch: pacman -S bubblewrap)"
)


class SandboxUnavailable(OSError):
    """A server asks for a sandbox that this machine cannot build: it is not started."""


@dataclass(frozen=True)
class Support:
    """The answer: the bubblewrap program, or why there is none and what to do."""

    bwrap: str | None
    problem: str | None = None

    def require(self, namespace: str) -> str:
        """The bubblewrap path, or `SandboxUnavailable` for the server ``namespace``."""
        if self.bwrap is None:
            raise SandboxUnavailable(f"server {namespace!r} asks for a sandbox, but {self.problem}")
        return self.bwrap


_lock = threading.Lock()
_answer: Support | None = None


def _probe() -> Support:
    if not sys.platform.startswith("linux"):
        return Support(None, f"sandboxes are built with bubblewrap, on Linux only (this is {sys.platform})")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return Support(None, f"bubblewrap (bwrap) is not installed: {_INSTALL}")
    probe = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--die-with-parent"]
    probe += ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=_PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Support(None, f"bubblewrap ({bwrap}) could not be run: {exc}")
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        return Support(
            None,
            f"bubblewrap cannot make namespaces here ({said[-1] if said else f'exit {done.returncode}'}): "
            "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
            "user.max_user_namespaces > 0, or an AppArmor profile for bwrap), or run in a VM or "
            "container that permits them",
        )
    return Support(bwrap)


def sandbox_support() -> Support:
    """This machine's answer (probed on the first call; blocking: call it off the loop)."""
    global _answer
    with _lock:
        if _answer is None:
            _answer = _probe()
        return _answer
