"""`PinStore`: where pins outlive a process; `FilePinStore`: a folder of JSON files, one per server.

An entry is keyed by what makes a server the same server (`pin_key`: transport, command,
arguments, the names of its environment variables, working folder, URL): the schema cache's
identity, without the tool filter (which tools are shown is the host's choice, not something
the server says: widening a filter must not forget what was pinned). Secrets never enter it:
only the names of environment variables. Each entry also names the namespace it was last seen
under, so that the command line finds a server's pins by namespace (`find`).

Every write is a `PinChange` applied under an exclusive lock (``fcntl.flock`` on the folder's
``.lock``) to the entry as it is on disk, then written atomically (a temporary file renamed over
it): a runtime pinning a new tool and ``mcp-actors approve`` in another process never undo each
other. Reads and writes are file I/O: called on the caller's thread (loading, the command line)
or a host thread (the runtime's writes and refreshes), never on the event loop or an actor.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import tempfile
import time
from collections.abc import Hashable, Iterator
from pathlib import Path

from actors.mcp.config import ServerConfig
from actors.mcp.identity import identity_key
from actors.mcp.state import state_dir
from actors.pins.model import PinChange, ServerPins

__all__ = ["LOCK_TIMEOUT", "PINS_DIR_ENV", "FilePinStore", "PinStore", "default_pin_folder", "pin_key"]

logger = logging.getLogger(__name__)

PINS_DIR_ENV = "MCP_ACTORS_PINS_DIR"
"""Moves the pins folder (else ``pins/`` in the state folder)."""
LOCK_TIMEOUT = 10.0
"""Seconds a write waits, at most, for another process's write to the same folder."""
_LOCK_POLL = 0.01


def default_pin_folder() -> Path:
    """``$MCP_ACTORS_PINS_DIR``, else ``pins/`` in the state folder (`actors.mcp.state.state_dir`)."""
    explicit = os.environ.get(PINS_DIR_ENV)
    return Path(explicit).expanduser() if explicit else state_dir() / "pins"


def pin_key(config: ServerConfig) -> str:
    """What makes two configurations the same server, for its pins (see the module)."""
    return identity_key(config)


class PinStore:
    """Pins kept beyond a process. The base keeps nothing (every load is empty): subclasses
    (`FilePinStore`, the cluster's Redis store) keep them."""

    def load(self, key: str) -> ServerPins | None:
        """The pins of the server of ``key``, or None if none were kept."""
        return None

    def apply(self, key: str, server: str, change: PinChange) -> ServerPins:
        """Make ``change`` to the kept pins of ``key`` (server ``server``); the pins after it."""
        return (self.load(key) or ServerPins(server)).apply(change, server)

    def signature(self, key: str) -> Hashable:
        """A value that changes whenever the entry of ``key`` does (cheap: polled)."""
        return None

    def find(self, namespace: str) -> list[str]:
        """The keys of the entries last seen under ``namespace``."""
        return []


class FilePinStore(PinStore):
    """A folder of ``<key>.json`` files (default: `default_pin_folder`)."""

    def __init__(self, folder: str | os.PathLike[str] | None = None) -> None:
        self.folder = Path(folder) if folder is not None else default_pin_folder()

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def load(self, key: str) -> ServerPins | None:
        path = self.path(key)
        try:
            return ServerPins.from_json(json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            logger.error("pins: cannot read %s (%s): its definitions count as never pinned", path, exc)
            return None

    def apply(self, key: str, server: str, change: PinChange) -> ServerPins:
        with self._locked():
            before = self.load(key)
            if before is None and self.path(key).exists():
                self._set_aside(self.path(key))
            after = (before or ServerPins(server)).apply(change, server)
            self.write(key, after)
        return after

    def write(self, key: str, pins: ServerPins) -> None:
        """Write the entry of ``key`` whole, atomically (its lock held by the caller, if it matters)."""
        self.write_text(key, json.dumps(pins.to_json(), ensure_ascii=False, indent=1, sort_keys=True))

    def write_text(self, key: str, text: str) -> None:
        """Write ``text`` as the entry of ``key`` unless it holds it already (atomically)."""
        path = self.path(key)
        with contextlib.suppress(OSError):
            if path.read_text(encoding="utf-8") == text:
                return
        self.folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", dir=self.folder, prefix=".tmp-", suffix=".json", delete=False
        ) as handle:
            handle.write(text)
        os.replace(handle.name, path)

    def signature(self, key: str) -> Hashable:
        try:
            stat = self.path(key).stat()
        except OSError:
            return None
        return (stat.st_mtime_ns, stat.st_size, stat.st_ino)

    def find(self, namespace: str) -> list[str]:
        found = []
        for path in sorted(self.folder.glob("*.json")):
            try:
                server = json.loads(path.read_text(encoding="utf-8")).get("server")
            except (OSError, ValueError, AttributeError):
                continue
            if server == namespace:
                found.append(path.stem)
        return found

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The folder's lock, exclusive: other processes wait for it, at most `LOCK_TIMEOUT`
        (then `TimeoutError`, an `OSError`). The kernel drops a dead holder's lock."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with (self.folder / ".lock").open("a") as lock:
            deadline = time.monotonic() + LOCK_TIMEOUT
            while True:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise TimeoutError(f"the pins folder {self.folder} stayed locked") from None
                    time.sleep(_LOCK_POLL)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    @staticmethod
    def _set_aside(path: Path) -> None:
        """Keep a broken entry beside the new one, for whoever wants to know what it held."""
        aside = path.with_name(f"{path.name}.broken-{int(time.time())}")
        with contextlib.suppress(OSError):
            os.replace(path, aside)
            logger.error("pins: %s was unreadable; kept as %s", path, aside.name)
