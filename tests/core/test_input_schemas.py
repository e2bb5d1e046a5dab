"""Tool input schemas from servers: patterns cannot freeze the process, and a schema that cannot
be applied (an unresolvable or endless ``$ref``) is a ``validation`` result, never an exception."""

from __future__ import annotations

import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest
import regex

from actors.tools import ToolRegistry, ToolResult, ToolRunner, ToolSpec, validate_inputs
from actors.tools import schema as schema_module
from actors.tools import spec as spec_module
from actors.tools.schema import PATTERN_TIMEOUT

# Generous: the check itself takes at most PATTERN_BUDGET (1 s); `re` took 52 s on the first one.
BOUND = 30.0

# `re` backtracks exponentially on both; `regex` answers the first at once and times out on the second.
NESTED = r"^(a+)+$"
ALTERNATION = r"^(a|a)+$"
BAD_TEXT = "a" * 30 + "!"


def run_bounded(action: Callable[[], ToolResult]) -> ToolResult:
    """Run ``action`` on a thread and fail the test if it has not answered within `BOUND`."""
    answers: list[ToolResult] = []
    done = threading.Event()

    def run() -> None:
        answers.append(action())
        done.set()

    worker = threading.Thread(target=run, name="test-schema-check", daemon=True)
    worker.start()
    assert done.wait(BOUND), "the check of one argument did not finish"
    worker.join(BOUND)
    return answers[0]


def runner_with(schema: dict[str, Any], name: str = "srv/tool") -> tuple[ToolRunner, list[dict[str, Any]]]:
    calls: list[dict[str, Any]] = []
    registry = ToolRegistry()
    registry.register(ToolSpec(name=name, input_schema=schema, handler=lambda i: calls.append(i) or {}))
    return ToolRunner(registry), calls


def refused(result: ToolResult) -> str:
    assert not result.success
    assert result.error_type == "validation", result
    assert result.error is not None
    return result.error


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"text": {"type": "string", "pattern": NESTED}}},
        {"type": "object", "properties": {"text": {"type": "string", "pattern": ALTERNATION}}},
    ],
    ids=["nested-quantifier", "alternation"],
)
def test_a_catastrophic_pattern_is_refused_as_validation(schema: dict[str, Any]) -> None:
    runner, calls = runner_with(schema)
    error = refused(run_bounded(lambda: runner.execute("srv/tool", {"text": BAD_TEXT})))
    pattern = schema["properties"]["text"]["pattern"]
    assert error.startswith("validation error: srv/tool: text: ")
    assert repr(pattern) in error
    assert calls == []
    # The same schema still passes what it should.
    assert runner.execute("srv/tool", {"text": "aaaa"}).success


def test_a_pattern_that_times_out_says_so_and_names_the_property() -> None:
    runner, _ = runner_with({"type": "object", "properties": {"text": {"pattern": ALTERNATION}}})
    error = refused(run_bounded(lambda: runner.execute("srv/tool", {"text": BAD_TEXT})))
    assert f"text: checking the value {BAD_TEXT!r} against the pattern {ALTERNATION!r} took too long" in error


def test_patterns_are_matched_with_a_timeout_and_without_the_gil(monkeypatch: pytest.MonkeyPatch) -> None:
    # `re` holds the GIL for the whole match: the event loop and every actor froze with it.
    seen: list[dict[str, Any]] = []
    real = regex.search

    def spy(pattern: str, text: str, **options: Any) -> Any:
        seen.append(options)
        return real(pattern, text, **options)

    monkeypatch.setattr(regex, "search", spy)
    runner, _ = runner_with(
        {
            "type": "object",
            "properties": {"text": {"pattern": "^a"}},
            "patternProperties": {"^t": {}},
            "additionalProperties": False,
        }
    )
    assert runner.execute("srv/tool", {"text": "abc"}).success
    assert seen
    assert all(o["concurrent"] is True and 0 < o["timeout"] <= PATTERN_TIMEOUT for o in seen), seen


