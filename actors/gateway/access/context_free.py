"""Cedar policies with their conditions on the request's ``context`` taken out.

Two rewrites of a parsed policy set (`cedarpy.pst`), each made once when a policy file loads:

- `visible`: what a principal may *see* is what they may use for *some* context (a tool they may
  call with some arguments is listed). Every condition that reads ``context`` is replaced by the
  literal that lets its policy apply as far as it can: in a ``permit`` the one that satisfies it,
  in a ``forbid`` the one that does not (flipped under ``!`` and ``unless``). The set that
  results reads no context, so a list is filtered by one batch of ordinary decisions. It may
  over-approximate (``a == 1 && a == 2`` counts as satisfiable): a tool some rule names for a
  principal is listed to them even if no arguments could pass.
- `typed`: the policies as Cedar's validator can check them against the schema. A call's
  arguments are whatever the client sends, which a Cedar schema cannot declare (it has no open
  records), so each condition that reads ``context.arguments`` is replaced by ``true``; the rest
  of the policy (its entity types, actions, attributes, the other context keys) is validated.

Pure functions over immutable trees; no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from cedarpy import pst

__all__ = ["reads_arguments", "reads_context", "typed", "visible"]

_Test = Callable[[Any], bool]


def _is_context(node: Any) -> bool:
    return isinstance(node, pst.Var) and node.name == "context"


def _is_arguments(node: Any) -> bool:
    """``context.arguments``, or ``context has arguments``."""
    if isinstance(node, pst.GetAttr):
        return node.attr == "arguments" and _is_context(node.base)
    if isinstance(node, pst.HasAttr):
        return "arguments" in node.attrs[:1] and _is_context(node.base)
    return False


def _mentions(root: Any, test: _Test) -> bool:
    """Whether any node under ``root`` passes ``test`` (an explicit stack: no recursion limit)."""
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if test(node):
            return True
        if isinstance(node, tuple):
            stack.extend(node)
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif dataclasses.is_dataclass(node) and not isinstance(node, type):
            stack.extend(getattr(node, f.name) for f in dataclasses.fields(node))
    return False


def reads_context(policy: pst.Template) -> bool:
    """Whether ``policy``'s conditions read the request's context at all."""
    return _mentions(policy.clauses, _is_context)


def reads_arguments(policy: pst.Template) -> bool:
    """Whether ``policy``'s conditions read ``context.arguments``."""
    return _mentions(policy.clauses, _is_arguments)


def _bound(expr: pst.Expr, satisfy: bool, test: _Test) -> pst.Expr:
    """``expr`` (in a boolean position) with each condition that passes ``test`` replaced by
    the literal that makes ``expr`` true (``satisfy``) or false as far as it can."""
    if not _mentions(expr, test):
        return expr
    if isinstance(expr, pst.BinaryOp) and expr.op in ("and", "or"):
        return pst.BinaryOp(expr.op, _bound(expr.left, satisfy, test), _bound(expr.right, satisfy, test))
    if isinstance(expr, pst.UnaryOp) and expr.op == "not":
        return pst.UnaryOp("not", _bound(expr.arg, not satisfy, test))
    if isinstance(expr, pst.IfThenElse):
        then, otherwise = _bound(expr.then_expr, satisfy, test), _bound(expr.else_expr, satisfy, test)
        if _mentions(expr.cond, test):
            # Either branch may be taken: the better one when satisfying, the worse otherwise.
            return pst.BinaryOp("or" if satisfy else "and", then, otherwise)
        return pst.IfThenElse(expr.cond, then, otherwise)
    return pst.BoolLit(satisfy)


def _policy(policy: pst.Template, test: _Test, *, favour: bool) -> pst.Template:
    """``policy`` with its conditions that pass ``test`` bounded: towards applying when
    ``favour`` (for a permit: as many requests as possible; for a forbid: as few)."""
    applies = favour if policy.effect == "permit" else not favour
    clauses = tuple(
        pst.When(_bound(c.expr, applies, test))
        if isinstance(c, pst.When)
        else pst.Unless(_bound(c.expr, not applies, test))
        for c in policy.clauses
    )
    return dataclasses.replace(policy, clauses=clauses)


def _rewritten(policies: pst.PolicySet, test: _Test) -> pst.PolicySet:
    static = {pid: _policy(p, test, favour=True) for pid, p in policies.static_policies.items()}
    return dataclasses.replace(policies, static_policies=pst.FrozenMap(static))


def visible(policies: pst.PolicySet) -> pst.PolicySet:
    """The policies that decide what a principal may see: no condition on the context left, each
    bounded so that a request allowed for some context is allowed."""
    return _rewritten(policies, _is_context)


def typed(policies: pst.PolicySet) -> pst.PolicySet:
    """The policies as the schema can validate them: no condition on ``context.arguments``."""
    return _rewritten(policies, _is_arguments)
