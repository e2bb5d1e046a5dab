"""The plan tools: sub-plans, step states, and plans persisted as JSON in the workspace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from actors.builtin import BuiltinAdapter, PlanStore, Workspace
from actors.tools import ErrorType, ToolRegistry, ToolResult, ToolRunner

from .conftest import Call, snapshot


def ok(result: ToolResult) -> dict[str, Any]:
    assert result.success, result.error
    assert result.output is not None
    return result.output


def plans_folder(workspace: Path) -> Path:
    return workspace / ".mcp-actors" / "plans"


def test_subplan_creates_a_missing_parent(call: Call, workspace: Path) -> None:
    out = ok(call("plan-subplan", parent_id="release", title="Build", steps=["compile", "test"]))
    assert out["parent_created"] is True and out["parent_id"] == "release"
    plan = out["plan"]
    assert plan["id"] == "release.1" and plan["parent_id"] == "release"
    assert [(s["id"], s["title"], s["state"]) for s in plan["steps"]] == [
        (1, "compile", "pending"),
        (2, "test", "pending"),
    ]
    parent = json.loads((plans_folder(workspace) / "release.json").read_text())
    assert parent["title"] == "release" and parent["steps"] == [] and parent["subplans"] == ["release.1"]
    assert sorted(p.name for p in plans_folder(workspace).iterdir()) == ["release.1.json", "release.json"]


def test_more_subplans_and_explicit_ids(call: Call) -> None:
    first = ok(call("plan-subplan", parent_id="p", title="A", steps=["a"], parent_title="The plan"))
    second = ok(call("plan-subplan", parent_id="p", title="B", steps=["b"]))
    named = ok(call("plan-subplan", parent_id="p", title="C", steps=["c"], subplan_id="docs"))
    assert (first["plan"]["id"], second["plan"]["id"], named["plan"]["id"]) == ("p.1", "p.2", "docs")
    assert second["parent_created"] is False
    tree = ok(call("plan-status", plan_id="p"))["plan"]
    assert tree["title"] == "The plan"
    assert [c["id"] for c in tree["subplans"]] == ["p.1", "p.2", "docs"]


def test_status_nests_subplans_and_counts_progress(call: Call) -> None:
    ok(call("plan-subplan", parent_id="root", title="Phase", steps=["x", "y", "z"]))
    ok(call("plan-subplan", parent_id="root.1", title="Detail", steps=["d"]))
    ok(call("plan-status", plan_id="root.1", step=1, state="done"))
    ok(call("plan-status", plan_id="root.1", step=2, state="blocked"))
    marked = ok(call("plan-status", plan_id="root.1.1", step=1, state="in_progress"))
    assert marked["updated_step"] == {"id": 1, "title": "d", "state": "in_progress"}
    tree = ok(call("plan-status", plan_id="root"))["plan"]
    phase = tree["subplans"][0]
    assert phase["progress"] == {"pending": 1, "in_progress": 0, "done": 1, "blocked": 1, "total": 3}
    assert phase["subplans"][0]["steps"][0]["state"] == "in_progress"
    assert ok(call("plan-status", plan_id="root"))["updated_step"] is None


def test_plans_round_trip_through_the_disk(workspace: Path) -> None:
    first = BuiltinAdapter(workspace)
    registry = ToolRegistry()
    first.register(registry)
    ToolRunner(registry).execute(
        "builtin/plan-subplan", {"parent_id": "trip", "title": "T", "steps": ["one", "two"]}
    )
    ToolRunner(registry).execute("builtin/plan-status", {"plan_id": "trip.1", "step": 2, "state": "done"})

    store = PlanStore(Workspace(workspace))
    plan = store.require("trip.1")
    assert [s.state for s in plan.steps] == ["pending", "done"]
    store.save(plan)
    assert store.require("trip.1") == plan
    assert not [p for p in plans_folder(workspace).iterdir() if p.suffix != ".json"]


@pytest.mark.parametrize(
    ("tool", "inputs", "words"),
    [
        ("plan-status", {"plan_id": "nope"}, "no plan with id"),
        ("plan-status", {"plan_id": "p.1", "step": 5, "state": "done"}, "has no step 5"),
        ("plan-status", {"plan_id": "p.1", "state": "done"}, "step"),
        ("plan-status", {"plan_id": "p.1", "step": 1, "state": "finished"}, "finished"),
        ("plan-status", {"plan_id": "../escape"}, "plan_id"),
        ("plan-status", {"plan_id": "ok\n"}, "must match"),
        ("plan-subplan", {"parent_id": "p", "title": "t", "steps": []}, "steps"),
        ("plan-subplan", {"parent_id": "p", "title": "t", "steps": ["s"], "subplan_id": "p.1"}, "exists"),
        ("plan-subplan", {"parent_id": "p", "title": "t", "steps": ["s"], "subplan_id": "p"}, "own sub-plan"),
        ("plan-subplan", {"parent_id": "a/b", "title": "t", "steps": ["s"]}, "parent_id"),
    ],
)
def test_plan_refusals(call: Call, workspace: Path, tool: str, inputs: dict[str, Any], words: str) -> None:
    ok(call("plan-subplan", parent_id="p", title="t", steps=["s"]))
    before = snapshot(workspace)
    result = call(tool, **inputs)
    assert result.error_type == ErrorType.VALIDATION
    assert words in (result.error or ""), result.error
    assert snapshot(workspace) == before


def test_corrupt_plan_file_is_an_execution_error(call: Call, workspace: Path) -> None:
    plans_folder(workspace).mkdir(parents=True)
    (plans_folder(workspace) / "bad.json").write_text("{not json")
    result = call("plan-status", plan_id="bad")
    assert result.error_type == ErrorType.EXECUTION
    assert "corrupt" in (result.error or "")


def test_plans_folder_symlinked_outside_is_refused(call: Call, workspace: Path, outside: Path) -> None:
    (workspace / ".mcp-actors").symlink_to(outside)
    before = snapshot(outside)
    result = call("plan-subplan", parent_id="p", title="t", steps=["s"])
    assert result.error_type == ErrorType.VALIDATION
    assert "outside the workspace" in (result.error or "")
    assert snapshot(outside) == before


def test_a_cycle_in_hand_edited_files_does_not_loop(call: Call, workspace: Path) -> None:
    ok(call("plan-subplan", parent_id="a", title="b", steps=["s"], subplan_id="b"))
    b_file = plans_folder(workspace) / "b.json"
    b = json.loads(b_file.read_text())
    b["subplans"] = ["a"]
    b_file.write_text(json.dumps(b))
    tree = ok(call("plan-status", plan_id="a"))["plan"]
    assert tree["subplans"][0]["subplans"] == [{"id": "a", "missing": True}]
