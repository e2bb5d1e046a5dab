"""Tool search for large catalogs: the gateway lists two tools instead of every tool.

With ``"toolSearch": true`` (or ``mcp-actors serve --tool-search``) a client sees only
``search_tools`` (ranked keyword search) and ``call_tool`` (call any tool by its external
name); every tool stays callable by its own name too. Ranking is BM25 over the tokens of each
tool's external name, description and argument names, names weighing most; a query that is a
tool's name (external, bare or ``namespace/tool``) ranks that tool first.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from actors.tools import ToolSpec

__all__ = [
    "CALL_TOOL",
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "META_TOOLS",
    "SEARCH_TOOLS",
    "ToolIndex",
    "ToolMatch",
    "tokenize",
]

SEARCH_TOOLS = "search_tools"
CALL_TOOL = "call_tool"

DEFAULT_LIMIT = 10
MAX_LIMIT = 50

# BM25's usual constants.
_K1 = 1.2
_B = 0.75
# What a token in each field counts for: a tool's name says most about what it does.
_NAME_WEIGHT = 3.0
_ARGUMENT_WEIGHT = 2.0
_DESCRIPTION_WEIGHT = 1.0
# How deep argument names are collected from nested object schemas.
_SCHEMA_DEPTH = 3

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_STOP_WORDS = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "for", "from", "has", "have",
        "how", "i", "if", "in", "into", "is", "it", "its", "of", "on", "or", "that", "the", "their",
        "then", "there", "these", "this", "to", "was", "when", "which", "will", "with", "you", "your",
    }
)  # fmt: skip

META_TOOLS = (
    types.Tool(
        name=SEARCH_TOOLS,
        description=(
            "Find tools by what they do. Returns the best matches for the query, best first, each "
            "with its name, description and input schema; call one with call_tool (or by its name)."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "keywords: what the tool should do"},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "default": DEFAULT_LIMIT,
                    "description": "how many matches at most",
                },
            },
            "required": ["query"],
        },
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    ),
    types.Tool(
        name=CALL_TOOL,
        description="Call a tool found with search_tools: its name and its arguments.",
        input_schema={
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "the tool's name, as search_tools gave it"},
                "arguments": {"type": "object", "description": "the tool's arguments"},
            },
            "required": ["name"],
        },
    ),
)
"""What ``tools/list`` answers when tool search is on."""


def tokenize(text: str) -> list[str]:
    """Lower-case words of ``text``: ``snake_case``, ``kebab-case`` and ``camelCase`` split,
    stop words dropped, a plural ``s`` taken off (``files`` finds ``file``)."""
    words = (word.lower() for word in _WORD.findall(text))
    return [_singular(word) for word in words if word not in _STOP_WORDS]


def _singular(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-3] + "y" if word.endswith("ies") else word[:-1]
    return word


def _argument_names(schema: Any, depth: int = 0) -> list[str]:
    """The property names of an object schema, those of nested objects included."""
    if not isinstance(schema, Mapping) or depth >= _SCHEMA_DEPTH:
        return []
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return []
    names = []
    for name, inner in properties.items():
        names.append(str(name))
        names.extend(_argument_names(inner, depth + 1))
        if isinstance(inner, Mapping):
            names.extend(_argument_names(inner.get("items"), depth + 1))
    return names


@dataclass(frozen=True)
class ToolMatch:
    """One tool found: what a client needs to call it."""

    name: str
    """Its external name (what ``tools/call`` and ``call_tool`` take)."""
    description: str
    input_schema: dict[str, Any]
    score: float

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "score": round(self.score, 3),
        }


@dataclass(frozen=True)
class _Document:
    name: str
    exact: frozenset[str]
    """The lower-cased names a query may give in full: external, bare and ``namespace/tool``."""
    spec: ToolSpec
    terms: Mapping[str, float]
    length: float


class ToolIndex:
    """A BM25 index of tools, built once for a catalog and searched any number of times.

    Pure computation, no I/O: build and search it off an event loop when the catalog is large.
    """

    def __init__(self, tools: Iterable[tuple[str, ToolSpec]]) -> None:
        """``tools``: each tool's external name and its spec."""
        self._documents = [self._document(external, spec) for external, spec in tools]
        frequency: Counter[str] = Counter()
        for document in self._documents:
            frequency.update(document.terms.keys())
        count = len(self._documents)
        self._idf = {term: math.log(1.0 + (count - df + 0.5) / (df + 0.5)) for term, df in frequency.items()}
        self._average = (sum(d.length for d in self._documents) / count) if count else 0.0

    @staticmethod
    def _document(external: str, spec: ToolSpec) -> _Document:
        terms: dict[str, float] = {}
        fields = (
            (tokenize(external), _NAME_WEIGHT),
            (tokenize(" ".join(_argument_names(spec.input_schema))), _ARGUMENT_WEIGHT),
            (tokenize(spec.description), _DESCRIPTION_WEIGHT),
        )
        length = 0.0
        for tokens, weight in fields:
            for token in tokens:
                terms[token] = terms.get(token, 0.0) + weight
            length += weight * len(tokens)
        exact = frozenset(n.lower() for n in (external, spec.name, spec.tool_name))
        return _Document(external, exact, spec, terms, length)

    def __len__(self) -> int:
        return len(self._documents)

    def search(self, query: str, limit: int = DEFAULT_LIMIT) -> list[ToolMatch]:
        """The best ``limit`` matches for ``query``, best first (ties by name).

        A tool named exactly by the query comes first; tools matching no query word are left out.
        """
        wanted = query.strip().lower()
        terms = set(tokenize(query))
        scored: list[tuple[int, float, str, _Document]] = []
        for document in self._documents:
            score = self._score(document, terms)
            exact = wanted in document.exact
            if exact or score > 0.0:
                scored.append((0 if exact else 1, -score, document.name, document))
        scored.sort(key=lambda item: item[:3])
        return [
            ToolMatch(d.name, d.spec.description, d.spec.input_schema, -negative)
            for _, negative, _, d in scored[: max(0, limit)]
        ]

    def _score(self, document: _Document, terms: set[str]) -> float:
        score = 0.0
        norm = _K1 * (1.0 - _B + _B * (document.length / self._average)) if self._average else _K1
        for term in terms:
            tf = document.terms.get(term)
            if tf:
                score += self._idf[term] * tf * (_K1 + 1.0) / (tf + norm)
        return score
