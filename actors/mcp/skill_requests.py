"""The Skills extension's requests (`actors.mcp.skills`) as what `MCPToolAdapter` sends on a
transport: each a coroutine function over the `RequestTransport` seam and ``resources/read``,
run on the loop in the request's task. Their answers are JSON (a `ToolResult`'s output); a
skill or a file that fails verification raises `SkillRejected`, and nothing of it is returned.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Mapping
from enum import StrEnum
from typing import Any, Final

from actors.mcp.list_requests import pages
from actors.mcp.skills import (
    EXTENSION,
    Skill,
    SkillRejected,
    checked_manifest,
    content_bytes,
    listed,
    offers_skills,
    verified,
)
from actors.mcp.transport import ClientTransport, JSONObject, Request, RequestTransport, ServerReplyError

__all__ = ["INVALID_PARAMS", "SkillAction", "skill_request"]

INVALID_PARAMS: Final = frozenset({-32602})
"""How a server says it serves no such skill, file or directory."""


class SkillAction(StrEnum):
    """What a `SkillRequest` asks (`actors.runtime.skill_messages`)."""

    LIST = "list"
    """Every skill the server lists: entries only, no file is read."""
    GET = "get"
    """One skill's entry (``skills/get``), listed or not."""
    LOAD = "load"
    """One skill's ``SKILL.md``, verified against its entry: what loads it."""
    READ = "read"
    """One file of a skill, verified against the entry the host holds."""
    DIRECTORY = "directory"
    """The direct children of a directory (``resources/directory/read``)."""


Send = Callable[[ClientTransport], Awaitable[JSONObject]]


def skill_request(
    action: SkillAction,
    capabilities: Mapping[str, Any],
    timeout: float,
    *,
    uri: str = "",
    skill: Skill | None = None,
) -> tuple[str, Send]:
    """What the request is called, and the request. ``capabilities``: the server's (a server
    that does not declare the extension is asked nothing: it lists no skills)."""

    async def send(t: ClientTransport) -> JSONObject:
        if action is SkillAction.READ and skill is not None:
            return await _file(t, skill, uri, timeout)  # the held entry is all it needs
        if not offers_skills(capabilities) or not isinstance(t, RequestTransport):
            if action is SkillAction.LIST:
                return {"skills": [], "rejected": []}
            raise ServerReplyError(f"the server does not serve skills ({EXTENSION})", -32601)
        match action:
            case SkillAction.LIST:
                return await _listed(t, timeout)
            case SkillAction.GET:
                return {"skill": (await _entry(t, uri, timeout)).to_json()}
            case SkillAction.LOAD:
                held = skill if skill is not None else await _entry(t, uri, timeout)
                data = verified(held, held.uri, await _read(t, held.uri, timeout))
                return {"skill": held.to_json(), "text": checked_manifest(held, data)}
            case _:
                return await _directory(t, capabilities, uri, timeout)

    what = f"skills/{action.value} {uri or (skill.uri if skill is not None else '')}".rstrip()
    return what, send


async def _items(t: RequestTransport, method: str, params: JSONObject, key: str, timeout: float) -> list[Any]:
    """The items under ``key`` of every page of ``method`` (`list_requests.pages`)."""
    items: list[Any] = []
    async for page in pages(t, method, params, timeout):
        found = page.get(key)
        items.extend(found if isinstance(found, list) else ())
    return items


async def _listed(t: RequestTransport, timeout: float) -> JSONObject:
    """Every entry of every page; an entry a host may not load is reported, not dropped."""
    skills: list[JSONObject] = []
    rejected: list[JSONObject] = []
    for entry in await _items(t, "skills/list", {}, "skills", timeout):
        try:
            skills.append(Skill.from_json(entry).to_json())
        except SkillRejected as exc:
            uri = entry.get("uri") if isinstance(entry, Mapping) else None
            rejected.append({"uri": uri, "fault": exc.fault.value, "reason": exc.message})
    return {"skills": skills, "rejected": rejected}


async def _entry(t: RequestTransport, uri: str, timeout: float) -> Skill:
    answer = await t.send(Request("skills/get", {"uri": uri}), timeout)
    skill = Skill.from_json(answer.get("skill"))
    if skill.uri != uri:
        raise ServerReplyError(f"skills/get {uri} answered for {skill.uri}", -32603)
    return skill


async def _read(t: ClientTransport, uri: str, timeout: float) -> bytes:
    answer = await t.read_resource(uri, timeout)
    return content_bytes(answer.get("contents"), uri)


async def _file(t: ClientTransport, skill: Skill, path: str, timeout: float) -> JSONObject:
    """A file of ``skill`` (a URI, or a path relative to its root): only one the held entry
    lists is read, and only what it describes is returned."""
    uri = skill.resolve(path)
    listed(skill, uri)  # before the read: an unlisted file is not read at all
    data = verified(skill, uri, await _read(t, uri, timeout))
    try:
        return {"uri": uri, "text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"uri": uri, "blob": base64.b64encode(data).decode()}


async def _directory(
    t: RequestTransport, capabilities: Mapping[str, Any], uri: str, timeout: float
) -> JSONObject:
    settings = capabilities.get("extensions", {}).get(EXTENSION, {})
    if not (isinstance(settings, Mapping) and settings.get("directoryRead") is True):
        raise ServerReplyError("the server does not read directories (directoryRead)", -32601)
    children = await _items(t, "resources/directory/read", {"uri": uri}, "resources", timeout)
    return {"uri": uri, "resources": children}
