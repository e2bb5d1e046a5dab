"""The pins of one server, as immutable values: `Pin`, `ServerPins`, and `PinChange`.

A server's pins say, for each name it listed (per kind: tools, prompts, templates), the digest
and the definition that was accepted: pinned on first sight, or approved. Its held definitions
are the changed ones waiting for an approval (in ``block`` mode), each with when it was first
seen. Every change to them is a `PinChange` applied to the pins as they are where they are kept
(a file, Redis, memory): so that two writers (a runtime that pins a new tool, the command line
that approves another) never undo each other's work. Pure; any thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from actors.pins.definitions import KINDS, PinKind
from actors.pins.digest import digest

__all__ = ["FORMAT", "Pin", "PinChange", "Ref", "ServerPins", "approved_refs", "bound_name"]

FORMAT = 1
"""The version of a pins entry's JSON (a file, or a Redis value)."""

Ref = tuple[PinKind, str]
"""What a pin is of: a kind of list and a name in it (``("tools", "echo")``)."""


@dataclass(frozen=True, slots=True)
class Pin:
    """One definition as pinned (or held): its digest, the definition itself (MCP JSON, kept to
    show what changed), and when (wall-clock seconds) it was pinned, or first seen if held."""

    digest: str
    definition: Mapping[str, Any]
    at: float = 0.0

    @classmethod
    def of(cls, definition: Mapping[str, Any], at: float) -> Pin:
        return cls(digest(definition), definition, at)

    @property
    def short(self) -> str:
        """The digest as people are shown it (``sha256:`` and 12 hex digits): enough to bind an
        approval to (`bound_name`)."""
        kind, _, hexed = self.digest.partition(":")
        return f"{kind}:{hexed[:12]}"

    def to_json(self) -> dict[str, Any]:
        return {"digest": self.digest, "definition": dict(self.definition), "at": self.at}

    @classmethod
    def from_json(cls, data: Any) -> Pin:
        if not isinstance(data, dict) or not isinstance(data.get("definition"), dict):
            raise ValueError(f"not a pin: {data!r:.80}")
        definition = cast("dict[str, Any]", data["definition"])
        stored = data.get("digest")
        at = data.get("at")
        # The digest is recomputed: a file edited by hand cannot make its definition match another.
        pin = cls.of(definition, float(at) if isinstance(at, int | float) else 0.0)
        if stored != pin.digest:
            raise ValueError(f"the digest {stored!r} is not that of its definition")
        return pin


@dataclass(frozen=True, slots=True)
class PinChange:
    """What to change in a server's pins, applied where they are kept (`ServerPins.apply`).

    In order: ``replace`` drops every pin and held definition first (``pins write``); then
    ``pin`` pins names on their first sight (a name pinned meanwhile, elsewhere, keeps that
    pin: the first sight anywhere wins); ``repin`` sets pins whatever they were (``warn`` mode);
    ``hold`` records held definitions (not one that is its name's pin by now); ``release``
    drops held ones (their server went back, or dropped them); ``approve`` (names, of any kind,
    each maybe bound to a digest: `bound_name`) or ``approve_all`` makes the held definitions of
    those names their pins.
    """

    pin: Mapping[Ref, Pin] = field(default_factory=dict)
    repin: Mapping[Ref, Pin] = field(default_factory=dict)
    hold: Mapping[Ref, Pin] = field(default_factory=dict)
    release: frozenset[Ref] = frozenset()
    approve: frozenset[str] = frozenset()
    approve_all: bool = False
    replace: bool = False
    at: float = 0.0
    """When (wall-clock seconds): an approved pin's time."""

    def __bool__(self) -> bool:
        changes = (
            self.pin,
            self.repin,
            self.hold,
            self.release,
            self.approve,
            self.approve_all,
            self.replace,
        )
        return any(bool(change) for change in changes)


def bound_name(name: str) -> tuple[str, str | None]:
    """``"echo@sha256:ab12..."`` as ``("echo", "sha256:ab12...")``: a name to approve only while
    its held definition's digest starts with the given one (the definition the operator looked
    at, not one that changed again since); a bare name as ``(name, None)``."""
    plain, at, bound = name.rpartition("@")
    if at and plain and bound.startswith(_DIGEST_PREFIXES) and len(bound.partition(":")[2]) >= 8:
        return plain, bound
    return name, None


_DIGEST_PREFIXES = ("sha256:", "sha256-json:")


def approved_refs(held: Mapping[Ref, Pin], names: Iterable[str], everything: bool) -> list[Ref]:
    """The held definitions an approval of ``names`` (or of ``everything``) approves. A name
    bound to a digest (`bound_name`) approves its definitions held with that digest only."""
    wanted: dict[str, str | None] = {}
    for name in names:
        plain, bound = bound_name(name)
        wanted[plain] = bound
    return sorted(
        ref
        for ref, pin in held.items()
        if everything or (ref[1] in wanted and pin.digest.startswith(wanted[ref[1]] or ""))
    )


@dataclass(frozen=True, slots=True)
class ServerPins:
    """One server's pins and held definitions; ``server``: the namespace it was last seen under."""

    server: str = ""
    pinned: Mapping[Ref, Pin] = field(default_factory=dict)
    held: Mapping[Ref, Pin] = field(default_factory=dict)

    def apply(self, change: PinChange, server: str | None = None) -> ServerPins:
        """These pins with ``change`` made (see `PinChange` for the order)."""
        pinned = {} if change.replace else dict(self.pinned)
        held = {} if change.replace else dict(self.held)
        for ref, pin in change.pin.items():
            pinned.setdefault(ref, pin)
        pinned.update(change.repin)
        for ref, pin in change.hold.items():
            if (now := pinned.get(ref)) is None or now.digest != pin.digest:
                held[ref] = pin
        for ref in change.release:
            held.pop(ref, None)
        for ref in approved_refs(held, change.approve, change.approve_all):
            approved = held.pop(ref)
            pinned[ref] = Pin(approved.digest, approved.definition, change.at or approved.at)
        return ServerPins(server if server is not None else self.server, pinned, held)

    def to_json(self) -> dict[str, Any]:
        """The entry as stored: ``{"format", "server", "pinned": {kind: {name: pin}}, "held": ...}``."""
        return {
            "format": FORMAT,
            "server": self.server,
            "pinned": _by_kind(self.pinned),
            "held": _by_kind(self.held),
        }

    @classmethod
    def from_json(cls, data: Any) -> ServerPins:
        """An entry read back; ``ValueError`` for one of another format or broken."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("not a pins entry of format 1")
        return cls(str(data.get("server") or ""), _refs(data.get("pinned")), _refs(data.get("held")))


def _by_kind(pins: Mapping[Ref, Pin]) -> dict[str, dict[str, Any]]:
    grouped: dict[str, dict[str, Any]] = {}
    for (kind, name), pin in sorted(pins.items()):
        grouped.setdefault(kind, {})[name] = pin.to_json()
    return grouped


def _refs(data: Any) -> dict[Ref, Pin]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError("pins must be an object of kinds")
    found: dict[Ref, Pin] = {}
    for kind in KINDS:
        named = data.get(kind) or {}
        if not isinstance(named, dict):
            raise ValueError(f"the {kind} must be an object of names")
        for name, pin in named.items():
            found[kind, str(name)] = Pin.from_json(pin)
    return found
