"""`LeaseBook`: what one replica believes of its leases, as pure decisions on given times.

No Redis, no thread, no clock of its own: every method takes ``now`` (monotonic seconds) and the
answers Redis gave, and says what to do (stop the local copy, delete the key, renew now). The
lease thread (`actors.cluster.lease.Leases`) feeds it; the tests drive it with plain numbers.

The bet (a lease without fencing is one, see docs/scaling.md "What a lease guarantees"): the
owner stops believing ``belief`` seconds after it *sent* the request Redis last granted, which is
before Redis can let the key lapse (``ttl`` after it *ran* that request), by ``stop_allowance``,
the time to stop the local copy, and by the clock drift allowed (`DRIFT`). After Redis lost data
(a new epoch: restarted, failed over, evicted), nobody takes a free lease for ``quiet`` seconds,
longer than any belief from before, and every owner re-confirms before it serves again.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = [
    "DRIFT",
    "TRANSITIONS",
    "LeaseAction",
    "LeaseBook",
    "LeaseEvent",
    "LeaseTiming",
    "Phase",
]

DRIFT = 0.01
"""How far two clocks' rates may differ (1 %; NTP-disciplined clocks differ by about 0.001 %)."""
_STOP_MIN = 2.5
"""Seconds the local copy may take to stop: stdin closed, SIGTERM after 0.5 s, SIGKILL after
1 s more (`actors.mcp.sdk_options`), and the actors' scheduling on a busy machine."""


@dataclass(frozen=True)
class LeaseTiming:
    """The spans every decision counts with, all from the lease TTL (``serve --lease-ttl``).
    Immutable: shared by any thread."""

    ttl: float

    def __post_init__(self) -> None:
        if not self.ttl > 0:
            raise ValueError(f"the lease TTL must be positive, got {self.ttl!r}")

    @property
    def stop_allowance(self) -> float:
        """Seconds kept between the end of the owner's belief and the earliest take elsewhere,
        for the owner to stop its copy (at most half the TTL, for short test TTLs)."""
        return min(max(self.ttl / 4, _STOP_MIN), self.ttl / 2)

    @property
    def belief(self) -> float:
        """Seconds after sending a granted request that the owner believes the lease is its."""
        return self.ttl * (1 - 2 * DRIFT) - self.stop_allowance

    @property
    def quiet(self) -> float:
        """Seconds nobody takes a free lease after a new epoch (longer than any belief)."""
        return self.ttl * (1 + 2 * DRIFT)

    @property
    def renew_every(self) -> float:
        """Seconds between renewals: three tries within one belief."""
        return self.belief / 3

    @property
    def retry_every(self) -> float:
        """Seconds before a renewal that could not reach Redis is tried again."""
        return min(0.25, self.belief / 6)


class Phase(enum.Enum):
    """Where one lease stands for this replica."""

    FREE = "free"
    """Not ours (or not known to be)."""
    HELD = "held"
    """Ours until its belief ends; calls are served here."""
    UNCONFIRMED = "unconfirmed"
    """Ours before Redis changed epoch: not served until a renewal in the new epoch succeeds."""


class LeaseEvent(enum.Enum):
    """What happened to one lease."""

    GRANTED = "granted"
    """Redis ran our claim or renewal and the key is ours."""
    REFUSED = "refused"
    """Redis says the key is another's, or gone outside a quiet period."""
    UNREACHABLE = "unreachable"
    """The renewal did not reach Redis (or its answer did not come back)."""
    EXPIRED = "expired"
    """The belief ran out before a renewal was granted."""
    EPOCH_CHANGED = "epoch-changed"
    """Redis lost data: what it granted before may be gone."""
    RELEASED = "released"
    """This replica gives the lease up."""


