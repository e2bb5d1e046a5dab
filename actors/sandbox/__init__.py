"""A server's boundary: what its process may read, write, reach and spend.

On Linux through bubblewrap (new PID, IPC and network namespaces, a read-only system, the
server's own folders writable), an egress proxy for the hosts it may reach, and cgroup or
rlimit limits. The runtime builds one `Boundary` per start of a sandboxed server, off the event
loop, and tears it down with the server.
"""

from __future__ import annotations

from actors.sandbox.profile import DEFAULT_LIMITS, SandboxLimits, SandboxProfile

__all__ = ["DEFAULT_LIMITS", "SandboxLimits", "SandboxProfile"]
