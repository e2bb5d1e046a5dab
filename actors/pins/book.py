"""`PinBook`: the pins of one runtime's servers, in memory, kept in step with a `PinStore`.

The one owner of a runtime's pins. Its memory is guarded by a lock held only to read or swap
immutable values (`ServerPins`): no I/O, no callback and no logging happens under it, so a
server actor may `judge` a list, the registry ask what is `hidden`, and a caller `approve`,
each on its own thread. Whatever touches the store runs elsewhere:

- `load` (the caller's thread, when a server is registered) reads a server's entry once;
- the changes that judging and approving make are queued and written in order by `flush`,
  which the runtime runs on a host thread (and once more on its own thread at shutdown);
- `refresh` (a host thread, every second or so) reads the entries that changed in the store,
  approvals made by ``mcp-actors approve`` or another replica, and tells the runtime which of
  its servers' lists changed. A local change not yet written, or made while an entry was read,
  is never undone by what was read (each server's entry counts its local changes).

Without a store the pins live as long as the book: a runtime without persistent state still
catches a server that changes a tool while it runs.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from actors.mcp.config import ServerConfig
from actors.pins.decisions import Handling, Judgement, judge_seen
from actors.pins.definitions import PinKind
from actors.pins.events import Drift, PinAction, PinEvent, log_event
from actors.pins.model import Pin, PinChange, Ref, ServerPins, approved_refs
from actors.pins.store import PinStore, pin_key

__all__ = ["LIST_OF_KIND", "PinBook"]

logger = logging.getLogger(__name__)

LIST_OF_KIND: dict[PinKind, str] = {
    "tools": "tools",
    "prompts": "prompts",
    "templates": "resources",
    "skills": "resources",
}
"""The list (as the runtime tells a host of list changes) each kind of pin is in."""

Job = Callable[[], object]
OnChange = Callable[[str, tuple[str, ...]], None]


_KEYS_KEPT = 1024


def _at_once(job: Job) -> object:
    return job()


def _call(fn: Callable[..., Any], *args: Any) -> None:
    fn(*args)


@dataclass
class _Server:
    """One server's pins as this book knows them (guarded by the book's lock)."""

    pins: ServerPins
    configs: dict[str, ServerConfig] = field(default_factory=dict)
    """The namespaces it is registered under, with their configs (their ``pin`` mode)."""
    signature: Hashable = None
    """The store's signature of its entry when last read or written."""
    version: int = 0
    """How many local changes were made."""
    pending: int = 0
    """How many of them are not written yet."""


