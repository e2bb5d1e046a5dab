"""A call's arguments as typed on the command line, as fastmcp's ``call`` and the MCP Inspector's
CLI take them: one JSON object, or ``key=value`` words whose values the tool's input schema
types (``count=3`` is the integer 3 when ``count`` is an integer, the text ``"3"`` when it is
text), or both (the words override the object's keys).

Pure functions: what cannot be read is an `ArgumentsError` that says which word and why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["ArgumentsError", "needs_schema", "parse_arguments"]

_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


class ArgumentsError(ValueError):
    """Words that are not arguments; the message names the word."""


def needs_schema(words: Sequence[str]) -> bool:
    """Whether the words hold a ``key=value`` (whose value the tool's schema types)."""
    return any(not _is_json(word) for word in words)


def parse_arguments(
    words: Sequence[str], schema: Mapping[str, Any] | None = None, what: str = "arguments"
) -> dict[str, Any]:
    """The arguments object of ``words``: JSON objects merged in order, then each ``key=value``
    typed by ``schema``'s property ``key`` (text when the schema does not say). ``what`` names
    them in an error."""
    arguments: dict[str, Any] = {}
    properties = (schema or {}).get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    for word in words:
        if _is_json(word):
            arguments.update(_json_object(word, what))
            continue
        key, sep, raw = word.partition("=")
        if not sep or not key:
            raise ArgumentsError(f"{word!r} is neither key=value nor a JSON object")
        prop = properties.get(key)
        arguments[key] = typed(raw, prop if isinstance(prop, Mapping) else {}, key)
    return arguments


def typed(raw: str, schema: Mapping[str, Any], key: str = "value") -> Any:
    """``raw`` as the type ``schema`` names: text unless the schema rules text out."""
    types = _types(schema)
    if raw == "null" and "null" in types and "string" not in types:
        return None
    if not types or "string" in types:
        return raw
    if "integer" in types or "number" in types:
        number = _number(raw, integer_only="number" not in types)
        if number is not None:
            return number
    if "boolean" in types and raw.lower() in _BOOLEANS:
        return _BOOLEANS[raw.lower()]
    if types & {"array", "object"}:
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ArgumentsError(f"{key}: {raw!r} is not JSON ({exc.msg})") from None
    wanted = " or ".join(sorted(types - {"null"}))
    raise ArgumentsError(f"{key}: {raw!r} is not {_a(wanted)}")


def _types(schema: Mapping[str, Any]) -> set[str]:
    """The JSON types ``schema`` allows (``anyOf``/``oneOf`` branches included); empty if any."""
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    found: set[str] = set()
    for union in ("anyOf", "oneOf"):
        branches = schema.get(union)
        if isinstance(branches, list):
            for branch in branches:
                branch_types = _types(branch) if isinstance(branch, Mapping) else set()
                if not branch_types:
                    return set()  # a branch that allows anything: so does the whole
                found |= branch_types
    return found


def _number(raw: str, *, integer_only: bool) -> int | float | None:
    try:
        return int(raw)
    except ValueError:
        pass
    if integer_only:
        return None
    try:
        return float(raw)
    except ValueError:
        return None


def _json_object(word: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(word)
    except json.JSONDecodeError as exc:
        raise ArgumentsError(f"{what} are not JSON: {exc.msg} (at character {exc.pos})") from None
    if not isinstance(value, dict):
        raise ArgumentsError(f"{what} must be a JSON object")
    return value


def _a(wanted: str) -> str:
    return f"an {wanted}" if wanted[:1] in "aeiou" else f"a {wanted}"


def _is_json(word: str) -> bool:
    """Whether a word is meant as JSON (an object, or by mistake an array), not ``key=value``."""
    return word.lstrip()[:1] in ("{", "[")
