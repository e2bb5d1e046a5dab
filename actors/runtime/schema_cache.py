"""`SchemaCache`: what each server lists (tools, resources, templates, prompts), kept on disk.

A runtime started with a cache answers lists, and checks arguments, for servers it has never
run in this process, without starting them: a gateway's ``tools/list`` stays cheap however
many servers it fronts. An entry is keyed by what makes a server the same server (transport,
command, arguments, the names of its environment variables, working folder, URL), and is
rewritten whenever the server runs and lists again.

Reads happen where the runtime is started or a server registered (the caller's thread);
writes go to a host thread (`HostCalls`), never the loop or an actor.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from actors.mcp.catalog import Catalog
from actors.mcp.config import ServerConfig
from actors.tools import ToolSpec

__all__ = ["CachedLists", "SchemaCache", "default_cache_folder"]

logger = logging.getLogger(__name__)

_FORMAT = 1


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


class SchemaCache:
    """A folder of JSON files, one per server identity.

    With ``read=False`` it only writes: `load` knows nothing, so a runtime starts and lists
    every server live and refreshes the folder (``mcp-actors tools --no-cache``).
    """

    def __init__(self, folder: str | os.PathLike[str] | None = None, *, read: bool = True) -> None:
        self.folder = Path(folder) if folder is not None else default_cache_folder()
        self.read = read

    @staticmethod
    def key(config: ServerConfig) -> str:
        """What makes two configurations the same server (secrets left out: only env names)."""
        identity = {
            "transport": config.transport,
            "command": config.command,
            "args": list(config.args),
            "env": sorted(config.env),
            "cwd": config.cwd,
            "url": config.url,
            "tools": config.tools.model_dump(mode="json"),
        }
        return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:24]

    def _path(self, config: ServerConfig) -> Path:
        return self.folder / f"{self.key(config)}.json"

    def load(self, config: ServerConfig) -> CachedLists | None:
        """The lists last seen for ``config``'s server under its namespace, or None."""
        if not self.read:
            return None
        path = self._path(config)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            logger.warning("schema cache: cannot read %s: %s", path, exc)
            return None
        try:
            if data.get("format") != _FORMAT:
                return None
            ns = config.name
            tools = tuple(
                ToolSpec.model_validate({**tool, "name": f"{ns}/{tool['name']}"}) for tool in data["tools"]
            )
            catalog = Catalog.model_validate(_renamed(data["catalog"], ns))
        except (KeyError, TypeError, AttributeError, ValidationError) as exc:
            logger.warning("schema cache: ignoring %s: %s", path, exc)
            return None
        return CachedLists(tools, catalog)

    def save(self, config: ServerConfig, tools: tuple[ToolSpec, ...], catalog: Catalog) -> None:
        """Write the lists of ``config``'s server (atomically; errors are logged, not raised)."""
        entry: dict[str, Any] = {
            "format": _FORMAT,
            "server": config.name,
            # Stored without the namespace: the same server may be registered under another.
            "tools": [{**tool.model_dump(mode="json"), "name": tool.tool_name} for tool in tools],
            "catalog": catalog.model_dump(mode="json"),
        }
        path = self._path(config)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(
                "w", encoding="utf-8", dir=self.folder, prefix=".tmp-", suffix=".json", delete=False
            ) as handle:
                json.dump(entry, handle)
            os.replace(handle.name, path)
        except OSError as exc:
            logger.warning("schema cache: cannot write %s: %s", path, exc)


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
