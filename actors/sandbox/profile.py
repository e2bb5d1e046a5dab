"""`SandboxProfile`: a server's boundary as the configuration states it (the ``sandbox`` key).

``"sandbox": true`` is the default profile: no network, the system read-only, writes only to the
server's own data folder and a private tmp, the environment from an allow-list, and limits.
``"sandbox": {...}`` changes parts of it; ``false`` (or no key) runs the server unsandboxed.
Pure values: nothing here touches the file system.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from actors.sandbox.hosts import AllowList

__all__ = ["DEFAULT_LIMITS", "SandboxLimits", "SandboxProfile", "parse_size"]

_MODEL = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, alias_generator=to_camel)

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(value: Any) -> Any:
    """Bytes from ``"512M"``, ``"2G"``, ``"1.5GiB"`` or a whole number; anything else as it is
    (for the model to reject)."""
    if isinstance(value, bool):
        raise ValueError(f"must be a size such as '512M', not {str(value).lower()}")
    if isinstance(value, str):
        match = _SIZE.match(value)
        if match is None:
            raise ValueError(f"must be a size such as '512M' or '2G', got {value!r}")
        return int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    return value


class SandboxLimits(BaseModel):
    """What a sandboxed server may spend. ``null`` lifts a limit."""

    model_config = _MODEL

    memory: int | None = Field(default=2 * 1024**3, gt=0)
    """Bytes of memory (``"512M"``, ``"2G"``): the cgroup's limit, else the address-space rlimit."""
    processes: int | None = Field(default=256, gt=0)
    """Processes and threads at once (a fork bomb stops here)."""
    open_files: int | None = Field(default=1024, gt=0)
    """Open file descriptors per process."""
    cpu_seconds: int | None = Field(default=None, gt=0)
    """CPU seconds per process; unset by default, as a long-lived server adds them up."""

    @field_validator("memory", mode="before")
    @classmethod
    def _size(cls, value: Any) -> Any:
        return parse_size(value)

    @field_validator("processes", "open_files", "cpu_seconds", mode="before")
    @classmethod
    def _count_not_bool(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError(f"must be a number, not {str(value).lower()}")
        return value


DEFAULT_LIMITS = SandboxLimits()


class SandboxProfile(BaseModel):
    """What a sandboxed server may read, write, reach and spend."""

    model_config = _MODEL

    network: Literal["none", "all"] | tuple[str, ...] = "none"
    """``none``; ``all`` (the host's network, unfiltered); or the ``host[:port]`` entries it may
    reach through the egress proxy (``*.example.com`` for subdomains)."""
    read: tuple[str, ...] = ()
    """Folders and files it may read besides the system, its command and its own folders."""
    write: tuple[str, ...] = ()
    """Folders it may write besides its own data folder and its private tmp."""
    env: tuple[str, ...] = ()
    """Names of the host's environment variables passed in, besides the entry's ``env``."""
    limits: SandboxLimits = DEFAULT_LIMITS
    registry: bool = True
    """For ``npx``/``uvx``/``pnpm dlx``/``bunx`` commands: the package manager's configured
    registry is reachable, so that the package installs; nothing else is opened by it."""

    @field_validator("network", mode="before")
    @classmethod
    def _network(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            AllowList.parse(value)  # a bad entry is a config problem now, not a denial later
            return tuple(value)
        if value not in ("none", "all"):
            raise ValueError(f"must be 'none', 'all' or a list of 'host[:port]' entries, got {value!r}")
        return value

    @property
    def allow_list(self) -> AllowList | None:
        """The hosts it may reach through the proxy; None for ``none`` and ``all``."""
        return AllowList.parse(self.network) if isinstance(self.network, tuple) else None

    @staticmethod
    def from_config(value: Any) -> SandboxProfile | None:
        """The profile the ``sandbox`` key states: ``true`` the default one, ``false`` or
        ``null`` none, an object the default with its keys changed."""
        if value is None or value is False:
            return None
        if value is True:
            return SandboxProfile()
        if isinstance(value, SandboxProfile):
            return value
        if isinstance(value, dict):
            return SandboxProfile.model_validate(value)
        raise ValueError("must be true, false or an object (network, read, write, env, limits, registry)")
