"""A server's lifecycle as pure code: ``step(stage, event) -> Transition(stage, effects)``.

No threads, no I/O, no clock: whatever a rule needs to know (the time, whether calls wait for a
start, whether a supervisor restarts it) comes in with the event. `ServerActor` feeds it events
and carries out the effects, in order. The stages refine the public `ServerState` with what the
connection beneath is doing (opening, up, closing) and what is owed once it settles (a start
asked for while the old session still closes, a stop asked for while a session opens), and
`retired` is a stage of its own (shown as stopping, then stopped): an unregistered server
answers everything ``cancelled`` and starts nothing.

Every (stage, event) pair is either a rule (`rules.RULES`) or listed in `REFUSED`. Read
`stages`, `events`, `effects`, then `rules`. ``tests/runtime/lifecycle`` checks every pair, and
the diagram and table in ``docs/architecture.md`` against `transitions`.
"""

from __future__ import annotations

from actors.runtime.lifecycle import effects, events
from actors.runtime.lifecycle.effects import Effect, Transition
from actors.runtime.lifecycle.events import EVENTS, Event
from actors.runtime.lifecycle.rules import REFUSED, RULES, step, transitions
from actors.runtime.lifecycle.stages import Link, Stage, Text, TextKind

__all__ = [
    "EVENTS",
    "REFUSED",
    "RULES",
    "Effect",
    "Event",
    "Link",
    "Stage",
    "Text",
    "TextKind",
    "Transition",
    "effects",
    "events",
    "step",
    "transitions",
]
