"""The diagram and the table of docs/architecture.md say what the lifecycle's code does."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from actors.runtime import lifecycle as lc

DOC = Path(__file__).parents[3] / "docs" / "architecture.md"

Edges = dict[tuple[str, str], frozenset[str]]


def code_edges() -> Edges:
    labels: defaultdict[tuple[str, str], set[str]] = defaultdict(set)
    for source, label, target in lc.transitions():
        labels[source.value, target.value].add(label)
    return {edge: frozenset(found) for edge, found in labels.items()}


def section() -> str:
    text = DOC.read_text()
    start = text.index("## The server state machine")
    return text[start : text.index("\n## ", start + 1)]


def _labels(text: str) -> frozenset[str]:
    return frozenset(label.strip() for label in text.split(";"))


def doc_diagram() -> tuple[Edges, dict[str, str]]:
    """The mermaid block's edges, and which public box each stage is drawn in."""
    block = re.search(r"```mermaid\n(.*?)```", section(), re.S)
    assert block is not None, "no mermaid diagram in the state machine section"
    edges: Edges = {}
    boxes: dict[str, str] = {}
    box: str | None = None
    for raw in block.group(1).splitlines():
        line = raw.strip()
        if (opened := re.fullmatch(r"state (\w+) \{", line)) is not None:
            box = opened.group(1).lower()
        elif line == "}":
            box = None
        elif (edge := re.fullmatch(r"(\w+) --> (\w+): (.+)", line)) is not None:
            assert (edge[1], edge[2]) not in edges, f"the diagram draws {edge[1]} --> {edge[2]} twice"
            edges[edge[1], edge[2]] = _labels(edge[3])
        elif box is not None and re.fullmatch(r"\w+", line):
            boxes[line] = box
    return edges, boxes


def doc_table() -> Edges:
    rows = re.findall(r"^\| (\w+) \| ([^|]+) \| (\w+) \|$", section(), re.M)
    table: Edges = {}
    for source, labels, target in rows:
        if (source, target) == ("from", "to"):
            continue  # the header
        assert (source, target) not in table, f"the table lists {source} -> {target} twice"
        table[source, target] = _labels(labels)
    return table


def test_the_diagram_draws_every_transition_of_the_code_and_no_other() -> None:
    edges, _ = doc_diagram()
    assert edges == code_edges()


def test_the_diagram_puts_each_stage_in_its_public_state() -> None:
    _, boxes = doc_diagram()
    for stage in lc.Stage:
        assert boxes.get(stage.value, stage.value) == stage.public.value, stage


def test_the_table_lists_every_transition_of_the_code_and_no_other() -> None:
    assert doc_table() == code_edges()


def test_a_row_that_disagrees_with_the_code_is_noticed() -> None:
    wrong = dict(code_edges())
    wrong["idle", "connecting"] = frozenset({"call"})
    assert doc_table() != wrong
