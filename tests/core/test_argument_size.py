"""`check_json` caps the encoded size of arguments, and finds out before encoding them."""

from __future__ import annotations

import json
import types
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.tools import (
    DEFAULT_MAX_ARGUMENT_BYTES,
    ToolRegistry,
    ToolRunner,
    ToolSpec,
    check_json,
    json_check,
)

MB = 1024 * 1024


def encoded_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))


@pytest.fixture
def no_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if `check_json` serialises the value."""

    def dumps(*args: object, **kwargs: object) -> str:
        raise AssertionError("check_json encoded a value that is over the limit")

    monkeypatch.setattr(json_check, "json", types.SimpleNamespace(dumps=dumps))


def test_the_default_limit_is_16_mb() -> None:
    assert DEFAULT_MAX_ARGUMENT_BYTES == 16 * MB


@pytest.mark.usefixtures("no_encoding")
def test_arguments_over_the_limit_are_refused_with_the_limit_named() -> None:
    problem = check_json({"text": "a" * (42 * MB)}, "arguments")
    assert problem == "arguments are at least 42 MB, over the 16 MB limit (maxArgumentBytes)"


def test_the_limit_is_exact_at_its_edge() -> None:
    # '{"text": "' + text + '"}' is 12 bytes around the text.
    assert check_json({"text": "a" * (16 * MB - 12)}, "arguments") is None
    problem = check_json({"text": "a" * (16 * MB - 11)}, "arguments")
    assert problem is not None and "over the 16 MB limit (maxArgumentBytes)" in problem


@pytest.mark.parametrize("char", ["a", "é", "€", "😀", "\n", '"'])
def test_small_limits_are_exact_for_any_text(char: str) -> None:
    value = {"t": char * 50}
    size = encoded_size(value)
    assert check_json(value, "arguments", max_bytes=size) is None
    problem = check_json(value, "arguments", max_bytes=size - 1)
    assert problem is not None and f"over the {size - 1} bytes limit" in problem


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=30,
)


@given(json_values)
def test_a_value_fits_a_limit_of_its_own_size_and_not_one_byte_less(value: Any) -> None:
    # The estimate must never count more than the encoding has, or a fitting value is refused.
    size = encoded_size(value)
    assert check_json(value, "arguments", max_bytes=size) is None
    problem = check_json(value, "arguments", max_bytes=size - 1)
    assert problem is not None and "limit (maxArgumentBytes)" in problem


@pytest.mark.usefixtures("no_encoding")
def test_nested_big_lists_are_refused() -> None:
    row = ["x" * 1000] * 100
    problem = check_json({"a": [{"rows": [row] * 50}] * 10}, "arguments")
    assert problem is not None
    assert problem.startswith("arguments are at least 16")
    assert problem.endswith("over the 16 MB limit (maxArgumentBytes)")


class Unencodable(str):
    """Text that fails the test if anything encodes it."""

    def encode(self, *args: Any, **kwargs: Any) -> bytes:
        raise AssertionError("this text was encoded")


@pytest.mark.usefixtures("no_encoding")
def test_the_walk_stops_as_soon_as_it_is_over() -> None:
    # Past the limit come text that must not be encoded and a value that is not JSON at all:
    # reaching either would fail the test or give another answer.
    big = "b" * MB
    tail: list[Any] = [Unencodable("é" * 100)] * 1_000_000 + [object()]
    problem = check_json({"head": [big] * 17, "tail": tail}, "arguments")
    assert problem is not None and problem.startswith("arguments are at least 16")


@pytest.mark.usefixtures("no_encoding")
def test_text_longer_than_the_room_left_is_not_encoded() -> None:
    problem = check_json({"t": Unencodable("é" * (17 * MB))}, "arguments")
    assert problem is not None and "at least 17 MB" in problem


def test_a_5_mb_argument_passes() -> None:
    assert check_json({"text": "é" * (5 * MB // 2)}, "arguments") is None


def test_no_limit() -> None:
    assert check_json({"text": "a" * (17 * MB)}, "outputs", max_bytes=None) is None
    assert check_json({"n": [1.5, None, True]}, "outputs", max_bytes=None) is None


def test_strictness_is_kept_under_the_limit() -> None:
    loop: list[Any] = []
    loop.append(loop)
    assert "Circular reference" in (check_json({"a": loop}, "arguments") or "")
    assert "object key 1 is not a string" in (check_json({"a": {1: "x"}}, "arguments") or "")
    assert "nested too deeply" in (check_json(nest(100_000), "arguments") or "")
    assert "Out of range float" in (check_json({"a": float("nan")}, "arguments") or "")
    assert "surrogates not allowed" in (check_json({"a": "\ud800"}, "arguments") or "")


def nest(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def test_the_runner_refuses_oversized_inputs_before_the_handler() -> None:
    calls: list[dict[str, Any]] = []
    registry = ToolRegistry()
    registry.register(ToolSpec(name="x/take", handler=lambda i: calls.append(i) or {}))
    runner = ToolRunner(registry)
    result = runner.execute("x/take", {"text": "a" * (17 * MB)})
    assert result.error_type == "validation"
    assert (
        result.error
        == "validation error: arguments are at least 17 MB, over the 16 MB limit (maxArgumentBytes)"
    )
    assert calls == []


def test_the_runner_does_not_limit_outputs() -> None:
    registry = ToolRegistry()
    registry.register(ToolSpec(name="x/give", handler=lambda i: {"text": "a" * (17 * MB)}))
    result = ToolRunner(registry).execute("x/give", {})
    assert result.success and len(result.output["text"]) == 17 * MB  # type: ignore[index]
