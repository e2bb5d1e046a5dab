"""Hypothesis strategies from JSON Schema: valid arguments for a tool, and invalid ones made from them.

`valid_arguments` covers the subset of JSON Schema that the fixture servers and the built-in
tools use (object, string, integer, number, boolean, array, enum; properties, required,
additionalProperties, dependentRequired, minLength/maxLength, pattern, minimum/maximum,
minItems/maxItems, items). Anything else raises `UnsupportedSchema`, so a tool whose schema
grows a new keyword is noticed rather than fuzzed wrongly.

`mutations` turns valid arguments into bad ones: wrong types, a missing required key, extra
properties, huge strings, deep nesting, NaN and infinity, and values that are not JSON at all.
Each mutation says what it did (`Mutation.kind`), so a test can tell what answer to expect.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

__all__ = [
    "JSON_KINDS",
    "NON_JSON_KINDS",
    "Mutation",
    "UnsupportedSchema",
    "is_strict_json",
    "json_values",
    "mutations",
    "narrow",
    "nest",
    "valid_arguments",
]

# Keywords that say nothing about which values are valid.
_ANNOTATIONS = frozenset({"$schema", "title", "description", "default", "examples", "$comment"})
_SUPPORTED = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "dependentRequired",
        "enum",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "items",
        "minItems",
        "maxItems",
    }
)

# Unicode scalar values only: a lone surrogate is not text (see NON_JSON_KINDS).
_TEXT = st.characters(exclude_categories=("Cs",))
_SMALL_TEXT = st.text(_TEXT, max_size=40)

JSON_KINDS = ("wrong_type", "missing_required", "extra_property", "huge_string", "deep_nesting", "root_type")
"""Mutations whose result is still JSON: the schema alone decides whether it is valid."""
NON_JSON_KINDS = ("nan_or_inf", "not_json")
"""Mutations whose result is not strict JSON (NaN, infinity, sets, bytes, objects, int keys)."""


class UnsupportedSchema(ValueError):
    """The schema uses a keyword this generator does not understand."""


def json_values(max_leaves: int = 8) -> st.SearchStrategy[Any]:
    """Any JSON value (strict: no NaN or infinity, text without lone surrogates)."""
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(-(2**63), 2**63)
        | st.floats(allow_nan=False, allow_infinity=False)
        | _SMALL_TEXT
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_SMALL_TEXT, inner, max_size=4),
        max_leaves=max_leaves,
    )


def narrow(schema: dict[str, Any], refinements: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``schema`` with extra constraints on some properties (say, a sleep of at most 50 ms).

    Values valid for the narrowed schema are valid for the original one too.
    """
    narrowed = copy.deepcopy(schema)
    for name, extra in refinements.items():
        narrowed.setdefault("properties", {}).setdefault(name, {}).update(extra)
    return narrowed


def _check(schema: dict[str, Any]) -> None:
    unknown = set(schema) - _SUPPORTED - _ANNOTATIONS
    if unknown:
        raise UnsupportedSchema(f"unsupported keywords {sorted(unknown)} in {schema}")


