"""`Boundary`: one start of one sandboxed server — its folders, its cgroup, its route through
the egress proxy, and the command line that runs it inside bubblewrap.

`build_boundary` makes it and `Boundary.close` takes it down; both block (file system, the
probe of bubblewrap, the package manager's configuration, the proxy's thread), so the transport
calls them on a worker thread, once per process it starts: a restart builds a new one.
Owned by the transport's session (the server actor's); nothing in it is shared but the proxy,
which `SharedProxy` starts for the first route and stops after the last.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from actors.sandbox.bwrap import EGRESS_SOCKET, Layout, bwrap_argv
from actors.sandbox.host_view import command_paths, secret_paths, system_entries
from actors.sandbox.hosts import AllowList
from actors.sandbox.limits import AppliedLimits, Limiter
from actors.sandbox.profile import SandboxProfile
from actors.sandbox.registries import package_registry
from actors.sandbox.support import sandbox_support

if TYPE_CHECKING:
    from actors.sandbox.egress import EgressProxy, EgressRoute, StartLoop

__all__ = ["BRIDGE_PORT", "Boundary", "SharedProxy", "build_boundary", "data_folder", "describe", "summary"]

logger = logging.getLogger(__name__)

BRIDGE_PORT = 3128
"""The loopback port inside the sandbox where the bridge takes proxy connections."""
_BRIDGE = Path(__file__).with_name("bridge.py")
# What the command needs of the host's environment to run, besides the entry's own ``env``.
_PASSED = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME", "MCP_ACTORS_SERVING")
_PROXY_NAMES = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "http_proxy",
    "https_proxy",
    "npm_config_proxy",
    "npm_config_https_proxy",
)
_limiter = Limiter()


def data_folder(state: Path, namespace: str) -> Path:
    """The server's own writable folder (its HOME): ``<state>/servers/<namespace>/data``."""
    return state / "servers" / namespace / "data"


class SharedProxy:
    """The egress proxy of this process: started with its first route, stopped after its last
    (so that no thread outlives the sandboxes that need it), on a thread ``start_loop`` starts.
    Thread-safe."""

    def __init__(self, start_loop: StartLoop) -> None:
        self._start_loop = start_loop
        self._lock = threading.Lock()
        self._proxy: EgressProxy | None = None
        self._routes = 0

    def open_route(self, namespace: str, allow: AllowList, socket_path: Path) -> EgressRoute:
        with self._lock:
            if self._proxy is None:
                from actors.sandbox.egress import EgressProxy  # noqa: PLC0415 - only where a server needs it

                proxy = EgressProxy(self._start_loop)
                proxy.start()
                self._proxy = proxy
            try:
                route = self._proxy.open_route(namespace, allow, socket_path)
            except BaseException:
                if self._routes == 0:
                    self._stop()
                raise
            self._routes += 1
            return route

    def close_route(self, route: EgressRoute) -> None:
        with self._lock:
            route.close()
            self._routes -= 1
            if self._routes == 0:
                self._stop()

    def _stop(self) -> None:
        proxy, self._proxy = self._proxy, None
        if proxy is not None:
            proxy.close()