class LeaseAction(enum.Enum):
    """What the lease thread does after a transition."""

    NONE = "none"
    STOP = "stop"
    """The lease is lost: stop the local copy (`Leases.on_lost`)."""
    DROP = "drop"
    """Delete the key if it is still ours."""
    RENEW_NOW = "renew-now"
    """Renew at once (re-confirm in the new epoch)."""


TRANSITIONS: Mapping[tuple[Phase, LeaseEvent], tuple[Phase, LeaseAction]] = MappingProxyType(
    {
        (Phase.FREE, LeaseEvent.GRANTED): (Phase.HELD, LeaseAction.NONE),
        (Phase.FREE, LeaseEvent.REFUSED): (Phase.FREE, LeaseAction.NONE),
        (Phase.FREE, LeaseEvent.UNREACHABLE): (Phase.FREE, LeaseAction.NONE),
        (Phase.FREE, LeaseEvent.EXPIRED): (Phase.FREE, LeaseAction.NONE),
        (Phase.FREE, LeaseEvent.EPOCH_CHANGED): (Phase.FREE, LeaseAction.NONE),
        (Phase.FREE, LeaseEvent.RELEASED): (Phase.FREE, LeaseAction.NONE),
        (Phase.HELD, LeaseEvent.GRANTED): (Phase.HELD, LeaseAction.NONE),
        (Phase.HELD, LeaseEvent.REFUSED): (Phase.FREE, LeaseAction.STOP),
        (Phase.HELD, LeaseEvent.UNREACHABLE): (Phase.HELD, LeaseAction.NONE),
        (Phase.HELD, LeaseEvent.EXPIRED): (Phase.FREE, LeaseAction.STOP),
        (Phase.HELD, LeaseEvent.EPOCH_CHANGED): (Phase.UNCONFIRMED, LeaseAction.RENEW_NOW),
        (Phase.HELD, LeaseEvent.RELEASED): (Phase.FREE, LeaseAction.DROP),
        (Phase.UNCONFIRMED, LeaseEvent.GRANTED): (Phase.HELD, LeaseAction.NONE),
        (Phase.UNCONFIRMED, LeaseEvent.REFUSED): (Phase.FREE, LeaseAction.STOP),
        (Phase.UNCONFIRMED, LeaseEvent.UNREACHABLE): (Phase.UNCONFIRMED, LeaseAction.NONE),
        (Phase.UNCONFIRMED, LeaseEvent.EXPIRED): (Phase.FREE, LeaseAction.STOP),
        (Phase.UNCONFIRMED, LeaseEvent.EPOCH_CHANGED): (Phase.UNCONFIRMED, LeaseAction.RENEW_NOW),
        (Phase.UNCONFIRMED, LeaseEvent.RELEASED): (Phase.FREE, LeaseAction.DROP),
    }
)
"""Every (phase, event) pair: the next phase and the action. Complete (tested)."""


@dataclass
class _Lease:
    phase: Phase = Phase.FREE
    until: float = 0.0
    """Monotonic time the belief ends (meaningful unless FREE)."""
    renew_at: float = 0.0


