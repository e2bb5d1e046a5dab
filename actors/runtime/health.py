"""`HealthProbe`: one health probe at a time, and one more chance for a probe that timed out.

Owned by the server actor's thread; the probe's answer comes back to it as a message.
"""

from __future__ import annotations

from enum import Enum

from actors.runtime.owner import OwnerCheck
from actors.tools import ErrorType

__all__ = ["HealthProbe", "ProbeVerdict"]

# A health probe gets at least this long to answer, however short the interval.
MIN_PROBE_TIMEOUT = 2.0


class ProbeVerdict(Enum):
    HEALTHY = "healthy"
    AGAIN = "probe again"
    """Timed out once: a busy server (a large answer ahead of the probe) gets another chance."""
    FAILED = "failed"


class HealthProbe:
    def __init__(self, interval: float) -> None:
        self.timeout = max(interval, MIN_PROBE_TIMEOUT)
        self.failures = 0
        """Probes that failed, over the server's life (``health_check_failures``)."""
        self._in_flight = False
        self._timed_out = False
        self._owner = OwnerCheck("a health probe")

    def begin(self) -> bool:
        """A health tick: True if a probe should go now (none is in flight)."""
        self._owner.touch()
        if self._in_flight:
            return False
        self._in_flight = True
        return True

    def forget(self) -> None:
        """The session went away: a probe in flight no longer counts."""
        self._owner.touch()
        self._in_flight = False

    def answered(self, error: str | None, error_type: str | None, *, running: bool) -> ProbeVerdict:
        """The probe answered (``error`` None: it succeeded); ``running``: the server still is."""
        self._owner.touch()
        self._in_flight = False
        if error is None or not running:
            self._timed_out = False
            return ProbeVerdict.HEALTHY
        self.failures += 1
        if error_type == ErrorType.TIMEOUT and not self._timed_out:
            self._timed_out = True
            return ProbeVerdict.AGAIN
        self._timed_out = False
        return ProbeVerdict.FAILED
