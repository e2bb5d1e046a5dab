"""`bwrap_argv`: the bubblewrap command line for one sandboxed server, from a `Layout`.

Pure: the `Layout` says what the sandbox holds (read by `actors.sandbox.host_view` from the
host, off the event loop); this module only orders it into options. The order is bubblewrap's
mount order, so later entries cover earlier ones: the system, what the server may read, masks
over secrets inside those, then its writable folders (which a mask never hides).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["EGRESS_SOCKET", "Layout", "SystemEntry", "bwrap_argv"]

EGRESS_SOCKET = "/run/mcp-actors/egress.sock"
"""Where the egress proxy's socket appears inside the sandbox."""

# Every namespace but the user's mapping and the network (chosen per profile); no capability,
# no new user namespaces (they would let the server rearrange its own mounts), its own session
# (no terminal to inject keystrokes into), and it dies with the process that started it.
_LOCKDOWN = (
    "--die-with-parent",
    "--new-session",
    "--unshare-user",
    "--disable-userns",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--hostname",
    "sandbox",
    "--cap-drop",
    "ALL",
)


@dataclass(frozen=True)
class SystemEntry:
    """A top-level system path: a folder bound read-only, or a symlink made again (``/bin``
    -> ``usr/bin`` on merged-/usr systems)."""

    path: str
    symlink_to: str | None = None


@dataclass(frozen=True)
class Layout:
    """What one sandbox holds, as absolute paths of the host."""

    command: tuple[str, ...]
    """The argv run inside (the bridge first when the server reaches the proxy)."""
    system: tuple[SystemEntry, ...]
    read: tuple[str, ...] = ()
    """Bound read-only at the same path: the command's own files, the profile's ``read``."""
    masked_dirs: tuple[str, ...] = ()
    """Covered by an empty tmpfs: secrets inside a folder it may read."""
    masked_files: tuple[str, ...] = ()
    """Covered by ``/dev/null``."""
    write: tuple[str, ...] = ()
    """Bound writable: its data folder, the profile's ``write``."""
    cwd: str = "/"
    env: Mapping[str, str] = field(default_factory=dict)
    share_network: bool = False
    egress_socket: str | None = None
    """The host path of its route through the egress proxy, bound at `EGRESS_SOCKET`."""
    tmp_bytes: int | None = None
    """The private /tmp's size; None: the kernel's default (half the memory)."""


def bwrap_argv(bwrap: str, layout: Layout) -> list[str]:
    """``bwrap ... -- command``: the whole command line."""
    argv = [bwrap, *_LOCKDOWN]
    if not layout.share_network:
        argv.append("--unshare-net")
    for entry in layout.system:
        if entry.symlink_to is not None:
            argv += ["--symlink", entry.symlink_to, entry.path]
        else:
            argv += ["--ro-bind", entry.path, entry.path]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    if layout.tmp_bytes is not None:
        argv += ["--size", str(layout.tmp_bytes)]
    argv += ["--tmpfs", "/tmp"]
    for path in layout.read:
        argv += ["--ro-bind-try", path, path]
    for path in layout.masked_dirs:
        argv += ["--tmpfs", path]
    for path in layout.masked_files:
        argv += ["--ro-bind", "/dev/null", path]
    for path in layout.write:
        argv += ["--bind", path, path]
    if layout.egress_socket is not None:
        argv += ["--bind", layout.egress_socket, EGRESS_SOCKET]
    # The root is bubblewrap's own tmpfs, holding the folders made for the mounts: read-only,
    # so that a write anywhere but the writable mounts fails instead of vanishing at exit.
    argv += ["--remount-ro", "/", "--chdir", layout.cwd, "--clearenv"]
    for name, value in sorted(layout.env.items()):
        argv += ["--setenv", name, value]
    argv += ["--", *layout.command]
    return argv
