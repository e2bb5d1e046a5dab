"""The hot path's cheap checks give the answers of the thorough ones they stand in for.

`validate_inputs` passes simple schemas with a fast check before jsonschema, and `check_json`
skips encoding a value its walk has measured; neither may ever pass what the thorough check
refuses, nor change a message.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.tools import ToolSpec, check_json, validate_inputs
from actors.tools.schema import _fast_check, compile_input_check

SIMPLE_SCHEMAS: list[dict[str, Any]] = [
    # What the SDK's MCPServer and FastMCP generate for `def echo(text: str)`.
    {
        "type": "object",
        "properties": {"text": {"title": "Text", "type": "string"}},
        "required": ["text"],
        "title": "echoArguments",
    },
    {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "number", "default": 1.5},
            "flag": {"type": "boolean"},
            "items": {"type": "array"},
            "extra": {"type": "object", "description": "anything"},
            "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "either": {"type": ["integer", "string"]},
            "free": {},
        },
        "required": ["a"],
        "additionalProperties": False,
    },
    {"properties": {"n": {"type": "null"}}, "additionalProperties": True},
    {"type": "object"},
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=8,
)
keys = st.sampled_from(["text", "a", "b", "flag", "items", "extra", "maybe", "either", "free", "n", "other"])
arguments = st.dictionaries(keys, json_values, max_size=6)


def spec_for(schema: dict[str, Any]) -> ToolSpec:
    return ToolSpec(name="ns/tool", description="a tool", input_schema=schema)


@pytest.mark.parametrize("schema", SIMPLE_SCHEMAS)
def test_simple_schemas_have_a_fast_check(schema: dict[str, Any]) -> None:
    spec = spec_for(schema)
    compile_input_check(spec)
    validator = spec.compiled_input_schema
    assert not isinstance(validator, str)
    assert _fast_check(validator) is not None


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"s": {"type": "string", "minLength": 2}}},
        {"type": "object", "properties": {"s": {"type": "string", "format": "email"}}},
        {"type": "object", "properties": {"s": {"enum": ["a", "b"]}}},
        {"type": "object", "properties": {"s": {"$ref": "#/$defs/x"}}, "$defs": {"x": {"type": "string"}}},
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"$schema": "http://json-schema.org/draft-03/schema#", "properties": {"s": {"required": True}}},
        {"type": "array"},
    ],
)
def test_other_schemas_go_to_jsonschema(schema: dict[str, Any]) -> None:
    validator = spec_for(schema).compiled_input_schema
    assert not isinstance(validator, str)
    assert _fast_check(validator) is None


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SIMPLE_SCHEMAS), arguments)
def test_the_answer_is_jsonschemas(schema: dict[str, Any], inputs: dict[str, Any]) -> None:
    spec = spec_for(schema)
    problem = validate_inputs(spec, inputs)
    valid = jsonschema.Draft202012Validator(schema).is_valid(inputs)
    assert (problem is None) == valid, (schema, inputs, problem)


@pytest.mark.parametrize(
    ("inputs", "wanted"),
    [
        ({"a": 1.0}, None),  # a whole float is an integer (draft 6 on): jsonschema decides
        ({"a": True}, "a: True is not of type 'integer'"),
        ({"a": 1, "other": 2}, "Additional properties are not allowed ('other' was unexpected)"),
        ({}, "'a' is a required property"),
        ({"a": 1, "maybe": 3}, "maybe: 3 is not valid under any of the given schemas"),
    ],
)
def test_refusals_are_worded_by_jsonschema(inputs: dict[str, Any], wanted: str | None) -> None:
    problem = validate_inputs(spec_for(SIMPLE_SCHEMAS[1]), inputs)
    if wanted is None:
        assert problem is None
    else:
        assert problem is not None and wanted in problem, problem


def encoded_size(value: Any) -> int:
    return len(json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8"))


@pytest.mark.parametrize(
    ("value", "wanted"),
    [
        ({"a": math.inf}, "Out of range float"),
        ({"a": [1, -math.inf]}, "Out of range float"),
        ({"\ud800": 1}, "surrogates not allowed"),
        ({"a": {"é\udfff": 1}}, "surrogates not allowed"),
        ({"a": ["x", "\ud800"]}, "surrogates not allowed"),
    ],
)
def test_what_the_encoder_refuses_is_still_refused(value: Any, wanted: str) -> None:
    problem = check_json(value, "arguments")
    assert problem is not None and wanted in problem, problem


def test_big_ints_are_the_encoders_to_judge() -> None:
    # 3,500 digits encode; 5,000 are over what str() converts by default.
    assert check_json({"n": 10**3500}, "arguments") is None
    if sys.get_int_max_str_digits() and sys.get_int_max_str_digits() < 5000:
        problem = check_json({"n": 10**5000}, "arguments")
        assert problem is not None and "not JSON-serialisable" in problem
    # Over the limit it is refused as over, without turning it into text.
    problem = check_json({"n": 10**5000}, "arguments", max_bytes=100)
    assert problem is not None and "over the 100 bytes limit" in problem


@pytest.mark.parametrize("char", ["\n", '"', "\\", "\x01", "é"])
def test_near_the_limit_the_size_is_exact(char: str) -> None:
    # Escapes make a value longer than the walk counts: near the limit it is encoded.
    value = {"t": char * 100}
    size = encoded_size(value)
    assert check_json(value, "arguments", max_bytes=size) is None
    assert check_json(value, "arguments", max_bytes=size - 1) is not None
