"""`SchemaCache`: what each server lists (tools, resources, templates, prompts), kept on disk.

A runtime started with a cache answers lists, and checks arguments, for servers it has never
run in this process, without starting them: a gateway's ``tools/list`` stays cheap however
many servers it fronts. An entry is keyed by what makes a server the same server (transport,
command, arguments, the names of its environment variables, working folder, URL), and is
rewritten when a server is first learnt and whenever what it lists, or a list's hint, changes
(a list listed again only because it went stale is not written again).

Each list keeps when it was received (wall-clock seconds: the file outlives the process) and
its caching hint (SEP-2549). A server may list differently for clients that declare other
capabilities (sampling, elicitation, roots): the entry of a runtime that declares some is kept
apart, under the key and those capabilities' names (`entry_key`), so the command line, a host
and a gateway each read back their own list. A server that marks one of its lists ``private``
may answer another authorization context differently: its entry is stored under a key that also
covers the credentials (`context_key`: a salted, slow digest of the config's environment and header
values, its OAuth settings, and for a remote server the token store it logs in with), so only
the same credentials read it back; the shared entry of that server is removed. ``public`` and
hint-less entries stay under the shared key, which a load tries second. No secret is written
into a file.

Reads happen where the runtime is started or a server registered (the caller's thread);
writes go to a host thread (`HostCalls`), never the loop or an actor.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from actors.mcp.catalog import Catalog
from actors.mcp.config import ServerConfig
from actors.mcp.freshness import LIST_KINDS, ListFreshness, ListKind, Received
from actors.mcp.identity import identity_key
from actors.mcp.state import default_token_file
from actors.runtime.declared import Answering, declared_capabilities
from actors.tools import ToolSpec

__all__ = ["CachedLists", "SchemaCache", "default_cache_folder"]

logger = logging.getLogger(__name__)

_FORMAT = 1
"""Entries with hints are still format 1: the ``lists`` key is new and optional, so an older
runtime reads them, and this one reads theirs (as hint-less lists)."""

_DIGEST_ROUNDS = 50_000
"""PBKDF2 rounds of the credentials' digest in a private entry's name: a weak secret must not
be cheap to guess from the file name (about 20 ms, once per server and process)."""


def default_cache_folder() -> Path:
    """``$MCP_ACTORS_CACHE_DIR``, else ``$XDG_CACHE_HOME/mcp-actors/schemas`` (``~/.cache/...``)."""
    explicit = os.environ.get("MCP_ACTORS_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mcp-actors" / "schemas"


@dataclass(frozen=True)
class CachedLists:
    """One server's lists as last seen: tool specs (without handlers) and its catalog."""

    tools: tuple[ToolSpec, ...]
    catalog: Catalog
    lists: Mapping[ListKind, Received] = field(default_factory=dict)
    """Per kind of list: when it was received (wall-clock seconds) and its caching hint; empty
    for an entry written before hints were kept."""
    unstartable: bool = False
    """No lists known: the server could not start when a list last tried (lists do not wait on
    it; it is asked to start in the background)."""


