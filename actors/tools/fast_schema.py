"""The fast path of input validation: schemas as simple as most tools have, in well under a microsecond.

Used by `actors.tools.schema`, which falls back to jsonschema for anything this does not pass.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from jsonschema.protocols import Validator

__all__ = ["FastCheck", "fast_check"]

# ---- the fast path: schemas as simple as most tools have --------------------------------
#
# jsonschema takes ~5 us to find nothing wrong with ``{"text": "hi"}`` against a one-property
# schema. A tool's schema made only of ``type``, ``properties`` (each a type, or ``anyOf`` of
# types), ``required``, ``additionalProperties`` (a boolean) and annotations is checked here in
# well under a microsecond. The fast check says only "valid": anything it does not pass (a
# float for an integer, a ``Decimal`` number, a wrong type) goes to jsonschema, which decides
# and words the errors, so the answers are jsonschema's. Draft 3 (``required`` inside
# properties) is never fast-checked.

_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly"}
)
_ROOT_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties"})

_TYPE_TESTS: dict[str, Callable[[Any], bool]] = {
    "string": lambda value: isinstance(value, str),
    # Floats that are whole numbers (draft 6+) and Decimals go to jsonschema.
    "integer": lambda value: type(value) is int,
    "number": lambda value: type(value) is int or type(value) is float,
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
    "array": lambda value: isinstance(value, list),
    "object": lambda value: isinstance(value, dict),
}

FastCheck = Callable[[Any], bool]

# id(validator) -> (a weak reference to it, its fast check or None): validators are unhashable.
_fast: dict[int, tuple[weakref.ref[Any], FastCheck | None]] = {}


def fast_check(validator: Validator, *, skip: type | None = None) -> FastCheck | None:
    """The fast check of ``validator``'s schema, compiled on first use, or None if it has none
    (or ``validator`` is of class ``skip``: draft 3's)."""
    key = id(validator)
    known = _fast.get(key)
    if known is not None and known[0]() is validator:
        return known[1]
    check = None if type(validator) is skip else _compile_fast(validator.schema)
    _fast[key] = (weakref.ref(validator, lambda _: _fast.pop(key, None)), check)
    return check


def _types_test(types: Any) -> FastCheck | None:
    names = [types] if isinstance(types, str) else types
    if not isinstance(names, list) or not names:
        return None
    tests = []
    for name in names:
        test = _TYPE_TESTS.get(name) if isinstance(name, str) else None
        if test is None:
            return None
        tests.append(test)
    if len(tests) == 1:
        return tests[0]
    return lambda value: any(test(value) for test in tests)


def _value_test(schema: Any) -> FastCheck | None:
    """A property's test: ``type`` or ``anyOf`` of ``type`` schemas, with annotations."""
    if schema is True:
        return lambda value: True
    if not isinstance(schema, dict):
        return None
    keywords = schema.keys() - _ANNOTATIONS
    if not keywords:
        return lambda value: True
    if keywords == {"type"}:
        return _types_test(schema["type"])
    branches = schema.get("anyOf")
    if keywords != {"anyOf"} or not isinstance(branches, list) or not branches:
        return None
    names: list[Any] = []
    for branch in branches:
        if not isinstance(branch, dict) or branch.keys() - _ANNOTATIONS != {"type"}:
            return None
        types = branch["type"]
        names.extend([types] if isinstance(types, str) else types if isinstance(types, list) else [None])
    return _types_test(names)


def _compile_fast(schema: Any) -> FastCheck | None:
    if not isinstance(schema, dict) or not schema.keys() - _ANNOTATIONS <= _ROOT_KEYWORDS:
        return None
    if schema.get("type", "object") != "object":
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(required, list) or not isinstance(extra, bool):
        return None
    if not all(isinstance(name, str) for name in required):
        return None
    tests: dict[str, FastCheck] = {}
    for name, subschema in properties.items():
        test = _value_test(subschema)
        if test is None:
            return None
        tests[name] = test
    needed = tuple(required)
    closed = not extra

    def check(inputs: Any) -> bool:
        if not isinstance(inputs, dict):
            return False
        for name in needed:
            if name not in inputs:
                return False
        for name, value in inputs.items():
            test = tests.get(name)
            if test is None:
                if closed:
                    return False
            elif not test(value):
                return False
        return True

    return check
