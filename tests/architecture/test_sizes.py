"""No part of the house is too big to read alone (issue 20): no class in ``actors/`` over 400
lines, no module over 500, and `ServerActor` (the server's thin actor) under 300.

A class is measured from its first decorator to its last line, nested classes on their own as
well as inside their outer class; a module by its lines. Today's violations are allow-listed,
one entry each: a new one fails, and so does an entry that no longer is one (delete its line).
"""

from __future__ import annotations

import ast

from tests.architecture.allowances import assert_only_allowed
from tests.architecture.house import class_sizes, measure_classes, modules

MAX_CLASS_LINES = 400
MAX_MODULE_LINES = 500
# The server actor keeps the `match` dispatch and the wiring; the lifecycle, admission, waiting
# calls, counters, subscriptions and health are plain parts it owns.
SERVER_ACTOR = "ServerActor"
MAX_SERVER_ACTOR_LINES = 300

# (file, class), with the part of issue 20 that splits it ("unassigned": no part was asked to).
ALLOWED_BIG_CLASSES: frozenset[tuple[str, str]] = frozenset([])

# Files over MAX_MODULE_LINES, with the part of issue 20 that splits each.
ALLOWED_BIG_MODULES: frozenset[str] = frozenset([])

# The ServerActor itself (it has one entry or none): the lifecycle part brings it under 300.
ALLOWED_BIG_SERVER_ACTOR: frozenset[str] = frozenset(
    []
)


def test_no_class_is_over_400_lines() -> None:
    found = {(c.path, c.name): f"({c.lines} lines)" for c in class_sizes() if c.lines > MAX_CLASS_LINES}
    assert_only_allowed(f"no class over {MAX_CLASS_LINES} lines", found, ALLOWED_BIG_CLASSES)


def test_no_module_is_over_500_lines() -> None:
    found = {m.path: f"({m.lines} lines)" for m in modules().values() if m.lines > MAX_MODULE_LINES}
    assert_only_allowed(f"no module over {MAX_MODULE_LINES} lines", found, ALLOWED_BIG_MODULES)


def test_the_server_actor_is_under_300_lines() -> None:
    actors = [c for c in class_sizes() if c.name == SERVER_ACTOR]
    assert len(actors) == 1, f"expected one class {SERVER_ACTOR} in actors/, found {actors}"
    found = {c.path: f"({c.lines} lines)" for c in actors if c.lines >= MAX_SERVER_ACTOR_LINES}
    assert_only_allowed(
        f"{SERVER_ACTOR} under {MAX_SERVER_ACTOR_LINES} lines", found, ALLOWED_BIG_SERVER_ACTOR
    )


def test_a_class_is_measured_from_its_first_decorator_to_its_last_line() -> None:
    source = """
import dataclasses

@dataclasses.dataclass(
    frozen=True,
)
class Outer:
    a: int

    class Inner:
        b: int

def f() -> None:
    class Local:
        pass
"""
    sizes = {c.name: c.lines for c in measure_classes("x.py", ast.parse(source))}
    assert sizes == {"Outer": 8, "Outer.Inner": 2, "f.Local": 2}