@dataclass
class Boundary:
    """One sandboxed start: what runs it, and what to take down after it."""

    namespace: str
    argv: list[str]
    """``bwrap ... -- command``: run it through the launch wrapper with `wrapper_options`."""
    wrapper_options: list[str]
    """``--join=...`` and ``--rlimit=...`` for `actors.mcp.pdeathsig`."""
    limits: AppliedLimits
    data: Path
    proxy: SharedProxy | None = None
    route: EgressRoute | None = None
    _socket_dir: str | None = None
    _closed: bool = field(default=False, repr=False)

    def close(self) -> None:
        """Kill what is left in its cgroup, remove the cgroup, close its route. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self.limits.group is not None:
            self.limits.group.remove()
        if self.route is not None and self.proxy is not None:
            denied = len(self.route.denials)
            self.proxy.close_route(self.route)
            if denied:
                logger.info("sandbox %s: %d egress connections denied this run", self.namespace, denied)
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)


def _network(
    namespace: str, profile: SandboxProfile, executable: str, args: Sequence[str], environ: Mapping[str, str]
) -> tuple[AllowList | None, dict[str, str]]:
    """The hosts to reach through the proxy (None: no route) and the runner's registry env."""
    if profile.network == "all":
        return None, {}
    entries = list(profile.network) if isinstance(profile.network, tuple) else []
    env: dict[str, str] = {}
    if profile.registry:
        registry = package_registry(executable, args, environ)
        if registry is not None:
            hosts = ", ".join(registry.hosts)
            logger.info("sandbox %s: its package registry %s is reachable", namespace, hosts)
            entries += registry.hosts
            env.update(registry.env)
    return (AllowList.parse(entries) if entries else None), env


def _declared(
    namespace: str, paths: Sequence[str], base: str, what: str, exists: Callable[[str], bool]
) -> list[str]:
    """The profile's ``read`` or ``write`` paths made absolute; `ValueError` for a missing one."""
    found = []
    for path in paths:
        full = os.path.abspath(os.path.join(base, os.path.expanduser(path)))
        if not exists(full):
            raise ValueError(f"sandbox of {namespace!r}: the {what} {full!r} does not exist")
        found.append(full)
    return found


def build_boundary(
    namespace: str,
    profile: SandboxProfile,
    executable: str,
    args: Sequence[str],
    env: Mapping[str, str] | None,
    cwd: str | None,
    *,
    state: Path,
    proxy: SharedProxy | None = None,
    environ: Mapping[str, str] | None = None,
) -> Boundary:
    """Build the sandbox of one start of ``namespace``'s server (``executable``: the resolved
    command). Raises `SandboxUnavailable` when this machine cannot build one, `ValueError` for
    a profile that names what is not there."""
    bwrap = sandbox_support().require(namespace)
    environ = os.environ if environ is None else environ
    launch_cwd = os.getcwd()
    home = os.path.expanduser("~")
    state_path = os.path.abspath(state)
    protected = (home, state_path)
    data = data_folder(Path(state_path), namespace)
    data.mkdir(parents=True, exist_ok=True, mode=0o700)
    writes = [str(data), *_declared(namespace, profile.write, launch_cwd, "writable folder", os.path.isdir)]
    # Arguments that name the host's files keep naming them from the sandbox's working folder.
    args = [
        os.path.abspath(os.path.join(launch_cwd, a))
        if not os.path.isabs(a) and not a.startswith("-") and os.path.exists(os.path.join(launch_cwd, a))
        else a
        for a in args
    ]
    inside_cwd = os.path.abspath(os.path.join(launch_cwd, cwd)) if cwd else str(data)
    search_path = (env or {}).get("PATH", environ.get("PATH", os.defpath))
    reads = list(command_paths(executable, args, launch_cwd, search_path, protected))
    if cwd:
        reads.append(inside_cwd)
    reads += _declared(namespace, profile.read, launch_cwd, "readable path", os.path.exists)
    # The entry's env is what the runner inside sees: its registry variables count.
    allow, registry_env = _network(namespace, profile, executable, args, {**environ, **(env or {})})
    command = [executable, *args]
    if allow is not None:
        reads += command_paths(sys.executable, [str(_BRIDGE)], launch_cwd, search_path, ())
        command = [
            sys.executable,
            "-I",
            "-S",
            str(_BRIDGE),
            "--listen",
            str(BRIDGE_PORT),
            "--unix",
            EGRESS_SOCKET,
            "--",
            *command,
        ]
    inside_env = {name: environ[name] for name in _PASSED if name in environ}
    inside_env |= {name: environ[name] for name in profile.env if name in environ}
    inside_env |= {"HOME": str(data), "TMPDIR": "/tmp"} | registry_env | dict(env or {})
    if allow is not None:
        proxy_url = f"http://127.0.0.1:{BRIDGE_PORT}"
        # Everything through the proxy, loopback included: inside, loopback is the sandbox's own,
        # and a host's loopback service is reached only as an entry of the list. Node 24+ reads
        # the proxy variables in its own fetch only when asked to.
        inside_env |= dict.fromkeys(_PROXY_NAMES, proxy_url) | {"NO_PROXY": "", "no_proxy": ""}
        inside_env.setdefault("NODE_USE_ENV_PROXY", "1")
    reads = [r for r in dict.fromkeys(reads) if r not in writes]
    masked_dirs, masked_files = secret_paths(reads, home, state_path, environ)
    limits = _limiter.build(namespace, profile.limits)
    boundary = Boundary(namespace, [], [], limits, data, proxy)
    try:
        socket_path: str | None = None
        if allow is not None:
            if proxy is None:
                raise ValueError(f"sandbox of {namespace!r}: its network list needs the egress proxy")
            boundary._socket_dir = tempfile.mkdtemp(prefix="mcpa-egress-")
            socket_path = os.path.join(boundary._socket_dir, "egress.sock")
            boundary.route = proxy.open_route(namespace, allow, Path(socket_path))
        layout = Layout(
            command=tuple(command),
            system=system_entries(),
            read=tuple(reads),
            masked_dirs=masked_dirs,
            masked_files=masked_files,
            write=tuple(writes),
            cwd=inside_cwd,
            env=inside_env,
            share_network=profile.network == "all",
            egress_socket=socket_path,
        )
        boundary.argv = bwrap_argv(bwrap, layout)
        boundary.wrapper_options = [
            *(f"--join={procs}" for procs in (limits.group.procs_files if limits.group else ())),
            *(f"--rlimit={name}:{value}" for name, value in limits.rlimits),
        ]
    except BaseException:
        boundary.close()
        raise
    logger.debug("sandbox %s: %s", namespace, " ".join(boundary.argv))
    return boundary