class SchemaCache:
    """A folder of JSON files, one per server identity (and one per server and credentials, for
    private lists).

    With ``read=False`` it only writes: `load` knows nothing, so a runtime starts and lists
    every server live and refreshes the folder (``mcp-actors tools --no-cache``). Owned by no
    thread: it keeps no state but a memo of digests (see the module for who calls it where).
    """

    def __init__(
        self, folder: str | os.PathLike[str] | None = None, *, read: bool = True, unstartable: bool = False
    ) -> None:
        self.folder = Path(folder) if folder is not None else default_cache_folder()
        self.read = read
        self.notes_unstartable = unstartable
        """Note the servers that could not start for a list, so that a new runtime's lists do not
        wait on them: for a gateway, which tells its clients when their lists come at last (a
        one-shot command waits for every server instead, and says which failed)."""
        self._handlers: Answering | None = None
        """What the runtime that uses this cache answers server requests with: the capabilities
        it declares, and so which entry of a server it reads and writes (`declare`)."""
        self._digests: dict[tuple[str, str], str] = {}
        """(server key, credentials as JSON) → their digest: computed once per process (any
        thread; a race computes it twice)."""

    @staticmethod
    def key(config: ServerConfig) -> str:
        """What makes two configurations the same server (secrets left out: only env names)."""
        return identity_key(config, tools=config.tools.model_dump(mode="json"))

    def declare(self, handlers: Answering | None) -> None:
        """The runtime that uses this cache answers with ``handlers`` (set once, as it starts,
        before any entry is read): a cache serves one runtime's capabilities."""
        self._handlers = handlers

    def entry_key(self, config: ServerConfig) -> str:
        """`key`, and the capabilities this cache's runtime declares to the server, if any: what
        the server's shared entry is stored under."""
        declared = declared_capabilities(config, self._handlers)
        return self.key(config) if not declared else f"{self.key(config)}.{'+'.join(sorted(declared))}"

    def context_key(self, config: ServerConfig) -> str:
        """`key` and the authorization context: what a ``private`` list is stored under.

        The credentials are the values of the config's environment and headers, its OAuth
        settings, and for a remote server the token store it logs in with (the default store's
        file: who is logged in there is that store's business). Only their digest, salted with
        the server's key, is kept, and only in a file name.
        """
        shared = self.key(config)
        credentials = json.dumps(_credentials(config), sort_keys=True)
        digest = self._digests.get((shared, credentials))
        if digest is None:
            derived = hashlib.pbkdf2_hmac("sha256", credentials.encode(), shared.encode(), _DIGEST_ROUNDS)
            digest = self._digests[shared, credentials] = derived.hex()[:24]
        return f"{self.entry_key(config)}-{digest}"

    def _path(self, config: ServerConfig) -> Path:
        """Where the shared entry of ``config``'s server lives."""
        return self.folder / f"{self.entry_key(config)}.json"

    def _context_path(self, config: ServerConfig) -> Path:
        """Where the private entry of ``config``'s server, for its credentials, lives."""
        return self.folder / f"{self.context_key(config)}.json"

    def _unstartable_path(self, config: ServerConfig) -> Path:
        return self.folder / f"{self.key(config)}.unstartable"

    def note_unstartable(self, config: ServerConfig) -> None:
        """Remember that ``config``'s server could not start for a list (until its lists are saved)."""
        path = self._unstartable_path(config)
        if not self.notes_unstartable:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            path.touch()
        except OSError as exc:
            logger.warning("schema cache: cannot write %s: %s", path, exc)

    def stored(self, config: ServerConfig) -> bool:
        """Whether an entry for ``config``'s server (private to its credentials, or shared) exists."""
        return self._context_path(config).is_file() or self._path(config).is_file()

    def load(self, config: ServerConfig) -> CachedLists | None:
        """The lists last seen for ``config``'s server under its namespace, or None: the entry
        private to its credentials, else the shared one."""
        if not self.read:
            return None
        found: list[CachedLists] = []
        for path in (self._context_path(config), self._path(config)):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                continue
            except (OSError, ValueError) as exc:
                logger.warning("schema cache: cannot read %s: %s", path, exc)
                continue
            if (entry := _entry(data, config.name, path)) is not None:
                found.append(entry)
        # Both may be there (a copy from elsewhere, a scope that changed): the newer wins, and
        # a stale private entry never shadows a fresher shared one.
        return max(found, key=_newest, default=None)

    def unstartable(self, config: ServerConfig) -> bool:
        """Whether ``config``'s server could not start when a list last tried (and has no lists)."""
        return self.read and self.notes_unstartable and self._unstartable_path(config).is_file()

    def save(
        self,
        config: ServerConfig,
        tools: tuple[ToolSpec, ...],
        catalog: Catalog,
        lists: Mapping[ListKind, Received] | None = None,
    ) -> Path | None:
        """Write the lists of ``config``'s server (atomically; errors are logged, not raised);
        ``lists``: when each was received (wall-clock seconds) and its hint. Private if any list
        is: then under `context_key`, and the shared entry goes (the server said private now);
        else shared, and this context's private entry goes. The path written, or None."""
        lists = lists or {}
        entry: dict[str, Any] = {
            "format": _FORMAT,
            "server": config.name,
            # Stored without the namespace: the same server may be registered under another.
            "tools": [{**tool.model_dump(mode="json"), "name": tool.tool_name} for tool in tools],
            "catalog": catalog.model_dump(mode="json"),
            "lists": {kind: _stamp(seen) for kind, seen in lists.items()},
        }
        private = any(seen.freshness is not None and not seen.freshness.public for seen in lists.values())
        path, other = (self._context_path(config), self._path(config))[:: 1 if private else -1]
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(
                "w", encoding="utf-8", dir=self.folder, prefix=".tmp-", suffix=".json", delete=False
            ) as handle:
                json.dump(entry, handle)
            os.replace(handle.name, path)
            other.unlink(missing_ok=True)
            self._unstartable_path(config).unlink(missing_ok=True)  # it started
        except OSError as exc:
            logger.warning("schema cache: cannot write %s: %s", path, exc)
            return None
        return path


