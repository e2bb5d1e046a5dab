"""Nothing a server says changes unseen: its definitions pinned on first sight.

The first time a server lists a tool (a prompt, a resource template), its whole definition is
pinned by the SHA-256 of its canonical JSON (RFC 8785). A later list whose definition differs
is, by the server's ``pin`` mode, held until approved (``block``, the default: hidden from
lists, its calls refused as `RefusalReason.NOT_APPROVED`), logged and pinned anew (``warn``),
or let through (``off``). The parts, one concept each:

- `digest` (canonical JSON and its digest) and `definitions` (what of each kind is pinned);
- `model` (`Pin`, `ServerPins`, `PinChange`: immutable values), `decisions` (the table of what
  a listed definition's sight means in each mode, and `judge`), `diff` (what changed, for people);
- `store` (`PinStore`, `FilePinStore`: where pins outlive a process; the cluster keeps them in
  Redis), `book` (`PinBook`: a runtime's pins in memory, in step with its store), `shown`
  (`Shown`: lists without what is held) and `events` (`Drift`, `PinEvent`: what is logged,
  audited and shown).
"""

from __future__ import annotations

from actors.pins.book import PinBook
from actors.pins.decisions import DECISIONS, MODES, Handling, Judgement, PinMode, Sight, judge
from actors.pins.definitions import KINDS, PinKind
from actors.pins.diff import PropertyChange, changed_properties, property_changes
from actors.pins.digest import canonical, digest
from actors.pins.events import Drift, PinAction, PinEvent
from actors.pins.model import Pin, PinChange, Ref, ServerPins
from actors.pins.shown import Shown
from actors.pins.store import FilePinStore, PinStore, default_pin_folder, pin_key

__all__ = [
    "DECISIONS",
    "KINDS",
    "MODES",
    "Drift",
    "FilePinStore",
    "Handling",
    "Judgement",
    "Pin",
    "PinAction",
    "PinBook",
    "PinChange",
    "PinEvent",
    "PinKind",
    "PinMode",
    "PinStore",
    "PropertyChange",
    "Ref",
    "ServerPins",
    "Shown",
    "Sight",
    "canonical",
    "changed_properties",
    "default_pin_folder",
    "digest",
    "judge",
    "pin_key",
    "property_changes",
]
