"""Tool input schemas: validators whose regular expressions cannot run away, and `validate_inputs`.

A server supplies its tools' schemas. jsonschema checks ``pattern``, ``patternProperties`` (also
inside ``additionalProperties`` and ``unevaluatedProperties``) and ``format: regex`` with `re`,
which holds the GIL and backtracks exponentially: ``^(a+)+$`` against 31 characters froze the
whole process for 52 s. Here those keywords use `regex` with a timeout and without the GIL, and
``$ref`` never reaches the network.
"""

from __future__ import annotations

import contextvars
import logging
import sys
import time
from collections.abc import Iterator, Mapping
from types import FrameType
from typing import Any, Protocol

import jsonschema
import referencing
import referencing.exceptions
import regex
from jsonschema import FormatChecker, ValidationError
from jsonschema.protocols import Validator

from actors.tools.fast_schema import FastCheck, fast_check

__all__ = [
    "PATTERN_BUDGET",
    "PATTERN_TIMEOUT",
    "HasInputSchema",
    "compile_input_check",
    "input_validator_for",
    "quickly_valid",
    "validate_inputs",
]

logger = logging.getLogger(__name__)

PATTERN_TIMEOUT = 0.2
"""Seconds one pattern may take to match one string; slower counts as a validation error."""
PATTERN_BUDGET = 1.0
"""Seconds all the pattern matches of one `validate_inputs` may take together."""

_MESSAGE_CHARS = 300
_VALUE_CHARS = 60


class _Budget:
    """The pattern time left to one `validate_inputs`, and what already took too long in it."""

    def __init__(self, seconds: float) -> None:
        self.ends = time.monotonic() + seconds
        # jsonschema may check one name against one pattern twice (patternProperties, then
        # additionalProperties): a second wait would be for the same answer.
        self.too_slow: set[tuple[str, str]] = set()


class HasInputSchema(Protocol):
    """What validation needs of a tool (a `ToolSpec` has it): its name and compiled input schema.

    A protocol rather than `ToolSpec` itself: the spec compiles its schema here, so this module
    must not import the spec's.
    """

    @property
    def name(self) -> str: ...

    @property
    def compiled_input_schema(self) -> Validator | str: ...


_budget: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("pattern_budget", default=None)


def validate_inputs(spec: HasInputSchema, inputs: Mapping[str, Any]) -> str | None:
    """Return why ``inputs`` break ``spec.input_schema`` (every error, briefly), or None.

    Never raises: a schema that is invalid, or that cannot be applied (an unresolvable
    ``$ref``, a reference loop), is a ``validation error`` too.
    """
    validator = spec.compiled_input_schema
    if isinstance(validator, str):
        return f"{spec.name}: the tool's input schema is invalid: {validator}"
    fast = _fast_check(validator)
    if fast is not None and fast(inputs):
        return None
    token = _budget.set(_Budget(PATTERN_BUDGET))
    try:
        errors = sorted(validator.iter_errors(inputs), key=lambda e: [str(p) for p in e.absolute_path])
    except referencing.exceptions.Unresolvable as exc:
        why = f"unresolvable $ref {_ref(exc)!r}"
        return f"{spec.name}: the tool's input schema is invalid: {why}"
    except (RecursionError, _TooDeep):
        return (
            f"{spec.name}: the arguments are nested too deeply, "
            "or the tool's input schema refers to itself without end"
        )
    except Exception as exc:
        logger.debug("applying the input schema of %s failed", spec.name, exc_info=True)
        return (
            f"{spec.name}: the tool's input schema cannot be applied: "
            f"{type(exc).__name__}: {_clip(str(exc), _MESSAGE_CHARS)}"
        )
    finally:
        _budget.reset(token)
    if not errors:
        return None
    parts: list[str] = []
    for error in errors:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        if (part := f"{where}: {_clip(error.message, _MESSAGE_CHARS)}") not in parts:
            parts.append(part)
    more = f" (+{len(parts) - 5} more)" if len(parts) > 5 else ""
    return f"{spec.name}: " + "; ".join(parts[:5]) + more


def quickly_valid(spec: HasInputSchema, inputs: Mapping[str, Any]) -> bool:
    """Whether ``inputs`` are valid by the fast check of simple schemas (well under a
    microsecond, no regular expressions); False means `validate_inputs` must decide, and it may
    take up to `PATTERN_BUDGET`: off any thread that must stay responsive."""
    validator = spec.compiled_input_schema
    if isinstance(validator, str):
        return False
    fast = _fast_check(validator)
    return fast is not None and fast(inputs)


def compile_input_check(spec: HasInputSchema) -> None:
    """Compile ``spec``'s input schema now (say, when its server lists it), not on its first call."""
    validator = spec.compiled_input_schema
    if not isinstance(validator, str):
        _fast_check(validator)


