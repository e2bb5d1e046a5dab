"""Config reload: ``mcp-actors serve --watch`` and SIGHUP.

A reload reads the file again and changes only what changed: a server added to the file is
registered, a removed one stopped and unregistered, a changed one (its `ServerConfig`, or its
keys in the gateway's or the cluster's section, differ) unregistered and registered again with
its new config. The others, and their calls in flight, are not touched. A file that no longer
loads is reported and the running config kept.
Clients are told the lists changed.

Everything here runs on the reloader's own thread: reading the file, and waiting on the
runtime (`Runtime.register_server` and `Runtime.unregister_server` block until the registry
answers). The signal handler only wakes that thread.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from actors.config import ConfigError, RuntimeConfig, load_config
from actors.gateway.access.policy_file import load_policy, policy_file
from actors.gateway.gateway import Gateway

if TYPE_CHECKING:
    from actors.gateway.access.policy import Policy

__all__ = ["ConfigReloader", "ReloadOutcome", "ReloadPlan", "plan_reload"]

logger = logging.getLogger(__name__)

_THREAD_NAME = "mcp-actors-reload"
_Stat = tuple[int, int, int] | None
_JOIN_TIMEOUT = 30.0


@dataclass(frozen=True)
class ReloadPlan:
    """What a reload changes: namespaces added, removed and changed (restarted)."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    def __str__(self) -> str:
        parts = [
            f"{what} {', '.join(names)}"
            for what, names in (("added", self.added), ("removed", self.removed), ("restarted", self.changed))
            if names
        ]
        return "; ".join(parts) or "no server changed"


def plan_reload(running: RuntimeConfig, wanted: RuntimeConfig) -> ReloadPlan:
    """What turns the ``running`` servers into the ``wanted`` ones."""
    old, new = running.servers, wanted.servers

    def keys(config: RuntimeConfig, ns: str) -> tuple[object, ...]:
        return (config.servers[ns], config.gateway.servers.get(ns), config.cluster.servers.get(ns))

    return ReloadPlan(
        added=tuple(sorted(new.keys() - old.keys())),
        removed=tuple(sorted(old.keys() - new.keys())),
        changed=tuple(sorted(ns for ns in old.keys() & new.keys() if keys(running, ns) != keys(wanted, ns))),
    )


@dataclass(frozen=True)
class ReloadOutcome:
    """What one reload did."""

    plan: ReloadPlan
    problem: str | None = None
    """Why the file did not load (nothing was changed then)."""
    failed: tuple[str, ...] = ()
    """Servers the runtime would not (un)register, each with why: tried again at the next reload."""

    @property
    def ok(self) -> bool:
        return self.problem is None and not self.failed


class ConfigReloader:
    """Reloads a gateway's config file on request (SIGHUP) and, with ``watch``, when the file
    changes (its modification time, size or inode, polled every ``interval`` seconds).

    ``on_reload(outcome)`` is called on the reloader's thread after each reload.
    """

    def __init__(
        self,
        gateway: Gateway,
        path: str | os.PathLike[str],
        *,
        watch: bool = False,
        interval: float = 1.0,
        on_reload: Callable[[ReloadOutcome], None] | None = None,
    ) -> None:
        self.gateway = gateway
        self.path = os.fspath(path)
        self.watch = watch
        self.interval = interval
        self._on_reload = on_reload
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._seen = self._signature()
        self._thread: threading.Thread | None = None

    def start(self) -> ConfigReloader:
        """Start the thread that reloads on request (and watches the file, with ``watch``)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=_THREAD_NAME, daemon=True)
            self._thread.start()
        return self

    def request(self) -> None:
        """Reload soon, on the reloader's thread: what a signal handler calls."""
        self._wake.set()

    def stop(self, timeout: float = _JOIN_TIMEOUT) -> None:
        """Stop the thread (a reload under way finishes first). Idempotent."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
            if self._thread.is_alive():
                logger.warning("reload: the reloader did not stop within %.0fs", timeout)

    def _run(self) -> None:
        while not self._stopping.is_set():
            asked = self._wake.wait(self.interval)
            if self._stopping.is_set():
                return
            if asked:
                self._wake.clear()
            elif not (self.watch and self._signature() != self._seen):
                continue
            try:
                self.reload()
            except Exception:
                # The thread must outlive any one reload: the next change is tried afresh.
                logger.exception("reload: %s could not be reloaded", self.path)

    def _signature(self) -> tuple[_Stat, _Stat]:
        """The config file's, and the policy file's it names: a change of either reloads."""
        policy = policy_file(self.gateway.config)
        return (_stat(self.path), _stat(policy) if policy is not None else None)

    def reload(self) -> ReloadOutcome:
        """Read the file and apply what changed, now, on the caller's thread (never an event
        loop's: it waits on the runtime). One reload at a time."""
        with self._lock:
            self._seen = self._signature()
            try:
                wanted = load_config(self.path)
                policy = load_policy(wanted)
            except ConfigError as exc:
                logger.error("reload: %s does not load; the running config is kept:\n%s", self.path, exc)
                outcome = ReloadOutcome(ReloadPlan(), problem=str(exc))
            else:
                outcome = self._apply(wanted, policy)
        if self._on_reload is not None:
            self._on_reload(outcome)
        return outcome

    def _apply(self, wanted: RuntimeConfig, policy: Policy | None) -> ReloadOutcome:
        gateway = self.gateway
        running = gateway.config
        # The new policy first: every request from now on is decided by it, the servers'
        # requests included while they change.
        gateway.adopt_policy(policy)
        plan = plan_reload(running, wanted)
        servers = dict(running.servers)
        failed: list[str] = []
        for ns in (*plan.removed, *plan.changed):
            try:
                gateway.runtime.unregister_server(ns)
            except Exception as exc:
                failed.append(f"{ns}: not stopped: {exc}")
                continue
            del servers[ns]
        for ns in (*plan.changed, *plan.added):
            if ns in servers:
                continue  # still running its old config: it could not be stopped
            try:
                if not wanted.cluster.per_user(ns):  # a per-user server: copies, per caller
                    gateway.runtime.register_server(wanted.servers[ns])
            except Exception as exc:
                failed.append(f"{ns}: not registered: {exc}")
                continue
            servers[ns] = wanted.servers[ns]
        if wanted.builtin != running.builtin:
            logger.warning("reload: the built-in tools' settings change only when the gateway restarts")
        if wanted.access.auth != running.access.auth:
            logger.warning("reload: access.auth (the token issuer) changes only when the gateway restarts")
        # The verifier serving now was built for the running issuer: its section stays with it.
        access = wanted.access.model_copy(update={"auth": running.access.auth})
        # What runs now: a server that failed keeps its place for the next reload to try again.
        gateway.adopt(
            wanted.model_copy(update={"servers": servers, "builtin": running.builtin, "access": access})
        )
        for failure in failed:
            logger.error("reload: %s", failure)
        logger.info("reload: %s: %s", self.path, plan)
        return ReloadOutcome(plan, failed=tuple(failed))

    def __enter__(self) -> ConfigReloader:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _stat(path: str | os.PathLike[str]) -> tuple[int, int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size, stat.st_ino)
