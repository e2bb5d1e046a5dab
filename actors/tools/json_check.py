"""`check_json`: is a value strict JSON, and small enough to send."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable
from typing import Any

from actors.tools.json_size import encoded_size

__all__ = ["DEFAULT_MAX_ARGUMENT_BYTES", "JSONProblem", "check_json", "json_problem"]

DEFAULT_MAX_ARGUMENT_BYTES = 16 * 1024 * 1024
"""The largest encoded arguments a call may have unless a server's ``maxArgumentBytes`` says otherwise."""

_MB = 1024 * 1024
_KB = 1024
# The longest escape of one character (``\u001f``) in ``json.dumps(..., ensure_ascii=False)``.
_MOST_PER_CHAR = 6
# Beyond about this many bits an int has more digits than ``str()`` converts by default.
_MOST_INT_BITS = 10_000


JSONProblem = tuple[bool, str]
"""``(too_large, why)``: whether the value is over the size limit (else it is not strict JSON), and why."""


def check_json(value: Any, what: str, *, max_bytes: int | None = DEFAULT_MAX_ARGUMENT_BYTES) -> str | None:
    """Return why ``value`` is not strict JSON of at most ``max_bytes`` as UTF-8, or None if it is."""
    problem = json_problem(value, what, max_bytes=max_bytes)
    return None if problem is None else problem[1]


def json_problem(
    value: Any, what: str, *, max_bytes: int | None = DEFAULT_MAX_ARGUMENT_BYTES
) -> JSONProblem | None:
    """`check_json`, classified: ``(True, why)`` when ``value`` is too large, ``(False, why)`` when
    it is not strict JSON, None when it is fine.

    Strict: no NaN or infinity, object keys that are strings (``json`` would quietly turn
    ``1`` into ``"1"``), and text that encodes as UTF-8 (no lone surrogates). ``max_bytes``
    None sets no limit. The size is estimated before anything is encoded, so a value far over
    the limit is refused at once.
    """
    try:
        size = _size(value, sys.maxsize if max_bytes is None else max_bytes)
    except _Over as over:
        return True, f"{what} are at least {_amount(over.size)}, over the {_limit(max_bytes)}"
    except _NonStringKey as bad:
        return False, f"{what} are not JSON-serialisable: object key {bad.key!r} is not a string"
    except (_NotJSON, RecursionError):
        pass  # the encoding below says what is wrong
    else:
        # The walk found only what the encoder accepts; escapes at most multiply the size by
        # six, so small values need no encoding (it would cost more than the walk).
        if max_bytes is None or size * _MOST_PER_CHAR <= max_bytes:
            return None
        # Near the limit: the exact size, a piece at a time (one json.dumps of megabytes holds
        # the GIL, and so stalls every thread, the event loop's too, for as long as it runs).
        exact = encoded_size(value)
        return (
            (True, f"{what} are {_amount(exact)}, over the {_limit(max_bytes)}")
            if exact > max_bytes
            else None
        )
    try:
        # It also refuses circular structures and says so (the walk above just gives up on them).
        encoded = json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except RecursionError:
        return False, f"{what} are not JSON-serialisable: nested too deeply"
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
        return False, f"{what} are not JSON-serialisable: {exc}"
    # The estimate leaves out escapes (a control character takes six bytes); this is exact.
    if max_bytes is not None and len(encoded) > max_bytes:
        return True, f"{what} are {_amount(len(encoded))}, over the {_limit(max_bytes)}"
    return None


def _limit(max_bytes: int | None) -> str:
    return f"{_amount(max_bytes or 0)} limit (maxArgumentBytes)"


def _amount(size: int) -> str:
    if size >= _MB:
        return f"{size / _MB:.1f}".removesuffix(".0") + " MB"
    if size >= _KB:
        return f"{size / _KB:.1f}".removesuffix(".0") + " KB"
    return f"{size} bytes"


class _Over(Exception):
    """The encoded size passed the limit: ``size`` bytes were counted when the walk stopped."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


class _NonStringKey(Exception):
    def __init__(self, key: object) -> None:
        super().__init__(key)
        self.key = key


class _NotJSON(Exception):
    """A value the encoder refuses (a type JSON has not, NaN, a lone surrogate, a huge int):
    the encoder words the error better."""


# The walk is a lower bound of the compact-enough encoding ``json.dumps`` gives (", " and ": "
# separators), without escapes. It is recursive for speed; a circular structure ends it with a
# RecursionError, as does nesting deeper than the encoder itself accepts. It accepts only what
# the encoder accepts, so a value it measures needs no encoding unless it is near the limit.


def _size(value: Any, room: int) -> int:
    """The size of ``value`` encoded, or `_Over` once it passes ``room``."""
    if isinstance(value, str):
        size = _text_size(value, room)
    elif isinstance(value, dict | list | tuple):
        return _container_size(value, room)
    elif value is None or isinstance(value, bool):
        size = 4
    elif isinstance(value, int):
        size = _digits(value, room)
    elif isinstance(value, float) and math.isfinite(value):
        size = len(repr(value))
    else:
        raise _NotJSON
    if size > room:
        raise _Over(size)
    return size


def _container_size(container: dict[Any, Any] | list[Any] | tuple[Any, ...], room: int) -> int:
    count = len(container)
    size = 2 + 2 * max(count - 1, 0)
    items: Iterable[Any] = container
    if isinstance(container, dict):
        size += 2 * count
        for key in container:
            if not isinstance(key, str):
                raise _NonStringKey(key)
            size += len(key) + 2 if key.isascii() else _text_size(key, sys.maxsize)
        items = container.values()
    if size > room:
        raise _Over(size)
    # Plain types inline: this loop is the cost of the whole check for structure-heavy values.
    for item in items:
        kind = type(item)
        if kind is str:
            size += _text_size(item, room - size)
        elif kind is int:
            size += _digits(item, room - size)
        else:
            try:
                size += _size(item, room - size)
            except _Over as over:
                over.size += size
                raise
        if size > room:
            raise _Over(size)
    return size


def _text_size(text: str, room: int) -> int:
    # UTF-8 takes a byte or more per character: text longer than the room left is over without
    # encoding it, so at most ``room`` characters are ever encoded.
    if text.isascii() or len(text) > room:
        return len(text) + 2
    try:
        return len(text.encode("utf-8")) + 2
    except UnicodeEncodeError:  # a lone surrogate
        raise _NotJSON from None


def _digits(number: int, room: int) -> int:
    # A lower bound from the bit length: str() of a huge int is slow (and refused past 4300 digits).
    bits = number.bit_length()
    size = max(1, (bits - 1) * 30102 // 100000 + 1) + (number < 0)
    if bits > _MOST_INT_BITS and size <= room:
        raise _NotJSON  # whether the encoder takes it is the encoder's to say
    return size