def _credentials(config: ServerConfig) -> dict[str, Any]:
    """What authorizes the runtime at ``config``'s server (secret values: digest them only)."""
    credentials: dict[str, Any] = {"env": config.env, "headers": config.headers}
    if config.oauth is not None:
        credentials["oauth"] = config.oauth.model_dump(mode="json")
    if config.transport != "stdio":
        credentials["tokens"] = str(default_token_file())
    return credentials


def _newest(entry: CachedLists) -> float:
    """When the newest of an entry's lists was received (0 for an entry without times)."""
    return max((seen.at for seen in entry.lists.values()), default=0.0)


def _stamp(seen: Received) -> dict[str, Any]:
    """One list's line in an entry: ``{"receivedAt": ..., "ttlMs": ..., "cacheScope": ...}``."""
    hint = seen.freshness.to_json() if seen.freshness is not None else {}
    return {"receivedAt": seen.at, **hint}


def _entry(data: Any, ns: str, path: Path) -> CachedLists | None:
    """The lists an entry's JSON holds, under namespace ``ns``; None for another format or a
    broken entry (logged)."""
    try:
        if data.get("format") != _FORMAT:
            return None
        tools = tuple(
            ToolSpec.model_validate({**tool, "name": f"{ns}/{tool['name']}"}) for tool in data["tools"]
        )
        catalog = Catalog.model_validate(_renamed(data["catalog"], ns))
        lists: dict[ListKind, Received] = {}
        for kind in LIST_KINDS:
            stamp = data.get("lists", {}).get(kind)
            if isinstance(stamp, dict) and isinstance(stamp.get("receivedAt"), int | float):
                lists[kind] = Received(float(stamp["receivedAt"]), ListFreshness.from_json(stamp))
    except (KeyError, TypeError, AttributeError, ValidationError) as exc:
        logger.warning("schema cache: ignoring %s: %s", path, exc)
        return None
    return CachedLists(tools, catalog, lists)


def _renamed(catalog: dict[str, Any], namespace: str) -> dict[str, Any]:
    """A stored catalog moved to ``namespace`` (the server may be registered under a new one)."""
    prompts = []
    for prompt in catalog.get("prompts", []):
        name = str(prompt.get("name", ""))
        prompts.append({**prompt, "namespace": namespace, "name": f"{namespace}/{name.split('/', 1)[-1]}"})
    return {
        "resources": [{**r, "namespace": namespace} for r in catalog.get("resources", [])],
        "templates": [{**t, "namespace": namespace} for t in catalog.get("templates", [])],
        "prompts": prompts,
    }
