"""Variables in a server entry: ``${VAR}``, ``${VAR:-default}`` and VS Code's ``${env:VAR}``
expanded from the environment, and VS Code's ``${input:...}`` placeholders found (only VS Code
can prompt for them: they are passed through as written)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["expand_variables", "vscode_inputs"]

_VARIABLE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_VSCODE_INPUT = re.compile(r"\$\{input:[^}]*\}")


def expand_variables(value: Any, environ: Mapping[str, str], missing: list[str]) -> Any:
    """Expand ``${VAR}``, ``${VAR:-default}`` and VS Code's ``${env:VAR}`` in strings."""
    if isinstance(value, str):

        def replace(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in environ and (environ[name] or default is None):
                return environ[name]
            if default is not None:
                return default
            missing.append(name)
            return ""

        return _VARIABLE.sub(replace, value)
    if isinstance(value, list):
        return [expand_variables(v, environ, missing) for v in value]
    if isinstance(value, dict):
        return {k: expand_variables(v, environ, missing) for k, v in value.items()}
    return value


def vscode_inputs(value: Any, key: str) -> Iterator[tuple[str, str]]:
    """``(key, placeholder)`` for every VS Code ``${input:...}`` in ``value``, at any depth."""
    if isinstance(value, str):
        for match in _VSCODE_INPUT.finditer(value):
            yield key, match.group(0)
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from vscode_inputs(inner, f"{key}[{index}]")
    elif isinstance(value, Mapping):
        for name, inner in value.items():
            yield from vscode_inputs(inner, f"{key}.{name}")
