"""`encoded_size`: the exact size of a value's JSON, worked out a piece at a time.

``len(json.dumps(value, ensure_ascii=False).encode())`` is one call that holds the GIL for as
long as it encodes: 50 ms or more for a 5 MB argument, during which no other thread (the event
loop's included) runs. This walk gives the same number, encoding long strings in pieces, so
the interpreter can hand the GIL to other threads between them.
"""

from __future__ import annotations

from json.encoder import encode_basestring
from typing import Any, Final

__all__ = ["encoded_size"]

_PIECE: Final = 64 * 1024
"""Characters of a long string encoded in one call."""


def encoded_size(value: Any) -> int:
    """The length in bytes of ``json.dumps(value, ensure_ascii=False)`` in UTF-8.

    Only for a value the encoder accepts (strings, finite numbers, booleans, None, lists,
    tuples, dicts with string keys; text without lone surrogates): check it first (the walk
    of `actors.tools.check_json` does). Raises ``TypeError`` for a type JSON has not.
    """
    if isinstance(value, str):
        return text_size(value)
    if value is None or value is True:
        return 4
    if value is False:
        return 5
    if isinstance(value, int):
        return len(int.__repr__(value))
    if isinstance(value, float):
        return len(float.__repr__(value))
    if isinstance(value, dict):
        # "{", "}", ", " between items and ": " in each.
        size = 2 + 2 * max(len(value) - 1, 0) + 2 * len(value)
        for key, item in value.items():
            size += text_size(key) + encoded_size(item)
        return size
    if isinstance(value, list | tuple):
        size = 2 + 2 * max(len(value) - 1, 0)
        for item in value:
            size += encoded_size(item)
        return size
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def text_size(text: str) -> int:
    """The length in bytes of the JSON string literal of ``text`` (quotes included) in UTF-8."""
    if len(text) <= _PIECE:
        return _literal_size(text)
    size = 2
    for start in range(0, len(text), _PIECE):
        size += _literal_size(text[start : start + _PIECE]) - 2
    return size


def _literal_size(text: str) -> int:
    literal = encode_basestring(text)
    return len(literal) if literal.isascii() else len(literal.encode("utf-8"))
