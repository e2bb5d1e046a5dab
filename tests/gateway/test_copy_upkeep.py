"""`CopyUpkeep` (`actors.gateway.access.upkeep`): copies without a request for
``unregisterAfter`` seconds go, and past ``maxCopies`` the least recently used idle ones go. Pure:
a clock the test sets, a loop stand-in whose timer the test fires."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from actors.gateway.access.upkeep import CopyUpkeep
from actors.mcp.per_user import PerUserKeys


class _Registered:
    """A registration that is over (all the upkeep asks of it)."""

    def done(self) -> bool:
        return True


@dataclass(eq=False)
class _Copy:
    name: str
    last_used: float
    in_flight: int = 0
    retiring: bool = False
    registered: Any = field(default_factory=_Registered)


class _Loop:
    """Records the one timer the upkeep arms."""

    def __init__(self) -> None:
        self.timers: list[tuple[float, Any, tuple[Any, ...]]] = []

    def call_later(self, delay: float, callback: Any, *args: Any) -> object:
        self.timers.append((delay, callback, args))
        return object()  # the handle: the upkeep only keeps it

    def fire(self) -> None:
        _, callback, args = self.timers.pop(0)
        callback(*args)


def _upkeep(copies: list[_Copy], now: list[float], **keys: Any) -> tuple[CopyUpkeep[_Copy], list[str]]:
    retired: list[str] = []

    def retire(copy: _Copy) -> None:
        copy.retiring = True
        retired.append(copy.name)
        copies.remove(copy)

    settings = PerUserKeys.model_validate(keys)
    return CopyUpkeep(lambda: settings, lambda: now[0], lambda: list(copies), retire), retired


def test_past_max_copies_the_least_recently_used_idle_ones_go() -> None:
    copies = [_Copy("old", 1.0), _Copy("busy", 0.5, in_flight=1), _Copy("mid", 2.0), _Copy("new", 3.0)]
    upkeep, retired = _upkeep(copies, [10.0], maxCopies=2)
    upkeep.added(_Loop())  # type: ignore[arg-type]
    assert retired == ["old", "mid"], "a copy with a request in flight stays, however old"


def test_idle_copies_go_after_unregister_after_and_the_sweep_stops_when_none_is_left() -> None:
    now = [0.0]
    copies = [_Copy("a", 0.0), _Copy("b", 0.0, in_flight=1)]
    upkeep, retired = _upkeep(copies, now, unregisterAfter=60)
    loop = _Loop()
    upkeep.added(loop)  # type: ignore[arg-type]
    upkeep.added(loop)  # type: ignore[arg-type]
    assert [delay for delay, _, _ in loop.timers] == [15.0], "one sweep armed, every unregisterAfter / 4"
    now[0] = 30.0
    loop.fire()
    assert retired == [] and len(loop.timers) == 1
    now[0] = 61.0
    loop.fire()
    assert retired == ["a"], "the busy copy stays"
    copies[0].in_flight, copies[0].last_used = 0, 61.0
    now[0] = 122.0
    loop.fire()
    assert retired == ["a", "b"]
    loop.fire()  # nothing left: no new sweep
    assert loop.timers == []
