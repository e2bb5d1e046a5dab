"""`Policy`: who may see and use what through the gateway, decided by Cedar (`cedarpy`).

The policy file (``"access": {"policy": "policy.cedar"}``, a path relative to the config file)
holds Cedar policies over the entities of ``schema.cedarschema`` beside this module:

- the principal is ``User::"<subject>"``, in a ``Group::"<group>"`` for each of its token's
  ``groups``, with the attributes ``subject``, ``mode`` (``local``, ``static``, ``oauth``),
  ``scopes``, and where known ``issuer`` and ``client``;
- what it acts on is ``Tool::"<ns>/<tool>"``, ``Prompt::"<ns>/<prompt>"``, ``Resource::"<uri>"``
  or ``Template::"<uri template>"``, each ``in Server::"<ns>"``; or ``Gateway::"gateway"``;
- the actions are ``call``, ``read``, ``subscribe``, ``get``, ``complete`` (all in
  ``Action::"use"``) and ``admin``;
- a call's or a prompt's arguments are ``context.arguments``; a read's or subscription's URI is
  ``context.uri``.

Visibility is the permission to use: a principal sees a tool, prompt, resource or template only
if some request to use it could be allowed (`actors.gateway.access.context_free.visible`), and a denied
request for what they cannot see is answered as for what does not exist (`Decision.HIDE`). A
denial of what they can see (an argument condition, a ``forbid``) names its rules by their
``@id`` annotations (`Decision.REFUSE`).

Loading reads and checks the file: call it off the event loop. A loaded `Policy` is immutable but
for its cache of the decisions that need no context, under a lock: decisions are made on the
gateway's loop, lists filtered on worker threads.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import cedarpy

from actors.config import ConfigError
from actors.gateway.access import context_free
from actors.gateway.access.principal import Principal
from actors.gateway.access.use import CedarAction, EntityType, Use
from actors.gateway.access.verdict import ALLOWED, HIDDEN, Decision, Verdict
from actors.mcp.config import ConfigProblem

__all__ = ["SCHEMA", "Policy", "read_policy"]

logger = logging.getLogger(__name__)

SCHEMA = resources.files("actors.gateway.access").joinpath("schema.cedarschema").read_text(encoding="utf-8")
"""The Cedar schema every policy file is validated against (``schema.cedarschema``)."""

_KEY = "access.policy"
_CACHE_SIZE = 16384
"""Context-free decisions kept per policy (principal, action, target): cleared when full."""
_DEPTH = 16
"""How deep a request's arguments may nest for a policy to read them."""
_ESCAPES = frozenset({"__entity", "__extn", "__expr"})
"""Keys Cedar's JSON reads as entity references or extension values, never as data."""
_INT64 = 2**63


@dataclass(frozen=True, slots=True)
class _PolicyAnswer:
    allowed: bool
    rules: tuple[str, ...]
    """The determining policies: the permits that allowed, or the forbids that denied."""


class _Unreadable(Exception):
    """A request's arguments nest too deeply for a policy to read them."""


_USE = {"type": "Action", "id": "use"}
_ACTIONS = [
    {
        "uid": {"type": "Action", "id": a.value},
        "attrs": {},
        "parents": [] if a is CedarAction.ADMIN else [_USE],
    }
    for a in CedarAction
] + [{"uid": _USE, "attrs": {}, "parents": []}]
"""The actions and their group, as the schema declares them (decisions are made without it)."""