def valid_arguments(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values that ``schema`` accepts."""
    _check(schema)
    if "enum" in schema:
        return st.sampled_from(list(schema["enum"]))
    kind = schema.get("type")
    if kind == "object":
        return _objects(schema)
    if kind == "string":
        return _strings(schema)
    if kind == "integer":
        return st.integers(schema.get("minimum"), schema.get("maximum"))
    if kind == "number":
        return st.floats(schema.get("minimum"), schema.get("maximum"), allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        items = schema.get("items")
        return st.lists(
            valid_arguments(items) if items is not None else json_values(),
            min_size=schema.get("minItems", 0),
            max_size=min(schema.get("maxItems", 5), 5),
        )
    if kind is None and not (set(schema) - _ANNOTATIONS):
        return json_values()
    raise UnsupportedSchema(f"unsupported type {kind!r} in {schema}")


def _strings(schema: dict[str, Any]) -> st.SearchStrategy[str]:
    low = schema.get("minLength", 0)
    high = min(schema.get("maxLength", 60), 60)
    if "pattern" in schema:
        pattern = re.compile(schema["pattern"])
        # JSON Schema patterns are searched, not matched; ours are anchored, so fullmatch is fine.
        return st.from_regex(pattern, fullmatch=True).filter(
            lambda s: low <= len(s) <= schema.get("maxLength", 10**9)
        )
    return st.text(_TEXT, min_size=low, max_size=max(high, low))


@st.composite
def _objects(draw: st.DrawFn, schema: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    values: dict[str, Any] = {}
    for name, sub in properties.items():
        if name in required or draw(st.booleans()):
            values[name] = draw(valid_arguments(sub))
    # dependentRequired: a key that is present brings the keys it depends on.
    dependent: dict[str, list[str]] = schema.get("dependentRequired", {})
    changed = True
    while changed:
        changed = False
        for key, needs in dependent.items():
            for need in needs if key in values else ():
                if need not in values:
                    values[need] = draw(valid_arguments(properties[need]))
                    changed = True
    extra = schema.get("additionalProperties", True)
    if extra is not False and draw(st.booleans()):
        extras = draw(st.dictionaries(_SMALL_TEXT, json_values(4), max_size=2))
        values.update({k: v for k, v in extras.items() if k not in properties})
    return values


def nest(depth: int, leaf: Any = 0, kind: str = "list") -> Any:
    """``leaf`` inside ``depth`` lists (or one-key objects)."""
    value = leaf
    for _ in range(depth):
        value = [value] if kind == "list" else {"k": value}
    return value


class _Opaque:
    """An object that no JSON encoder knows."""

    def __repr__(self) -> str:
        return "<opaque>"


@dataclass(frozen=True)
class Mutation:
    kind: str
    """One of `JSON_KINDS` or `NON_JSON_KINDS`."""
    arguments: Any
    note: str

    @property
    def is_json(self) -> bool:
        return self.kind in JSON_KINDS


def is_strict_json(value: Any) -> bool:
    """Whether ``value`` is JSON a peer could read: no NaN/inf, str keys, UTF-8 encodable text.

    A walk, not ``json.dumps``: one dumps of a megabyte of text holds the GIL long enough to
    stall the runtime's loop on a busy machine, which the loop-lag guard would rightly fail.
    """
    try:
        return _strict(value, 0)
    except RecursionError:
        return False


def _strict(value: Any, depth: int) -> bool:
    if depth > 500:  # deeper than json.dumps goes by default
        return False
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, int):
        try:
            str(value)  # past sys.get_int_max_str_digits() json.dumps refuses it too
        except ValueError:
            return False
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, list | tuple):
        return all(_strict(item, depth + 1) for item in value)
    if isinstance(value, dict):
        pairs = value.items()
        return all(isinstance(k, str) and _strict(k, depth) and _strict(v, depth + 1) for k, v in pairs)
    return False


_WRONG_TYPE_VALUES: tuple[Any, ...] = (None, True, 7, 2.5, "text", [], {}, [1, "a"], {"k": "v"})
_NON_JSON_VALUES: tuple[Any, ...] = (
    {1, 2},
    b"bytes",
    _Opaque(),
    1j,
    {1: "int key"},
    frozenset({"a"}),
)


@st.composite
def mutations(
    draw: st.DrawFn,
    schema: dict[str, Any],
    kinds: tuple[str, ...] = JSON_KINDS + NON_JSON_KINDS,
    huge: int = 1_000_000,
    deep: int = 64,
) -> Mutation:
    """A valid argument object for ``schema``, spoiled one way.

    ``huge``: the length of huge strings. ``deep``: how deep deep nesting goes (the JSON stays
    serialisable; deeper values are a separate test).
    """
    base: dict[str, Any] = draw(valid_arguments(schema))
    properties: dict[str, Any] = schema.get("properties", {})
    required = list(schema.get("required", []))
    kind = draw(st.sampled_from(kinds))
    present = sorted(base)
    args = dict(base)
    if kind == "missing_required" and not required:
        kind = "extra_property"
    if kind == "wrong_type":
        if not properties:
            kind = "extra_property"
        else:
            name = draw(st.sampled_from(sorted(properties)))
            args[name] = draw(st.sampled_from(_WRONG_TYPE_VALUES))
            return Mutation(kind, args, f"{name} = {args[name]!r}")
    if kind == "missing_required":
        name = draw(st.sampled_from(required))
        args.pop(name, None)
        return Mutation(kind, args, f"without {name}")
    if kind == "extra_property":
        key = draw(_SMALL_TEXT.filter(lambda k: k not in properties))
        args[key] = draw(json_values(4))
        return Mutation(kind, args, f"extra {key!r}")
    if kind == "huge_string":
        strings = [n for n in sorted(properties) if properties[n].get("type") == "string"]
        name = draw(st.sampled_from(strings)) if strings else "huge_extra"
        args[name] = draw(st.sampled_from("xé€")) * huge
        return Mutation(kind, args, f"{name} = {huge} characters")
    if kind == "deep_nesting":
        name = draw(st.sampled_from([*present, "deep_extra"]))
        depth = draw(st.integers(8, deep))
        args[name] = nest(depth, kind=draw(st.sampled_from(["list", "dict"])))
        return Mutation(kind, args, f"{name} nested {depth} deep")
    if kind == "root_type":
        root = draw(st.sampled_from([None, [], [args], "text", 1, True]))
        return Mutation(kind, root, f"arguments = {root!r}")
    if kind == "nan_or_inf":
        numbers = [n for n in sorted(properties) if properties[n].get("type") in ("number", "integer")]
        name = draw(st.sampled_from(numbers)) if numbers else "number_extra"
        args[name] = draw(st.sampled_from([math.nan, math.inf, -math.inf]))
        return Mutation(kind, args, f"{name} = {args[name]!r}")
    # not_json: a value no JSON encoder takes, in a declared property or an extra one.
    name = draw(st.sampled_from([*sorted(properties), "opaque_extra"]))
    args[name] = draw(st.sampled_from(_NON_JSON_VALUES))
    return Mutation("not_json", args, f"{name} = {args[name]!r}")