def input_validator_for(schema: Mapping[str, Any]) -> Validator:
    """A validator for ``schema`` (its draft from ``$schema``, else 2020-12) with safe regexes.

    Raises `jsonschema.SchemaError` when ``schema`` is not a valid schema (an invalid pattern
    included).
    """
    try:
        base = jsonschema.validators.validator_for(schema, jsonschema.Draft202012Validator)
        cls = _SAFE.get(base, _SAFE[jsonschema.Draft202012Validator])
        cls.check_schema(schema, format_checker=cls.FORMAT_CHECKER)
        # An empty registry: a remote ``$ref`` is unresolvable rather than fetched on this thread.
        validator: Validator = cls(schema, format_checker=cls.FORMAT_CHECKER, registry=referencing.Registry())
    except jsonschema.SchemaError:
        raise
    except RecursionError:
        raise jsonschema.SchemaError("it is nested too deeply") from None
    except Exception as exc:
        raise jsonschema.SchemaError(f"{type(exc).__name__}: {exc}") from exc
    return validator


def _ref(error: referencing.exceptions.Unresolvable) -> str:
    # jsonschema wraps referencing's error; a pointer that leads nowhere is reported without its "#".
    cause = getattr(error, "_wrapped", error)
    if isinstance(cause, referencing.exceptions.PointerToNowhere):
        return f"#{cause.ref}"
    return str(cause.ref)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


class _PatternProblem(Exception):
    """A pattern could not be checked: it took too long, or it is not a regular expression."""

    def __init__(self, pattern: str, why: str) -> None:
        super().__init__(pattern, why)
        self.pattern = pattern
        self.why = why

    def error(self, subject: str, path: tuple[str, ...] = ()) -> ValidationError:
        message = f"checking {subject} against the pattern {self.pattern!r} {self.why}"
        return ValidationError(message, path=path)


def _search(pattern: str, text: str) -> bool:
    timeout = PATTERN_TIMEOUT
    if (budget := _budget.get()) is not None:
        if (pattern, text) in budget.too_slow:
            raise _PatternProblem(pattern, "took too long")
        timeout = min(timeout, budget.ends - time.monotonic())
        if timeout <= 0:
            raise _PatternProblem(pattern, f"was not done: the {PATTERN_BUDGET:g}s for all patterns ran out")
    try:
        # concurrent: match without the GIL, so that other threads (the event loop) run meanwhile.
        return regex.search(pattern, text, timeout=timeout, concurrent=True) is not None
    except TimeoutError:
        if budget is not None:
            budget.too_slow.add((pattern, text))
        raise _PatternProblem(pattern, "took too long") from None
    except regex.error as exc:
        raise _PatternProblem(pattern, f"failed: the pattern is invalid ({exc})") from None


def _value(text: str) -> str:
    return f"the value {_clip(repr(text), _VALUE_CHARS)}"


def _name(key: str) -> str:
    return f"the property name {_clip(repr(key), _VALUE_CHARS)}"


# ---- keywords: jsonschema's, with `_search` for `re.search` ---------------------------


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    try:
        if not _search(pattern, instance):
            yield ValidationError(f"{_clip(repr(instance), _VALUE_CHARS)} does not match {pattern!r}")
    except _PatternProblem as problem:
        yield problem.error(_value(instance))


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            try:
                matched = _search(pattern, key)
            except _PatternProblem as problem:
                yield problem.error(_name(key), path=(key,))
                continue
            if matched:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = []
    for key in instance:
        if key in properties:
            continue
        try:
            if any(_search(pattern, key) for pattern in patterns):
                continue
        except _PatternProblem as problem:
            yield problem.error(_name(key), path=(key,))
            continue
        extras.append(key)
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            listed = ", ".join(repr(each) for each in sorted(patterns))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {listed}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            joined = ", ".join(repr(each) for each in sorted(extras, key=str))
            yield ValidationError(f"Additional properties are not allowed ({joined} {verb} unexpected)")