def read_policy(path: Path) -> Policy:
    """The policies of the file at ``path``, read and checked (blocks: never on an event loop).
    Raises `ConfigError` naming the file and what is wrong with it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _problem(str(path), f"cannot read the policy file: {exc}") from None
    return Policy.parse(text, str(path))


def _problem(source: str, message: str) -> ConfigError:
    return ConfigError([ConfigProblem(server=None, key=_KEY, message=message)], source)


class Policy:
    """A policy file, parsed and validated: decides requests (`decide`) and what each principal
    sees (`visible`). Thread-safe: immutable but for a cache under its own lock."""

    def __init__(self, text: str, source: str, policies: cedarpy.PolicySet, tree: Any) -> None:
        self.text = text
        self.source = source
        self._policies = policies
        statics = tree.static_policies
        self._visible = cedarpy.PolicySet.from_pst(context_free.visible(tree))
        self._ids = {pid: p.annotations.get("id") or pid for pid, p in statics.items()}
        self._context_free = not any(context_free.reads_context(p) for p in statics.values())
        """No rule reads the context: a decision is its visibility, and may be cached."""
        self._reads_arguments = any(context_free.reads_arguments(p) for p in statics.values())
        # The actions parsed once (their hierarchy is the costly part): a single decision adds to
        # it only its principal and what it acts on (70 us against 105 for a set built whole).
        self._actions = cedarpy.Entities.from_json_str(json.dumps(_ACTIONS))
        self._lock = threading.Lock()
        self._cache: dict[tuple[Principal, CedarAction, EntityType, str, str], _PolicyAnswer] = {}

    @classmethod
    def parse(cls, text: str, source: str = "<policy>") -> Policy:
        """The policies of ``text`` (from ``source``, for messages), checked against the schema.
        Raises `ConfigError` naming ``source`` and each problem."""
        try:
            policies = cedarpy.PolicySet.from_str(text)
            tree = policies.to_pst()
        except ValueError as exc:
            raise _problem(source, f"not Cedar policies: {exc}") from None
        problems: list[str] = []
        if tree.templates:
            problems.append("policy templates (with ?principal or ?resource) are not supported")
        ids = [p.annotations.get("id") for p in tree.static_policies.values()]
        twice = sorted({i for i in ids if i is not None and ids.count(i) > 1})
        if twice:
            problems.append(f"@id {', '.join(map(repr, twice))} names more than one policy")
        typed = cedarpy.PolicySet.from_pst(context_free.typed(tree))
        validated = cedarpy.validate_policies(str(typed), SCHEMA)
        named = validated.id_annotations_by_policy_id
        problems.extend(
            f"policy {named.get(error.policy_id) or error.policy_id}: {_detail(error.error)}"
            if error.policy_id
            else error.error
            for error in validated.errors
        )
        if problems:
            raise ConfigError([ConfigProblem(server=None, key=_KEY, message=p) for p in problems], source)
        return cls(text, source, policies, tree)

    @property
    def rules(self) -> tuple[str, ...]:
        """The ids of its policies, in the file's order."""
        return tuple(self._ids.values())

    @property
    def digest(self) -> str:
        """What tells two loads of the same text apart from a change."""
        return hashlib.sha256(self.text.encode()).hexdigest()

    # ---- decisions ---------------------------------------------------------------------------

    def decide(self, principal: Principal, use: Use) -> Verdict:
        """Whether ``principal`` may make ``use`` now: allowed, hidden (they cannot see what it
        names) or refused (they can, and the rules said no)."""
        seen = self._relaxed(principal, use.seeing())
        if not seen.allowed:
            return HIDDEN
        relaxed = seen if use.seeing() is use else self._relaxed(principal, use)
        if self._context_free:
            answer = relaxed
        else:
            try:
                answer = self._evaluate(self._policies, principal, [use], full=True)[0]
            except _Unreadable:
                return Verdict(Decision.REFUSE, (), "the arguments nest too deeply to be checked")
        if answer.allowed:
            return ALLOWED
        return _refusal(use, answer, relaxed)

    def visible(self, principal: Principal, uses: Sequence[Use]) -> list[bool]:
        """For each of ``uses``, whether ``principal`` may see what it names (one batch of
        decisions for those not cached; CPU work: keep large lists off an event loop)."""
        seeing = [use.seeing() for use in uses]
        with self._lock:
            known = [self._cache.get(_key(principal, use)) for use in seeing]
        missing = list(
            {_key(principal, use): use for use, k in zip(seeing, known, strict=True) if k is None}.values()
        )
        if missing:
            found = dict(
                zip(missing, self._evaluate(self._visible, principal, missing, full=False), strict=True)
            )
            self._remember(principal, found)
            known = [k if k is not None else found[use] for use, k in zip(seeing, known, strict=True)]
        return [answer is not None and answer.allowed for answer in known]

    def _relaxed(self, principal: Principal, use: Use) -> _PolicyAnswer:
        key = _key(principal, use)
        with self._lock:
            answer = self._cache.get(key)
        if answer is None:
            answer = self._evaluate(self._visible, principal, [use], full=False)[0]
            self._remember(principal, {use: answer})
        return answer

    def _remember(self, principal: Principal, answers: Mapping[Use, _PolicyAnswer]) -> None:
        with self._lock:
            if len(self._cache) + len(answers) > _CACHE_SIZE:
                self._cache.clear()
            for use, answer in answers.items():
                self._cache[_key(principal, use)] = answer

    def _evaluate(
        self, policies: cedarpy.PolicySet, principal: Principal, uses: Sequence[Use], *, full: bool
    ) -> list[_PolicyAnswer]:
        """One batch of Cedar decisions; ``full``: with each use's context, else with none."""
        user = {"type": "User", "id": principal.subject}
        requests = [
            {
                "principal": user,
                "action": {"type": "Action", "id": use.action.value},
                "resource": {"type": use.kind.value, "id": use.entity_id},
                "context": self._context(use) if full else {},
            }
            for use in uses
        ]
        delta = [*_principal(principal), *_targets(uses)]
        if len(uses) == 1:
            entities = self._actions.with_added_json_str(json.dumps(delta))
        else:
            # A set built whole: Cedar decides a batch over it several times faster than over
            # one added to the actions' (measured: 17 ms against 108 for 500 tools).
            entities = cedarpy.Entities.from_json_str(json.dumps([*_ACTIONS, *delta]))
        results = cedarpy.is_authorized_batch(requests, policies, entities)
        answers = []
        for result in results:
            if result.diagnostics.errors:
                logger.debug("policy %s: %s", self.source, "; ".join(result.diagnostics.errors))
            rules = tuple(self._ids.get(pid, pid) for pid in result.diagnostics.reasons)
            answers.append(_PolicyAnswer(result.allowed, rules))
        return answers

    def _context(self, use: Use) -> dict[str, Any]:
        context: dict[str, Any] = {}
        if use.uri is not None and use.action in (CedarAction.READ, CedarAction.SUBSCRIBE):
            context["uri"] = use.uri
        if self._reads_arguments and use.action in (CedarAction.CALL, CedarAction.GET):
            context["arguments"] = _record(use.arguments, 0)
        return context


