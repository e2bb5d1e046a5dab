"""`Drift` (a definition that is not its pin) and `PinEvent` (what happened to one).

A drift is what a person needs to decide on it: the server, the kind and name, the definition
as pinned and as it is now, and which properties changed. A `PinEvent` says what was done
with it (held, re-pinned in ``warn`` mode, approved): the runtime logs it, the gateway audits
it and shows the held ones on its operator page. Immutable; any thread.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from actors.pins.definitions import KIND_WORDS, PinKind
from actors.pins.diff import PropertyChange, changed_properties, property_changes
from actors.pins.model import Pin

__all__ = ["Drift", "PinAction", "PinEvent", "log_event"]

logger = logging.getLogger("actors.pins")


class PinAction(StrEnum):
    """What was done with a changed definition."""

    HELD = "held"
    """Hidden and refused until approved (``block``)."""
    REPINNED = "repinned"
    """Offered and pinned anew (``warn``)."""
    APPROVED = "approved"
    """Approved: pinned, offered again."""


@dataclass(frozen=True, slots=True)
class Drift:
    """A definition of ``namespace`` that differs from its pin (``pinned``: None if it never had one)."""

    namespace: str
    kind: PinKind
    name: str
    pinned: Pin | None
    seen: Pin

    @property
    def what(self) -> str:
        """``tool 'echo' of 'ns'``: how a message names it."""
        return f"{KIND_WORDS[self.kind]} {self.name!r} of {self.namespace!r}"

    @property
    def changed(self) -> tuple[str, ...]:
        """The top-level properties that differ (``description``, ``annotations`` ...)."""
        before = self.pinned.definition if self.pinned is not None else {}
        return changed_properties(before, self.seen.definition)

    def changes(self) -> list[PropertyChange]:
        """Every property that differs, old and new (dotted paths)."""
        before = self.pinned.definition if self.pinned is not None else {}
        return property_changes(before, self.seen.definition)

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "kind": self.kind,
            "name": self.name,
            "changed": list(self.changed),
            "pinnedDigest": self.pinned.digest if self.pinned is not None else None,
            "digest": self.seen.digest,
            "seenAt": self.seen.at,
        }


@dataclass(frozen=True, slots=True)
class PinEvent:
    """``drift`` was ``action``-ed."""

    action: PinAction
    drift: Drift


def log_event(event: PinEvent) -> None:
    """Log ``event``: a change (held, re-pinned) as a WARNING naming the server, the tool and the
    changed properties; an approval as INFO."""
    drift = event.drift
    changed = ", ".join(drift.changed) or "its definition"
    extra = {
        "mcp_event": f"pin_{event.action.value}",
        "namespace": drift.namespace,
        "pin_kind": drift.kind,
        "pin_name": drift.name,
        "changed": list(drift.changed),
    }
    if event.action is PinAction.HELD:
        logger.warning(
            "the %s changed (%s) since it was pinned: hidden and refused until approved "
            "(mcp-actors approve %s %s)",
            drift.what,
            changed,
            drift.namespace,
            drift.name,
            extra=extra,
        )
    elif event.action is PinAction.REPINNED:
        logger.warning(
            "the %s changed (%s) since it was pinned: offered and pinned anew (pin: warn)",
            drift.what,
            changed,
            extra=extra,
        )
    else:
        logger.info("the %s was approved (%s changed)", drift.what, changed, extra=extra)