class PinBook:
    """The pins of a runtime's servers (see the module). ``store``: where they outlive the
    process (None: memory only); ``now``: the wall clock pins are stamped with."""

    def __init__(self, store: PinStore | None = None, *, now: Callable[[], float] = time.time) -> None:
        self.store = store
        self._now = now
        self._lock = threading.Lock()
        self._servers: dict[str, _Server] = {}
        self._writes: collections.deque[tuple[str, str, PinChange, int]] = collections.deque()
        self._writing = threading.Lock()
        self._run_io: Callable[[Job], object] = _at_once
        self._notify: Callable[..., None] = _call
        self._on_change: OnChange | None = None
        self._listeners: list[Callable[[PinEvent], None]] = []
        # id(config) -> (config, its pin key): a key is a digest of the config, and `hidden` is
        # asked on every call. The config is kept so that its id is not reused meanwhile. Any
        # thread, unlocked: a cache of a pure function, each entry written whole.
        self._keys: dict[int, tuple[ServerConfig, str]] = {}

    def _key(self, config: ServerConfig) -> str:
        known = self._keys.get(id(config))
        if known is not None and known[0] is config:
            return known[1]
        if len(self._keys) >= _KEYS_KEPT:  # reloads make new configs: never grow without bound
            self._keys.clear()
        key = self._keys[id(config)] = (config, pin_key(config))
        return key[1]

    def attach(
        self,
        run_io: Callable[[Job], object],
        notify: Callable[..., None],
        on_change: OnChange | None = None,
    ) -> None:
        """Where the store's I/O runs (``run_io(job)``: a host thread), where events and list
        changes are told (``notify(fn, *args)``: in order, off the caller's thread), and who
        is told that a server's lists changed (``on_change(namespace, lists)``: the runtime)."""
        self._run_io, self._notify, self._on_change = run_io, notify, on_change

    def listen(self, listener: Callable[[PinEvent], None]) -> None:
        """Call ``listener(event)`` (through ``notify``) for every change held, re-pinned or approved."""
        with self._lock:
            self._listeners.append(listener)

    # ---- reading ---------------------------------------------------------------------------

    def load(self, config: ServerConfig) -> None:
        """Know ``config``'s server: its entry is read from the store once (file or Redis I/O:
        the caller's thread, where the server is registered)."""
        key = self._key(config)
        with self._lock:
            if (known := self._servers.get(key)) is not None:
                known.configs[config.name] = config
                return
        stored, signature = None, None
        if self.store is not None:
            signature = self.store.signature(key)
            stored = self.store.load(key)
        with self._lock:
            server = self._servers.setdefault(key, _Server(stored or ServerPins(config.name), {}, signature))
            server.configs[config.name] = config

    def pins(self, config: ServerConfig) -> ServerPins:
        """``config``'s server's pins and held definitions as known now."""
        with self._lock:
            server = self._servers.get(self._key(config))
            return server.pins if server is not None else ServerPins(config.name)

    def hidden(self, config: ServerConfig) -> frozenset[Ref]:
        """What of ``config``'s server is hidden and refused: its held definitions, in ``block`` mode."""
        if config.pin != "block":
            return frozenset()
        with self._lock:
            server = self._servers.get(self._key(config))
            return frozenset(server.pins.held) if server is not None else frozenset()

    def held(self, namespace: str | None = None) -> list[Drift]:
        """The held definitions (of servers in ``block`` mode), of every namespace or one."""
        with self._lock:
            servers = [(s.pins, dict(s.configs)) for s in self._servers.values()]
        found = []
        for pins, configs in servers:
            for ns, config in sorted(configs.items()):
                if config.pin == "block" and namespace in (None, ns):
                    found += [
                        Drift(ns, kind, name, pins.pinned.get((kind, name)), held)
                        for (kind, name), held in sorted(pins.held.items())
                    ]
        return found

    # ---- judging and approving -------------------------------------------------------------

    def judge(
        self, config: ServerConfig, kind: PinKind, listed: dict[str, dict[str, Any]], *, whole: bool = True
    ) -> Judgement:
        """Judge what ``config``'s server listed of ``kind`` (definitions by name) by its
        ``pin`` mode: new names are pinned, changed ones held (or re-pinned), each logged
        here and told to the listeners. Any thread, no I/O: the change is written later. What
        it holds changing tells the runtime its list changed (an annotation alone may have).
        ``whole``: ``listed`` is the whole list (what it no longer holds is no longer held);
        else some of it (one skill asked for by its URI)."""
        if config.pin == "off":
            return Judgement(kind, (), PinChange())
        key, now = self._key(config), self._now()
        seen = {name: Pin.of(definition, now) for name, definition in listed.items()}  # before the lock
        with self._lock:
            server = self._server(key, config)
            before = {ref for ref in server.pins.held if ref[0] == kind}
            judgement = judge_seen(server.pins, config.pin, kind, seen, now, whole=whole)
            write = bool(judgement.change) and self._changed(key, server, config.name, judgement.change)
            moved = before != {ref for ref in server.pins.held if ref[0] == kind}
            namespaces = list(server.configs)
        if write:
            self._run_io(self.flush)
        if moved:
            self._lists_changed(namespaces, {kind})
        events = [
            PinEvent(
                PinAction.HELD if verdict.action is Handling.HOLD else PinAction.REPINNED,
                Drift(config.name, kind, verdict.ref[1], verdict.pinned, verdict.seen),
            )
            for verdict in judgement.drifted
        ]
        self._tell(events)
        return judgement

    def approve(self, config: ServerConfig, names: Iterable[str] = ()) -> list[Drift]:
        """Approve the held definitions of ``config``'s server named ``names`` (of any kind;
        none: every one): each becomes its pin, offered again. What was approved."""
        names = frozenset(names)
        key = self._key(config)
        with self._lock:
            server = self._server(key, config)
            pins = server.pins
            refs = approved_refs(pins.held, names, not names)
            change = PinChange(approve=names, approve_all=not names, at=self._now())
            write = bool(refs) and self._changed(key, server, config.name, change)
            namespaces = list(server.configs)
        if write:
            self._run_io(self.flush)
        drifts = [
            Drift(config.name, kind, name, pins.pinned.get((kind, name)), pins.held[kind, name])
            for kind, name in refs
        ]
        self._tell([PinEvent(PinAction.APPROVED, drift) for drift in drifts])
        self._lists_changed(namespaces, {kind for kind, _ in refs})
        return drifts

    def _server(self, key: str, config: ServerConfig) -> _Server:
        """The entry of ``key`` (the lock held), made if new (a server judged before it was loaded)."""
        server = self._servers.get(key)
        if server is None:
            server = self._servers[key] = _Server(ServerPins(config.name))
        server.configs[config.name] = config  # the latest: a reload may change its mode
        return server

    def _changed(self, key: str, server: _Server, namespace: str, change: PinChange) -> bool:
        """Make ``change`` in memory and queue it for the store (the lock held); whether a
        `flush` is owed (run it once the lock is released)."""
        server.pins = server.pins.apply(change, namespace)
        server.version += 1
        if self.store is None:
            return False
        server.pending += 1
        self._writes.append((key, namespace, change, server.version))
        return True

    # ---- the store's side: a host thread ---------------------------------------------------

    def flush(self) -> None:
        """Write the queued changes to the store, in order (a host thread; the runtime's own
        at shutdown)."""
        if self.store is None:
            return
        with self._writing:
            while True:
                with self._lock:
                    if not self._writes:
                        return
                    key, namespace, change, version = self._writes.popleft()
                try:
                    stored = self.store.apply(key, namespace, change)
                    signature = self.store.signature(key)
                except OSError as exc:
                    logger.error("pins: cannot keep the pins of %s: %s", namespace, exc)
                    stored = None
                with self._lock:
                    self._servers[key].pending -= 1
                if stored is not None:
                    self._adopt(key, stored, signature, version)

    def refresh(self) -> None:
        """Read the entries that changed in the store since last read (a host thread)."""
        if self.store is None:
            return
        with self._lock:
            known = [(key, s.signature, s.version) for key, s in self._servers.items() if not s.pending]
        for key, seen, version in known:
            signature = self.store.signature(key)
            if signature != seen:
                self._adopt(key, self.store.load(key), signature, version)

    def _adopt(self, key: str, stored: ServerPins | None, signature: Hashable, version: int) -> None:
        """Take ``stored`` as the pins of ``key``, unless changed here since it was read (or a
        change waits to be written); tell which lists changed, and of approvals made elsewhere."""
        with self._lock:
            server = self._servers[key]
            if server.version != version or server.pending:
                return
            before, server.signature = server.pins, signature
            server.pins = stored if stored is not None else ServerPins(before.server)
            after = server.pins
            namespaces = list(server.configs)
        if before == after:
            return
        moved = before.held.keys() ^ after.held.keys()
        approved = [
            ref
            for ref in before.held.keys() - after.held.keys()
            if (pin := after.pinned.get(ref)) is not None and pin.digest == before.held[ref].digest
        ]
        self._tell(
            [
                PinEvent(
                    PinAction.APPROVED,
                    Drift(after.server, kind, name, before.pinned.get((kind, name)), before.held[kind, name]),
                )
                for kind, name in approved
            ]
        )
        self._lists_changed(namespaces, {kind for kind, _ in moved})

    # ---- telling ---------------------------------------------------------------------------

    def _tell(self, events: list[PinEvent]) -> None:
        """Log ``events`` (here) and hand them to the listeners (through ``notify``)."""
        with self._lock:
            listeners = list(self._listeners)
        for event in events:
            log_event(event)
            for listener in listeners:
                self._notify(listener, event)

    def _lists_changed(self, namespaces: list[str], kinds: set[PinKind]) -> None:
        if self._on_change is None or not kinds:
            return
        lists = tuple(sorted({LIST_OF_KIND[kind] for kind in kinds}))
        for namespace in namespaces:
            self._notify(self._on_change, namespace, lists)