def _key(principal: Principal, use: Use) -> tuple[Principal, CedarAction, EntityType, str, str]:
    return (principal, use.action, use.kind, use.server, use.name)


def _refusal(use: Use, answer: _PolicyAnswer, relaxed: _PolicyAnswer) -> Verdict:
    if answer.rules:  # the forbids that applied
        return Verdict(Decision.REFUSE, answer.rules)
    if relaxed.allowed:  # permits that would apply, but for their conditions on this request
        return Verdict(Decision.REFUSE, relaxed.rules, "this request does not meet their conditions")
    return Verdict(Decision.REFUSE, relaxed.rules, "" if relaxed.rules else f"no rule permits {use.action}")


def _detail(error: str) -> str:
    """Cedar's validation message without its ``for policy `policyN`, `` preamble (the policy is
    named by its ``@id`` instead)."""
    head, separator, rest = error.partition("`, ")
    return rest if separator and head.startswith("for policy `") else error


def _principal(principal: Principal) -> list[dict[str, Any]]:
    attrs: dict[str, Any] = {
        "subject": principal.subject,
        "mode": principal.mode.value,
        "scopes": list(principal.scopes),
    }
    if principal.issuer is not None:
        attrs["issuer"] = principal.issuer
    if principal.client_id is not None:
        attrs["client"] = principal.client_id
    groups = [{"type": "Group", "id": group} for group in dict.fromkeys(principal.groups)]
    user = {"uid": {"type": "User", "id": principal.subject}, "attrs": attrs, "parents": groups}
    return [user, *({"uid": group, "attrs": {}, "parents": []} for group in groups)]


def _targets(uses: Sequence[Use]) -> list[dict[str, Any]]:
    """The entities ``uses`` act on and their servers (one entity per uid: a URI two servers
    list is in both)."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for use in uses:
        uid = (use.kind.value, use.entity_id)
        entity = found.get(uid)
        if entity is None:
            attr = "name" if use.kind in (EntityType.TOOL, EntityType.PROMPT) else "uri"
            attrs = {} if use.kind is EntityType.GATEWAY else {attr: use.name}
            entity = found[uid] = {"uid": {"type": uid[0], "id": uid[1]}, "attrs": attrs, "parents": []}
        if use.kind is not EntityType.GATEWAY:
            server = {"type": "Server", "id": use.server}
            if server not in entity["parents"]:
                entity["parents"].append(server)
            found.setdefault(("Server", use.server), {"uid": server, "attrs": {}, "parents": []})
    return list(found.values())


def _value(value: Any, depth: int) -> Any:
    """A JSON value as Cedar reads it: integers in range, text, booleans, sets and records;
    other numbers as text; None for what Cedar has no value for (null)."""
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value if -_INT64 <= value < _INT64 else str(value)
    if isinstance(value, float):
        return int(value) if value.is_integer() and abs(value) < _INT64 else repr(value)
    if isinstance(value, Mapping):
        return _record(value, depth + 1)
    if isinstance(value, list | tuple):
        if depth >= _DEPTH:
            raise _Unreadable
        items = (_value(item, depth + 1) for item in value)
        return [item for item in items if item is not None]
    return None


def _record(value: Mapping[str, Any], depth: int) -> dict[str, Any]:
    if depth >= _DEPTH:
        raise _Unreadable
    record = {}
    for key, item in value.items():
        if str(key) in _ESCAPES:
            continue
        converted = _value(item, depth)
        if converted is not None:
            record[str(key)] = converted
    return record
