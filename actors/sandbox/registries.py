"""The package registry a ``npx``/``uvx`` server installs from, read from the package
manager's own configuration at start time, so that the sandbox can reach it and nothing else.

Runs the package manager (``npm config get registry``): call it off the event loop.
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = ["PackageRegistry", "package_registry"]

logger = logging.getLogger(__name__)

_NPM_RUNNERS = frozenset({"npx", "bunx"})
_NPM_SUBCOMMANDS = {"npm": "exec", "pnpm": "dlx", "yarn": "dlx"}
_PYTHON_RUNNERS = frozenset({"uvx", "pipx"})
_ASK_TIMEOUT = 15.0


@dataclass(frozen=True)
class PackageRegistry:
    """Where a runner installs from: ``host:port`` entries for the proxy, and the environment
    that points the sandboxed runner at the same registry."""

    hosts: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)


def _host_port(url: str) -> str | None:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{host}:{port}"


def _npm_registry(environ: Mapping[str, str]) -> PackageRegistry | None:
    try:
        done = subprocess.run(
            ["npm", "config", "get", "registry"],
            capture_output=True,
            timeout=_ASK_TIMEOUT,
            env=dict(environ),
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        logger.warning("sandbox: could not ask npm for its registry: %s", exc)
        return None
    url = done.stdout.decode(errors="replace").strip()
    host = _host_port(url)
    if done.returncode != 0 or host is None:
        logger.warning("sandbox: npm named no usable registry (%r)", url)
        return None
    return PackageRegistry((host,), {"npm_config_registry": url})


def _python_registry(environ: Mapping[str, str]) -> PackageRegistry | None:
    env: dict[str, str] = {}
    urls = []
    for name in ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "UV_INDEX", "PIP_INDEX_URL", "UV_EXTRA_INDEX_URL"):
        if environ.get(name):
            env[name] = environ[name]
            urls += environ[name].split()
    if not urls:
        # The package manager's own default index and the host its files come from.
        try:
            from pip._internal.models.index import PyPI  # noqa: PLC0415
        except ImportError:
            logger.warning("sandbox: no index configured and no pip to ask for its default one")
            return None
        urls = [PyPI.simple_url, f"https://{PyPI.file_storage_domain}/"]
    hosts = tuple(dict.fromkeys(h for h in map(_host_port, urls) if h is not None))
    return PackageRegistry(hosts, env) if hosts else None


def package_registry(command: str, args: Sequence[str], environ: Mapping[str, str]) -> PackageRegistry | None:
    """The registry that ``command args`` installs from, when it is a package runner."""
    name = os.path.basename(command)
    if name in _NPM_RUNNERS or (args and _NPM_SUBCOMMANDS.get(name) == args[0]):
        return _npm_registry(environ)
    if name in _PYTHON_RUNNERS or (name == "uv" and list(args[:2]) == ["tool", "run"]):
        return _python_registry(environ)
    return None
