"""Where a config's policy file is, and loading it.

``"access": {"policy": "policy.cedar"}`` names it, relative to the config file. Cedar
(`cedarpy`, in the ``gateway`` extra) is imported only when a config names a policy: a gateway
without one runs without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from actors.config import ConfigError, RuntimeConfig
from actors.mcp.config import ConfigProblem

if TYPE_CHECKING:
    from actors.gateway.access.policy import Policy

__all__ = ["load_policy", "policy_file"]


def policy_file(config: RuntimeConfig) -> Path | None:
    """The policy file ``config`` names, relative to the config file's folder (to the working
    folder for a config that is not a file); None if it names none."""
    named = config.access.policy
    if named is None:
        return None
    path = Path(named).expanduser()
    if not path.is_absolute() and config.source is not None:
        path = Path(config.source).parent / path
    return path


def load_policy(config: RuntimeConfig) -> Policy | None:
    """The policy ``config`` names, read and checked (blocks: never on an event loop); None if
    it names none. Raises `ConfigError` naming the file and what is wrong with it."""
    path = policy_file(config)
    if path is None:
        return None
    try:
        # Deferred: cedarpy is the gateway extra's, needed only by a gateway with a policy.
        from actors.gateway.access.policy import read_policy  # noqa: PLC0415
    except ImportError as exc:
        message = f"a policy needs Cedar: {exc} (pip install 'mcp-actors[gateway]')"
        raise ConfigError(
            [ConfigProblem(server=None, key="access.policy", message=message)], str(path)
        ) from None
    return read_policy(path)
