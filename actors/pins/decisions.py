"""What a listed definition's pin says, as a table: (mode, sight) -> action.

A server lists a definition; against its pins it is `Sight.NEW` (a name never pinned),
`Sight.SAME` (the digest of its pin), `Sight.CHANGED` (another digest), or `Sight.STILL_HELD`
(changed, and that very definition is already held). The server's ``pin`` mode decides:

=========== ======= ========= =============
sight       off     warn      block
=========== ======= ========= =============
new         offer   pin       pin
same        offer   offer     offer
changed     offer   repin     hold
still held  offer   repin     keep held
=========== ======= ========= =============

An approval makes a held definition the pin: listed again, it is `Sight.SAME` (offered). A
held definition the server no longer lists, or lists as pinned again, is released; a removed
tool's pin stays (were it to come back changed, that is a change). ``off`` records nothing.
`judge` applies the table to one list. Pure: no clock, no I/O, no thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, Literal

from actors.pins.definitions import PinKind
from actors.pins.model import Pin, PinChange, Ref, ServerPins

__all__ = [
    "DECISIONS",
    "MODES",
    "Handling",
    "Judgement",
    "PinMode",
    "Ruling",
    "Sight",
    "judge",
    "judge_seen",
    "sight_of",
]

PinMode = Literal["off", "warn", "block"]
MODES: Final[tuple[PinMode, ...]] = ("off", "warn", "block")


class Sight(StrEnum):
    """How a listed definition compares with its server's pins."""

    NEW = "new"
    """No pin for its name: the first sight."""
    SAME = "same"
    """Its pin's digest."""
    CHANGED = "changed"
    """Another digest than its pin's (and than any held one's)."""
    STILL_HELD = "still_held"
    """Another digest than its pin's, already held as it is."""


class Handling(StrEnum):
    """What is done with a listed definition."""

    OFFER = "offer"
    """Offered; nothing is recorded."""
    PIN = "pin"
    """Pinned (its first sight), and offered."""
    REPIN = "repin"
    """Changed: logged, pinned anew, and offered (``warn``)."""
    HOLD = "hold"
    """Changed: logged and held, hidden from lists and refused, until approved (``block``)."""
    KEEP_HELD = "keep_held"
    """Held already: still hidden and refused; not logged again."""

    @property
    def offered(self) -> bool:
        return self not in (Handling.HOLD, Handling.KEEP_HELD)


DECISIONS: Final[Mapping[tuple[PinMode, Sight], Handling]] = {
    ("off", Sight.NEW): Handling.OFFER,
    ("off", Sight.SAME): Handling.OFFER,
    ("off", Sight.CHANGED): Handling.OFFER,
    ("off", Sight.STILL_HELD): Handling.OFFER,
    ("warn", Sight.NEW): Handling.PIN,
    ("warn", Sight.SAME): Handling.OFFER,
    ("warn", Sight.CHANGED): Handling.REPIN,
    ("warn", Sight.STILL_HELD): Handling.REPIN,
    ("block", Sight.NEW): Handling.PIN,
    ("block", Sight.SAME): Handling.OFFER,
    ("block", Sight.CHANGED): Handling.HOLD,
    ("block", Sight.STILL_HELD): Handling.KEEP_HELD,
}


def sight_of(pinned: Pin | None, held: Pin | None, seen: str) -> Sight:
    """How the digest ``seen`` compares with a name's pin and held definition."""
    if pinned is None:
        return Sight.NEW
    if pinned.digest == seen:
        return Sight.SAME
    if held is not None and held.digest == seen:
        return Sight.STILL_HELD
    return Sight.CHANGED


@dataclass(frozen=True, slots=True)
class Ruling:
    """One listed definition, judged: ``seen`` is it as pinned now, ``pinned`` its pin before."""

    ref: Ref
    sight: Sight
    action: Handling
    seen: Pin
    pinned: Pin | None


@dataclass(frozen=True, slots=True)
class Judgement:
    """A list judged: a verdict per name, and the change to the server's pins it makes."""

    kind: PinKind
    verdicts: tuple[Ruling, ...]
    change: PinChange

    @property
    def hidden(self) -> frozenset[str]:
        """The names not offered (held)."""
        return frozenset(v.ref[1] for v in self.verdicts if not v.action.offered)

    @property
    def drifted(self) -> tuple[Ruling, ...]:
        """The changes to tell of (log, audit): newly held, or re-pinned in ``warn`` mode."""
        return tuple(v for v in self.verdicts if v.action in (Handling.HOLD, Handling.REPIN))


def judge(
    pins: ServerPins, mode: PinMode, kind: PinKind, listed: Mapping[str, Mapping[str, Any]], now: float
) -> Judgement:
    """Judge the definitions ``listed`` (by name) of one ``kind``, at wall-clock ``now``."""
    return judge_seen(pins, mode, kind, {name: Pin.of(d, now) for name, d in listed.items()}, now)


def judge_seen(
    pins: ServerPins,
    mode: PinMode,
    kind: PinKind,
    listed: Mapping[str, Pin],
    now: float,
    *,
    whole: bool = True,
) -> Judgement:
    """`judge`, the definitions already digested (`Pin.of`: the costly part, done beforehand);
    ``whole``: ``listed`` is the server's whole list of ``kind`` (else its held definitions
    not in ``listed`` stay held)."""
    verdicts: list[Ruling] = []
    pin: dict[Ref, Pin] = {}
    repin: dict[Ref, Pin] = {}
    hold: dict[Ref, Pin] = {}
    for name, seen in sorted(listed.items()):
        ref: Ref = (kind, name)
        pinned = pins.pinned.get(ref)
        sight = sight_of(pinned, pins.held.get(ref), seen.digest)
        action = DECISIONS[mode, sight]
        if action is Handling.PIN:
            pin[ref] = seen
        elif action is Handling.REPIN:
            repin[ref] = seen
        elif action is Handling.HOLD:
            hold[ref] = seen
        verdicts.append(Ruling(ref, sight, action, seen, pinned))
    release: frozenset[Ref] = frozenset()
    if mode != "off" and whole:
        # Held definitions of this kind that this list does not hold (any more) go.
        kept = {v.ref for v in verdicts if not v.action.offered}
        release = frozenset(ref for ref in pins.held if ref[0] == kind and ref not in kept)
    return Judgement(
        kind, tuple(verdicts), PinChange(pin=pin, repin=repin, hold=hold, release=release, at=now)
    )
