"""One name, one class (issue 40): no two classes in ``actors/`` share a name, private ones
included, so that a name in a traceback, a log line or a review says which class it is. A
class nested in another counts by its own name."""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable

from tests.architecture.house import modules


def shared_names(sources: Iterable[tuple[str, ast.Module]]) -> dict[str, list[str]]:
    """Each class name that more than one class has, and the modules that define them."""
    found: dict[str, list[str]] = defaultdict(list)
    for path, tree in sources:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found[node.name].append(path)
    return {name: paths for name, paths in found.items() if len(paths) > 1}


def test_no_two_classes_share_a_name() -> None:
    shared = shared_names((m.path, m.tree) for m in modules().values())
    assert not shared, "classes that share a name: " + "; ".join(
        f"{name} in {', '.join(paths)}" for name, paths in sorted(shared.items())
    )


def test_a_shared_name_is_found_nested_or_private() -> None:
    first = ast.parse("class Plan:\n    class _Step: ...\n")
    second = ast.parse("class _Step: ...\nclass Other: ...\n")
    assert shared_names([("a.py", first), ("b.py", second)]) == {"_Step": ["a.py", "b.py"]}