def test_a_catastrophic_pattern_does_not_freeze_the_process() -> None:
    # In a child process: with `re` this match takes hours and holds the GIL, so the test
    # could not even time out in-process.
    schema = {"properties": {"text": {"pattern": NESTED}}}
    script = (
        "from actors.tools import ToolSpec, validate_inputs\n"
        f"spec = ToolSpec(name='srv/tool', input_schema={schema!r})\n"
        "print(validate_inputs(spec, {'text': 'a' * 40 + '!'}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=BOUND * 2, check=True
    )
    assert f"does not match {NESTED!r}" in done.stdout


@pytest.mark.parametrize(
    ("schema", "arguments", "fragment"),
    [
        (
            {"type": "object", "patternProperties": {NESTED: {}}, "additionalProperties": False},
            {BAD_TEXT: 1},
            f"{BAD_TEXT!r} does not match any of the regexes: {NESTED!r}",
        ),
        (
            {"type": "object", "patternProperties": {ALTERNATION: {"type": "integer"}}},
            {BAD_TEXT: 1},
            f"{BAD_TEXT}: checking the property name {BAD_TEXT!r} "
            f"against the pattern {ALTERNATION!r} took too long",
        ),
        (
            {"type": "object", "patternProperties": {NESTED: {}}, "unevaluatedProperties": False},
            {BAD_TEXT: 1},
            f"Unevaluated properties are not allowed ({BAD_TEXT!r} was unexpected)",
        ),
        (
            {"type": "object", "propertyNames": {"pattern": NESTED}},
            {BAD_TEXT: 1},
            f"(root): {BAD_TEXT!r} does not match {NESTED!r}",
        ),
        (
            {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "properties": {"text": {"pattern": NESTED}, "child": {"$ref": "#"}},
            },
            {"child": {"text": BAD_TEXT}},
            f"child/text: {BAD_TEXT!r} does not match {NESTED!r}",
        ),
        (
            {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": {"items": {"type": "array", "items": {"pattern": NESTED}}},
            },
            {"items": ["aaa", BAD_TEXT]},
            f"items/1: {BAD_TEXT!r} does not match {NESTED!r}",
        ),
    ],
    ids=[
        "additionalProperties",
        "patternProperties",
        "unevaluatedProperties",
        "propertyNames",
        "ref-to-a-root-with-schema",
        "draft-07",
    ],
)
def test_every_keyword_that_matches_patterns_is_bounded(
    schema: dict[str, Any], arguments: dict[str, Any], fragment: str
) -> None:
    runner, calls = runner_with(schema)
    error = refused(run_bounded(lambda: runner.execute("srv/tool", arguments)))
    assert fragment in error
    assert calls == []


def test_patterns_of_one_call_share_a_budget() -> None:
    # "z" is checked first (schema order) and spends the budget; "a" is reported first (sorted).
    slow = {"pattern": ALTERNATION}
    schema = {"type": "object", "properties": {"z": {"type": "array", "items": slow}, "a": slow}}
    runner, _ = runner_with(schema)
    texts = [BAD_TEXT + str(i) for i in range(20)]
    error = refused(run_bounded(lambda: runner.execute("srv/tool", {"z": texts, "a": BAD_TEXT})))
    assert f"a: checking the value {BAD_TEXT!r} against the pattern {ALTERNATION!r} was not done" in error
    assert "(+16 more)" in error


def test_an_invalid_pattern_is_a_schema_problem_not_a_crash() -> None:
    for schema in (
        {"type": "object", "properties": {"text": {"pattern": "("}}},
        {"type": "object", "patternProperties": {"(": {}}},
    ):
        runner, calls = runner_with(schema)
        error = refused(runner.execute("srv/tool", {"text": "x", "(": 1}))
        assert "the tool's input schema is invalid" in error
        assert calls == []


def test_format_regex_is_checked_with_the_regex_module() -> None:
    runner, _ = runner_with({"type": "object", "properties": {"expr": {"type": "string", "format": "regex"}}})
    assert runner.execute("srv/tool", {"expr": r"^\d+$"}).success
    assert "is not a 'regex'" in refused(runner.execute("srv/tool", {"expr": "(unclosed"}))


