"""The check every architecture rule shares: what a rule finds must be exactly its allow-list.

A rule's allow-list names today's violations, one entry each, with a comment saying who removes
it. A violation not on the list fails (the house does not get worse); an entry that no longer
matches a violation fails too (delete its line: the list only shrinks).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

__all__ = ["assert_only_allowed"]


def assert_only_allowed(
    rule: str,
    found: Mapping[object, str] | Iterable[object],
    allowed: Collection[object],
) -> None:
    """Fail unless ``found`` (violations, with an explanation each if a mapping) is exactly
    ``allowed``."""
    explained = dict(found) if isinstance(found, Mapping) else {v: "" for v in found}
    new = [v for v in explained if v not in allowed]
    gone = [v for v in allowed if v not in explained]
    problems = [f"new violation of {rule!r}: {v!r} {explained[v]}".rstrip() for v in sorted(new, key=repr)]
    problems += [
        f"{v!r} is allow-listed for {rule!r} but no longer a violation: delete its line"
        for v in sorted(gone, key=repr)
    ]
    assert not problems, "\n".join(problems)
