"""Reading and writing ``table.txt``: the lifecycle's every (stage, event) pair, spelled out."""

from __future__ import annotations

import dataclasses
from enum import Enum
from pathlib import Path
from typing import Any

from actors.runtime import lifecycle as lc

TABLE = Path(__file__).with_name("table.txt")


def _value(value: Any) -> str:
    if isinstance(value, lc.Text):
        return f"{value.kind.name}:{value.detail}" if value.detail else value.kind.name
    if isinstance(value, Enum):
        return str(value.value)
    return str(value)


def effect_text(effect: lc.Effect) -> str:
    values = [_value(getattr(effect, f.name)) for f in dataclasses.fields(effect)]
    values = [v for v in values if v]
    return f"{type(effect).__name__}({', '.join(values)})" if values else type(effect).__name__


def row(stage: lc.Stage, event: lc.Event) -> str:
    moved = lc.step(stage, event)
    if moved.refused:
        return f"{stage.value} | {event.label} | REFUSED |"
    effects = " ".join(effect_text(e) for e in moved.effects)
    return f"{stage.value} | {event.label} | {moved.stage.value} | {effects}".rstrip()


def rows() -> list[str]:
    return [row(stage, event) for event in lc.EVENTS for stage in lc.Stage]


def read() -> dict[tuple[str, str], str]:
    """(stage, event label) -> the row, from ``table.txt`` (comments and headings skipped)."""
    out: dict[tuple[str, str], str] = {}
    for line in TABLE.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        stage, label, _ = (part.strip() for part in line.split("|", 2))
        assert (stage, label) not in out, f"table.txt lists {stage} | {label} twice"
        out[stage, label] = line.rstrip()
    return out


def write() -> None:
    """Rewrite ``table.txt`` from the code (``python -m tests.runtime.lifecycle.table``): then
    read the diff, which is the change in behaviour."""
    lines = ["# stage | event | next stage | effects, in order (REFUSED: the event is dropped)"]
    for event in lc.EVENTS:
        lines.append(f"\n## {event.label}")
        lines.extend(row(stage, event) for stage in lc.Stage)
    TABLE.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    write()