@dataclass
class LeaseBook:
    """One replica's leases and the Redis epoch it last saw. Owned by the lease thread: it alone
    calls the methods; other threads read `beliefs`, an immutable mapping replaced on change."""

    timing: LeaseTiming
    epoch: str | None = None
    """The epoch Redis last answered with (None before the first answer)."""
    quiet_until: float = 0.0
    """Before this time no free lease is taken from here (a new epoch was seen)."""
    _leases: dict[str, _Lease] = field(default_factory=dict)
    beliefs: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    """Lease name -> the monotonic time its belief ends, for the HELD leases only."""
    claimed: frozenset[str] = frozenset()
    """The leases HELD or UNCONFIRMED (whose copy here is not to be stopped yet)."""

    def phase(self, name: str) -> Phase:
        lease = self._leases.get(name)
        return lease.phase if lease is not None else Phase.FREE

    def believed(self, name: str) -> bool:
        """Whether this replica counts ``name`` as its own (held or awaiting re-confirmation):
        its requests for it are renewals, never takes."""
        return self.phase(name) is not Phase.FREE

    def holds(self, name: str, now: float, margin: float = 0.0) -> bool:
        """Whether calls of ``name`` may be served here at ``now``, and for ``margin`` more."""
        until = self.beliefs.get(name)
        return until is not None and now + margin < until

    def owned(self) -> list[str]:
        """The leases held or awaiting re-confirmation."""
        return [name for name, lease in self._leases.items() if lease.phase is not Phase.FREE]

    def may_take(self, now: float) -> bool:
        """Whether a free lease may be taken from here at ``now`` (no recent epoch change)."""
        return now >= self.quiet_until

    def apply(self, name: str, event: LeaseEvent, now: float, *, sent: float | None = None) -> LeaseAction:
        """The transition of ``name`` on ``event``; ``sent`` is when a GRANTED request was sent."""
        lease = self._leases.setdefault(name, _Lease())
        before = lease.phase
        phase, action = TRANSITIONS[(before, event)]
        lease.phase = phase
        if event is LeaseEvent.GRANTED:
            start = now if sent is None else sent
            lease.until = max(lease.until, start + self.timing.belief) if phase is Phase.HELD else 0.0
            lease.renew_at = start + self.timing.renew_every
        elif event is LeaseEvent.UNREACHABLE and phase is not Phase.FREE:
            lease.renew_at = now + self.timing.retry_every
        elif action is LeaseAction.RENEW_NOW:
            lease.renew_at = now
        if phase is Phase.FREE:
            del self._leases[name]
        elif event is LeaseEvent.GRANTED and lease.until <= now:
            # Granted, but the answer came back after the belief it buys had ended: a copy
            # started under the belief before is stopped.
            stop = self._expire(name, lease, now)
            action = stop if before is not Phase.FREE else LeaseAction.NONE
        self._publish()
        return action

    def observe_epoch(self, epoch: str, now: float) -> list[str]:
        """Redis answered with ``epoch``; the leases to re-confirm at once when it is a new one
        (each now UNCONFIRMED, not served), none when it is the one known."""
        if not epoch or epoch == self.epoch:
            return []
        first, self.epoch = self.epoch is None, epoch
        if first:
            return []
        self.quiet_until = max(self.quiet_until, now + self.timing.quiet)
        names = self.owned()
        for name in names:
            self.apply(name, LeaseEvent.EPOCH_CHANGED, now)
        return names

    def expire(self, now: float) -> list[str]:
        """The leases whose belief ended by ``now``: FREE now, their copies to stop."""
        ended = [
            name
            for name, lease in self._leases.items()
            if lease.phase is not Phase.FREE and lease.until <= now
        ]
        for name in ended:
            self._expire(name, self._leases[name], now)
        if ended:
            self._publish()
        return ended

    def due(self, now: float) -> list[str]:
        """The leases whose renewal is due by ``now``."""
        return [name for name, lease in self._leases.items() if lease.renew_at <= now]

    def next_wake(self, now: float, idle: float) -> float:
        """When the lease thread must look again: the next renewal or end of a belief, at
        most ``idle`` from ``now``."""
        times = [now + idle]
        for lease in self._leases.values():
            times.extend((lease.renew_at, lease.until))
        return max(now, min(times))

    def _expire(self, name: str, lease: _Lease, now: float) -> LeaseAction:
        phase, action = TRANSITIONS[(lease.phase, LeaseEvent.EXPIRED)]
        if phase is Phase.FREE:
            self._leases.pop(name, None)
        return action

    def _publish(self) -> None:
        # A new mapping each time: readers on other threads see one whole state or the next.
        self.beliefs = MappingProxyType(
            {name: lease.until for name, lease in self._leases.items() if lease.phase is Phase.HELD}
        )
        self.claimed = frozenset(self._leases)
