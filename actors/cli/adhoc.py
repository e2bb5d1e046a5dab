"""A server named on the command line instead of in a file: ``--command "npx -y PKG"`` (stdio)
or ``--url URL`` (Streamable HTTP), as fastmcp's CLI and the MCP Inspector take one, to try a
server before writing a config entry for it.

It becomes a one-server configuration, without the built-in tools, whose namespace is
``--name`` or one made from the package, script or host (`namespace_of`), so that
``mcp-actors tools --command "uvx mcp-server-fetch"`` lists ``fetch/fetch``.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

__all__ = ["adhoc_entry", "namespace_of"]

_RUNNERS = frozenset(
    {"npx", "uvx", "pipx", "bunx", "pnpm", "dlx", "node", "deno", "bun", "uv", "run", "python", "python3"}
    | {"docker", "podman"}
)
"""Words of a command that start a server rather than name it."""
_AFFIXES = ("mcp-server-", "server-", "mcp-")
_SUFFIXES = ("-mcp-server", "-server", "-mcp")
_NOT_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def adhoc_entry(command: str | None, url: str | None, name: str | None) -> tuple[str, dict[str, Any]]:
    """``(namespace, mcpServers entry)`` of ``--command`` (split as a shell would) or ``--url``.
    A command line that a shell cannot split is a `ValueError` saying why."""
    if command is not None:
        try:
            words = shlex.split(command)
        except ValueError as exc:
            raise ValueError(f"--command {command!r} cannot be split as a shell would: {exc}") from None
        if not words:
            raise ValueError("--command is empty")
        entry: dict[str, Any] = {"command": words[0], "args": words[1:]}
    elif url is not None:
        entry = {"url": url}
    else:
        raise ValueError("neither --command nor --url")
    return name or namespace_of(command, url), entry


def namespace_of(command: str | None, url: str | None) -> str:
    """A namespace for an ad-hoc server: its package or script without ``mcp-server-`` and
    the like (``@modelcontextprotocol/server-everything`` → ``everything``), else the host's
    first label (``api.github.com`` → ``api``), else ``server``."""
    if command is not None:
        words = [w for w in shlex.split(command) if not w.startswith("-")]
        named = [w for w in words if PurePosixPath(w).name not in _RUNNERS]
        if named:
            return _cleaned(_package(named[0])) or "server"
    if url is not None:
        host = urlsplit(url).hostname or ""
        if host and host != "localhost" and not _is_address(host):
            return _cleaned(host.split(".")[0]) or "server"
    return "server"


def _package(word: str) -> str:
    """``@scope/name@1.2`` → ``name``; ``./path/server.py`` → ``server``; ``pkg.server`` →
    ``server``."""
    if word.startswith("@"):
        word = word.split("/", 1)[-1]
    word = word.split("@", 1)[0].split("==", 1)[0]
    stem = PurePosixPath(word).name
    for extension in (".py", ".js", ".mjs", ".ts"):
        stem = stem.removesuffix(extension)
    return stem.rsplit(".", 1)[-1]  # a Python module run with -m: its last part


def _cleaned(name: str) -> str:
    lowered = name.lower()
    for affix in _AFFIXES:
        if lowered.startswith(affix) and len(name) > len(affix):
            name, lowered = name[len(affix) :], lowered[len(affix) :]
            break
    for suffix in _SUFFIXES:
        if lowered.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    return _NOT_NAME.sub("-", name).strip("-.")[:64]


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
