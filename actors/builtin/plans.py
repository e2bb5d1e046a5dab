"""`PlanStore`: plans with steps and sub-plans, kept as JSON files in the workspace.

Each plan is one file, ``<workspace>/.mcp-actors/plans/<plan id>.json``, written atomically. A
plan lists the ids of its sub-plans and a sub-plan names its parent, so a plan tree can be
read back from any of its plans. Creating a sub-plan under a parent that does not exist yet
creates the parent as an empty top-level plan: with only the two plan tools, this is how a
plan tree is started.

Updates are serialised by a lock per store; two stores (or processes) writing the same plan
at once may lose one update, though never corrupt a file.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ValidationError

from actors.builtin.errors import ExecutionFailure, InvalidInput
from actors.builtin.workspace import Workspace

__all__ = [
    "PLANS_FOLDER",
    "PLAN_ID_PATTERN",
    "STEP_STATES",
    "Plan",
    "PlanStep",
    "PlanStore",
    "StepState",
    "SubplanCreated",
    "progress",
]

logger = logging.getLogger(__name__)

PLANS_FOLDER = ".mcp-actors/plans"
"""Where plans live, relative to the workspace root."""

PLAN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
"""A plan id is also its file name, so no separators and no leading dot."""

StepState = Literal["pending", "in_progress", "done", "blocked"]
STEP_STATES: tuple[str, ...] = get_args(StepState)

_MAX_PLAN_FILE_BYTES = 4 * 1024 * 1024
_MAX_TREE_DEPTH = 16
_plan_id = re.compile(PLAN_ID_PATTERN.removeprefix("^").removesuffix("$"))


class PlanStep(BaseModel):
    """One step of a plan; ``id`` is its 1-based position."""

    id: int
    title: str
    state: StepState = "pending"


class Plan(BaseModel):
    """A plan as stored."""

    id: str
    title: str
    parent_id: str | None = None
    steps: list[PlanStep]
    subplans: list[str]
    """Ids of the sub-plans, in creation order."""
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class SubplanCreated:
    """The outcome of `PlanStore.create_subplan`."""

    plan: Plan
    parent: Plan
    parent_created: bool


class PlanStore:
    """The plans of one workspace."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._lock = threading.Lock()

    def get(self, plan_id: str) -> Plan | None:
        """The plan with this id, or None when there is none."""
        relative = _file_of(plan_id)
        if not self.workspace.resolve(relative).exists():
            return None
        data, size = self.workspace.read_bytes(relative, max_bytes=_MAX_PLAN_FILE_BYTES)
        if size > _MAX_PLAN_FILE_BYTES:
            raise ExecutionFailure(f"plan {plan_id!r} is larger than {_MAX_PLAN_FILE_BYTES} bytes")
        try:
            return Plan.model_validate_json(data)
        except ValidationError as exc:
            raise ExecutionFailure(f"plan file {relative!r} is corrupt: {exc.error_count()} errors") from None

    def require(self, plan_id: str) -> Plan:
        """The plan with this id, or `InvalidInput`."""
        plan = self.get(plan_id)
        if plan is None:
            raise InvalidInput(f"no plan with id {plan_id!r}")
        return plan

    def save(self, plan: Plan) -> None:
        """Write ``plan`` atomically."""
        text = json.dumps(plan.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
        self.workspace.write_bytes(_file_of(plan.id), text.encode("utf-8"))

    def create_subplan(
        self,
        parent_id: str,
        title: str,
        steps: list[str],
        *,
        subplan_id: str | None = None,
        parent_title: str | None = None,
    ) -> SubplanCreated:
        """Create a sub-plan of ``parent_id`` (created first, empty, when missing)."""
        _check_id(parent_id)
        if subplan_id is not None:
            _check_id(subplan_id)
            if subplan_id == parent_id:
                raise InvalidInput("a plan cannot be its own sub-plan")
        with self._lock:
            now = _now()
            parent = self.get(parent_id)
            parent_created = parent is None
            if parent is None:
                parent = Plan(
                    id=parent_id,
                    title=parent_title or parent_id,
                    steps=[],
                    subplans=[],
                    created_at=now,
                    updated_at=now,
                )
            if subplan_id is None:
                subplan_id = self._fresh_id(parent)
            elif self.get(subplan_id) is not None:
                raise InvalidInput(f"a plan with id {subplan_id!r} exists already")
            plan = Plan(
                id=subplan_id,
                title=title,
                parent_id=parent_id,
                steps=[PlanStep(id=i, title=s) for i, s in enumerate(steps, start=1)],
                subplans=[],
                created_at=now,
                updated_at=now,
            )
            parent = parent.model_copy(update={"subplans": [*parent.subplans, subplan_id], "updated_at": now})
            # The child first: a parent never lists a sub-plan that was not written.
            self.save(plan)
            self.save(parent)
        logger.debug("created plan %s under %s", subplan_id, parent_id)
        return SubplanCreated(plan=plan, parent=parent, parent_created=parent_created)

    def set_step_state(self, plan_id: str, step: int, state: StepState) -> Plan:
        """Set one step's state and save the plan."""
        _check_id(plan_id)
        with self._lock:
            plan = self.require(plan_id)
            if not 1 <= step <= len(plan.steps):
                raise InvalidInput(f"plan {plan_id!r} has no step {step} (it has {len(plan.steps)})")
            steps = [s.model_copy(update={"state": state}) if s.id == step else s for s in plan.steps]
            plan = plan.model_copy(update={"steps": steps, "updated_at": _now()})
            self.save(plan)
        return plan

    def tree(self, plan_id: str) -> dict[str, Any]:
        """The plan as JSON with its sub-plans nested (recursively) and step counts per state."""
        _check_id(plan_id)
        return self._tree(self.require(plan_id), depth=0, seen={plan_id})

    def _tree(self, plan: Plan, *, depth: int, seen: set[str]) -> dict[str, Any]:
        node = plan.model_dump(mode="json")
        node["progress"] = progress(plan)
        children: list[dict[str, Any]] = []
        for child_id in plan.subplans:
            child = self.get(child_id) if child_id not in seen and depth < _MAX_TREE_DEPTH else None
            if child is None:
                # A deleted file, a cycle from hand-edited files, or a tree deeper than shown.
                children.append({"id": child_id, "missing": True})
                continue
            seen.add(child_id)
            children.append(self._tree(child, depth=depth + 1, seen=seen))
        node["subplans"] = children
        return node

    def _fresh_id(self, parent: Plan) -> str:
        number = len(parent.subplans) + 1
        while True:
            candidate = f"{parent.id}.{number}"
            if not _plan_id.fullmatch(candidate):
                return f"plan-{uuid.uuid4().hex[:12]}"
            if candidate not in parent.subplans and self.get(candidate) is None:
                return candidate
            number += 1


def progress(plan: Plan) -> dict[str, int]:
    """How many of the plan's own steps are in each state, and in total."""
    counts = dict.fromkeys(STEP_STATES, 0)
    for step in plan.steps:
        counts[step.state] += 1
    counts["total"] = len(plan.steps)
    return counts


def _check_id(plan_id: str) -> None:
    if not _plan_id.fullmatch(plan_id):
        raise InvalidInput(f"plan id {plan_id!r} must match {PLAN_ID_PATTERN}")


def _file_of(plan_id: str) -> str:
    _check_id(plan_id)
    return f"{PLANS_FOLDER}/{plan_id}.json"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