def summary(profile: SandboxProfile | None) -> str:
    """The boundary in a few words, for a table: ``sandbox (no network)``, ``none``, or
    ``REFUSED (...)`` where this machine cannot build one."""
    if profile is None:
        return "none"
    if sandbox_support().bwrap is None:
        return "REFUSED (no bubblewrap)"
    if profile.network == "none":
        return "sandbox (no network)"
    if profile.network == "all":
        return "sandbox (host network)"
    return f"sandbox ({len(profile.network)} hosts)"


def describe(profile: SandboxProfile | None, *, probe: bool = True) -> str:
    """The effective boundary in one line, for ``check`` and ``status``."""
    if profile is None:
        return "none: runs with the host's authority"
    if probe:
        support = sandbox_support()
        if support.bwrap is None:
            return f"REFUSED: {support.problem}"
    network = profile.network
    if network == "none":
        net = "no network" + (" (its package registry when a runner installs)" if profile.registry else "")
    elif network == "all":
        net = "the host's whole network"
    else:
        net = "only " + ", ".join(network) + " (through the egress proxy)"
    writes = ", ".join(["its data folder", "a private /tmp", *profile.write])
    limits = profile.limits
    spent = [
        f"memory {limits.memory // 1024**2} MiB" if limits.memory else "memory unlimited",
        f"{limits.processes} processes" if limits.processes else "processes unlimited",
        f"{limits.open_files} open files" if limits.open_files else "open files unlimited",
        f"{limits.cpu_seconds} CPU s" if limits.cpu_seconds else "CPU time unlimited",
    ]
    extra = f"; reads also {', '.join(profile.read)}" if profile.read else ""
    passed = f"; env also {', '.join(profile.env)}" if profile.env else ""
    return f"bubblewrap: {net}; writes {writes}{extra}{passed}; {', '.join(spent)}"
