"""The two plan tools: create a sub-plan under a parent plan, and read or update a plan.

Plans are stored by `PlanStore` under ``<workspace>/.mcp-actors/plans/``. ``plan-subplan``
creates a missing parent as an empty top-level plan, so it also starts a new plan tree.
"""

from __future__ import annotations

from typing import Any

from actors.builtin.definition import BuiltinContext, BuiltinTool, object_schema
from actors.builtin.plans import PLAN_ID_PATTERN, STEP_STATES
from actors.tools import ResourceSlot, ToolCapabilities

__all__ = ["PLAN_TOOLS", "plan_status", "plan_subplan"]

_PLAN_ID = {"type": "string", "pattern": PLAN_ID_PATTERN}
_PLAN_WRITES = ToolCapabilities(read_only=False, writes=True, checkpointable=True)


def _plan_slot(parameter: str) -> tuple[ResourceSlot, ...]:
    return (
        ResourceSlot(
            name="plan", resource_type="plan", access="read_write", binding="parameter", parameter=parameter
        ),
    )


def plan_subplan(context: BuiltinContext, inputs: dict[str, Any]) -> dict[str, Any]:
    """Create a sub-plan with its steps (all pending) under ``parent_id``."""
    created = context.plans.create_subplan(
        inputs["parent_id"],
        inputs["title"],
        list(inputs["steps"]),
        subplan_id=inputs.get("subplan_id"),
        parent_title=inputs.get("parent_title"),
    )
    return {
        "plan": created.plan.model_dump(mode="json"),
        "parent_id": created.parent.id,
        "parent_created": created.parent_created,
    }


def plan_status(context: BuiltinContext, inputs: dict[str, Any]) -> dict[str, Any]:
    """The plan with its sub-plans nested, after setting one step's state when asked."""
    plans = context.plans
    plan_id: str = inputs["plan_id"]
    updated_step: dict[str, Any] | None = None
    if "step" in inputs:
        plan = plans.set_step_state(plan_id, inputs["step"], inputs["state"])
        updated_step = plan.steps[inputs["step"] - 1].model_dump(mode="json")
    return {"plan": plans.tree(plan_id), "updated_step": updated_step}


PLAN_TOOLS: tuple[BuiltinTool, ...] = (
    BuiltinTool(
        name="plan-subplan",
        description=(
            "Create a sub-plan with ordered steps (all pending) under the plan `parent_id`. A missing"
            " parent is created as an empty top-level plan, which is how a plan tree is started."
        ),
        input_schema=object_schema(
            {
                "parent_id": {**_PLAN_ID, "description": "The parent plan's id."},
                "title": {"type": "string", "minLength": 1, "maxLength": 500},
                "steps": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1, "maxLength": 2000},
                    "minItems": 1,
                    "maxItems": 500,
                    "description": "Step titles, in order.",
                },
                "subplan_id": {**_PLAN_ID, "description": "The new plan's id; default <parent_id>.<n>."},
                "parent_title": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 500,
                    "description": "The title of the parent if it has to be created.",
                },
            },
            ("parent_id", "title", "steps"),
        ),
        capabilities=_PLAN_WRITES,
        resource_slots=_plan_slot("parent_id"),
        code=plan_subplan,
    ),
    BuiltinTool(
        name="plan-status",
        description=(
            "Read a plan with its steps, their states and its sub-plans (nested). With `step` and"
            " `state`, first set that step (1-based) to pending, in_progress, done or blocked."
        ),
        input_schema=object_schema(
            {
                "plan_id": _PLAN_ID,
                "step": {"type": "integer", "minimum": 1, "description": "The 1-based step to update."},
                "state": {"enum": list(STEP_STATES), "description": "The step's new state."},
            },
            ("plan_id",),
            dependentRequired={"step": ["state"], "state": ["step"]},
        ),
        capabilities=_PLAN_WRITES,
        resource_slots=_plan_slot("plan_id"),
        code=plan_status,
    ),
)