def _unevaluated_properties(
    validator: Any, unevaluated: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    try:
        evaluated = set(_evaluated_keys(validator, instance, schema))
    except _PatternProblem as problem:
        yield problem.error("a property name")
        return
    left = [
        key
        for key in instance
        if key not in evaluated
        and next(validator.descend(instance[key], unevaluated, path=key, schema_path=key), None) is not None
    ]
    if not left:
        return
    verb = "was" if len(left) == 1 else "were"
    if unevaluated is False:
        joined = ", ".join(repr(each) for each in sorted(left, key=str))
        yield ValidationError(f"Unevaluated properties are not allowed ({joined} {verb} unexpected)")
    else:
        joined = ", ".join(repr(each) for each in left)
        yield ValidationError(
            "Unevaluated properties are not valid under the given schema "
            f"({joined} {verb} unevaluated and invalid)"
        )


def _evaluated_keys(validator: Any, instance: Mapping[str, Any], schema: Any) -> list[str]:
    """The keys of ``instance`` that ``schema`` evaluates (jsonschema's 2020-12 rules).

    Draft 2019-09 schemas get these rules too: its ``$recursiveRef`` is not followed, which
    can only report more properties as unevaluated, never fewer.
    """
    if validator.is_type(schema, "boolean"):
        return []
    _check_depth()
    keys: list[str] = []
    for keyword in ("$ref", "$dynamicRef"):
        if (ref := schema.get(keyword)) is not None:
            resolved = validator._resolver.lookup(ref)
            keys += _evaluated_keys(
                validator.evolve(schema=resolved.contents, _resolver=resolved.resolver),
                instance,
                resolved.contents,
            )
    properties = schema.get("properties")
    if validator.is_type(properties, "object"):
        keys += properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        if (subschema := schema.get(keyword)) is not None:
            keys += (
                key
                for key, value in instance.items()
                if next(validator.descend(value, subschema), None) is None
            )
    for pattern in schema.get("patternProperties", {}):
        keys += (key for key in instance if _search(pattern, key))
    for key, subschema in schema.get("dependentSchemas", {}).items():
        if key in instance:
            keys += _evaluated_keys(validator, instance, subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []):
            if next(validator.descend(instance, subschema), None) is None:
                keys += _evaluated_keys(validator, instance, subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            keys += _evaluated_keys(validator, instance, schema["if"])
            if "then" in schema:
                keys += _evaluated_keys(validator, instance, schema["then"])
        elif "else" in schema:
            keys += _evaluated_keys(validator, instance, schema["else"])
    return keys


def _is_regex(instance: object) -> bool:
    if isinstance(instance, str):
        regex.compile(instance)
    return True


def _format_checker(base: FormatChecker) -> FormatChecker:
    checker = FormatChecker(formats=())
    checker.checkers = dict(base.checkers)
    if "regex" in checker.checkers:
        checker.checkers["regex"] = (_is_regex, regex.error)
    return checker


def _evolve(self: Any, **changes: Any) -> Any:
    # jsonschema's own, except that a subschema with its own ``$schema`` (a ``$ref`` to the
    # root, say) keeps the safe keywords instead of getting jsonschema's class for its draft.
    cls = type(self)
    schema = changes.setdefault("schema", self.schema)
    found = jsonschema.validators.validator_for(schema, default=cls)
    for field in cls.__attrs_attrs__:
        if field.init and field.alias not in changes:
            changes[field.alias] = getattr(self, field.name)
    return _SAFE.get(found, found)(**changes)


_KEYWORDS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "unevaluatedProperties": _unevaluated_properties,
}


_REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")


class _TooDeep(Exception):
    """Validation went so deep that the interpreter's recursion limit was near."""


def _check_depth() -> None:
    # A reference loop (or arguments as deep as a recursive schema lets them be) would recurse
    # until RecursionError; at the very limit, any finalizer the garbage collector runs fails
    # too, far from here. Stop with room to spare instead. The walk costs a microsecond or two.
    limit = sys.getrecursionlimit() * 3 // 5
    frame: FrameType | None = sys._getframe(1)
    depth = 0
    while frame is not None:
        depth += 1
        if depth > limit:
            raise _TooDeep
        frame = frame.f_back


def _guarded(follow: Any) -> Any:
    def check(validator: Any, ref: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
        _check_depth()
        yield from follow(validator, ref, instance, schema)

    return check


def _safe(base: Any) -> Any:
    keywords = {keyword: check for keyword, check in _KEYWORDS.items() if keyword in base.VALIDATORS}
    keywords.update(
        {keyword: _guarded(base.VALIDATORS[keyword]) for keyword in _REFERENCES if keyword in base.VALIDATORS}
    )
    cls = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        base,
        keywords,
        format_checker=_format_checker(base.FORMAT_CHECKER),
    )
    cls.evolve = _evolve
    return cls


_SAFE: dict[Any, Any] = {
    base: _safe(base)
    for base in (
        jsonschema.Draft3Validator,
        jsonschema.Draft4Validator,
        jsonschema.Draft6Validator,
        jsonschema.Draft7Validator,
        jsonschema.Draft201909Validator,
        jsonschema.Draft202012Validator,
    )
}
# Our own classes map to themselves, so that `_evolve` keeps them.
_SAFE.update({safe: safe for safe in list(_SAFE.values())})


def _fast_check(validator: Validator) -> FastCheck | None:
    """The fast check of ``validator``'s schema (`actors.tools.fast_schema`), or None."""
    return fast_check(validator, skip=_SAFE[jsonschema.Draft3Validator])