def test_each_tool_schema_is_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[object] = []
    real = spec_module.input_validator_for

    def counting(schema: Any) -> Any:
        compiled.append(schema)
        return real(schema)

    monkeypatch.setattr(spec_module, "input_validator_for", counting)
    good = ToolSpec(
        name="srv/good", input_schema={"type": "object", "properties": {"n": {"type": "integer"}}}
    )
    bad = ToolSpec(name="srv/bad", input_schema={"type": "no-such-type"})
    for _ in range(3):
        assert validate_inputs(good, {"n": 1}) is None
        assert validate_inputs(good, {"n": "x"}) is not None
        assert "schema is invalid" in (validate_inputs(bad, {}) or "")
    assert compiled == [good.input_schema, bad.input_schema]
    assert good.input_validator is good.compiled_input_schema
    with pytest.raises(jsonschema.SchemaError):
        bad.input_validator  # noqa: B018


# ---- schemas that cannot be applied -------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "fragment"),
    [
        (
            {"type": "object", "properties": {"n": {"$ref": "#/defs/x"}}},
            "the tool's input schema is invalid: unresolvable $ref '#/defs/x'",
        ),
        (
            {"type": "object", "properties": {"n": {"$ref": "other.json"}}},
            "the tool's input schema is invalid: unresolvable $ref 'other.json'",
        ),
        (
            {"type": "object", "properties": {"n": {"$ref": "#no-such-anchor"}}},
            "the tool's input schema is invalid: unresolvable $ref",
        ),
        (
            {"type": "object", "unevaluatedProperties": False, "allOf": [{"$ref": "#/$defs/gone"}]},
            "the tool's input schema is invalid: unresolvable $ref '#/$defs/gone'",
        ),
        ({"$ref": "#"}, "refers to itself without end"),
        (
            {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
            "without end",
        ),
        ({"$schema": ["not", "a", "uri"], "type": "object"}, "the tool's input schema is invalid"),
    ],
    ids=["pointer", "relative-uri", "anchor", "under-unevaluated", "self", "loop", "odd-$schema"],
)
def test_a_schema_that_cannot_be_applied_is_a_validation_result(
    schema: dict[str, Any], fragment: str
) -> None:
    spec = ToolSpec(name="srv/tool", input_schema=schema)
    problem = validate_inputs(spec, {"n": 1})
    assert problem is not None and problem.startswith("srv/tool: ")
    assert fragment in problem
    runner, calls = runner_with(schema)
    assert fragment in refused(runner.execute("srv/tool", {"n": 1}))
    assert calls == []


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    opened: list[object] = []

    def urlopen(*args: object, **kwargs: object) -> None:
        opened.append(args)
        raise OSError("no network in this test")

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    return opened


def test_a_remote_ref_is_never_fetched(no_network: list[object]) -> None:
    # jsonschema's default registry fetches remote refs with urlopen, on the calling (actor) thread.
    url = "http://127.0.0.1:9/schema.json"
    spec = ToolSpec(name="srv/tool", input_schema={"type": "object", "properties": {"n": {"$ref": url}}})
    problem = validate_inputs(spec, {"n": 1})
    assert problem is not None and f"unresolvable $ref {url!r}" in problem
    assert no_network == []


def test_a_reference_loop_stops_well_short_of_the_recursion_limit() -> None:
    # At the very limit every finalizer the garbage collector happens to run fails as well
    # (pytest reports them as unraisable exceptions): the check stops with room to spare.
    spec = ToolSpec(
        name="srv/tool", input_schema={"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}
    )
    validator = spec.input_validator
    with pytest.raises(schema_module._TooDeep):
        list(validator.iter_errors({"n": 1}))


def test_a_recursive_schema_takes_arguments_a_hundred_levels_deep() -> None:
    spec = ToolSpec(
        name="srv/tree",
        input_schema={"type": "object", "properties": {"child": {"$ref": "#"}, "n": {"type": "integer"}}},
    )
    tree: dict[str, Any] = {"n": 1}
    for _ in range(100):
        tree = {"child": tree, "n": 1}
    assert validate_inputs(spec, tree) is None
    for _ in range(1000):
        tree = {"child": tree, "n": 1}
    assert "nested too deeply" in (validate_inputs(spec, tree) or "")
