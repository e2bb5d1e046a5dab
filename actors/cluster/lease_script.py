"""The one Redis script every lease request runs, and its answer as a classified value.

A request is a take (the caller does not believe the lease is its own) or a renewal (it does).
The script compares and sets on the owner's id in one step, and decides anything about a *free*
key under Redis's epoch: ``mcp-actors:lease-epoch`` holds the run id and evicted-key count of the
Redis that last checked it. When they changed (Redis restarted, failed over, evicted), or the key
is gone while Redis is young (it came back empty), a new epoch starts and with it a quiet period,
``mcp-actors:lease-quiet`` with a TTL, on Redis's own clock for every replica alike:

- a key held by another replica: its owner, nothing changed;
- a key of ours we believe: renewed (``PEXPIRE``);
- a free key (or one of ours we do not believe: Redis may have lost what came after it):
  during a quiet period only the replica that believes it may set it again (it re-confirms),
  others are told to wait; outside one, a renewal finds its lease gone (lost), and a take sets it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import redis

__all__ = ["EPOCH_KEY", "QUIET_KEY", "Answer", "LeaseOutcome", "LeaseScript"]

EPOCH_KEY = "mcp-actors:lease-epoch"
QUIET_KEY = "mcp-actors:lease-quiet"

_SCRIPT = """
local function epoch()
  local info = redis.call('INFO', 'server', 'stats')
  local evicted = string.match(info, 'evicted_keys:(%d+)')
  local id = string.match(info, 'run_id:(%w+)') .. ':' .. evicted
  local known = redis.call('GET', KEYS[2])
  if known ~= id then
    redis.call('SET', KEYS[2], id)
    local young = tonumber(string.match(info, 'uptime_in_seconds:(%d+)')) * 1000 < tonumber(ARGV[3])
    -- No epoch yet in a Redis up longer than a quiet period: its first use, nothing to wait for.
    if known or young or tonumber(evicted) > 0 then
      redis.call('SET', KEYS[3], id, 'PX', ARGV[3])
    end
  end
  return id
end
local owner = redis.call('GET', KEYS[1])
local believed = ARGV[4] == '1'
if owner and owner ~= ARGV[1] then
  return {'other', owner, redis.call('GET', KEYS[2]) or '', 0}
end
if owner and believed then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {'mine', owner, redis.call('GET', KEYS[2]) or '', 0}
end
local id = epoch()
local quiet = redis.call('PTTL', KEYS[3])
if believed then
  if quiet <= 0 then return {'gone', '', id, 0} end
elseif quiet > 0 then
  return {'quiet', '', id, quiet}
elseif ARGV[5] ~= '1' then
  return {'quiet', '', id, 0}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {'mine', ARGV[1], id, 0}
"""


class LeaseOutcome(enum.Enum):
    """What Redis said of a lease request."""

    MINE = "mine"
    """Taken, renewed or re-confirmed: the key is ours for a TTL from when Redis ran it."""
    OTHER = "other"
    """Another replica holds it (``owner``)."""
    QUIET = "quiet"
    """Free, but not to be taken yet: Redis changed epoch (``quiet`` seconds left)."""
    GONE = "gone"
    """Our renewal found the key gone, in an epoch whose quiet period is over: lost."""


@dataclass(frozen=True)
class Answer:
    """The script's answer, classified. Immutable: handed from the lease thread to any other."""

    kind: LeaseOutcome
    owner: str
    epoch: str
    quiet: float
    """Seconds the quiet period still lasts in Redis (0 when over, or quiet only locally)."""


class LeaseScript:
    """The lease script registered on one client. Used only on the lease thread."""

    def __init__(self, client: redis.Redis, prefix: str) -> None:
        self._script = client.register_script(_SCRIPT)
        self._prefix = prefix

    def run(
        self, name: str, replica_id: str, *, ttl: float, quiet: float, believed: bool, may_take: bool
    ) -> Answer:
        """Run the script for lease ``name`` (raises `redis.RedisError` when Redis is away)."""
        raw: Any = self._script(
            keys=[self._prefix + name, EPOCH_KEY, QUIET_KEY],
            args=[replica_id, _ms(ttl), _ms(quiet), int(believed), int(may_take)],
        )
        kind, owner, epoch, quiet_ms = raw
        return Answer(LeaseOutcome(str(kind)), str(owner), str(epoch), max(0, int(quiet_ms)) / 1000)


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))
