"""`actors.mcp.list_requests`: the catalog's lists as request values, read above the seam.

A scripted `RequestTransport` answers the pages (the real servers' lists are read in
tests/mcp/test_client_surface.py and test_everything_surface.py): pages are followed, entries
MCP's types rule out fail the list as -32603 "malformed" (as the SDK's own types would), and the
pages' caching hints are read as the SDK's client cache reads them.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.caching import MAX_TTL_MS as SDK_MAX_TTL_MS

from actors.mcp.freshness import MAX_TTL_MS, ListFreshness
from actors.mcp.list_requests import PROMPTS, RESOURCES, TEMPLATES, CatalogList, listed, page_freshness
from actors.mcp.skill_requests import SkillAction, skill_request
from actors.mcp.skills import EXTENSION as SKILLS
from actors.mcp.transport import JSONObject, RemotePrompt, RemoteResource, Request, ServerReplyError

MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"


class Pages:
    """Answers each request with the next scripted page; keeps what was asked."""

    def __init__(self, *pages: JSONObject) -> None:
        self.pages = list(pages)
        self.asked: list[Request] = []

    async def send(self, request: Request, timeout: float | None) -> JSONObject:
        self.asked.append(request)
        return self.pages.pop(0)


def run(pages: Pages, kind: CatalogList[Any], version: str | None = MODERN) -> Any:
    return anyio.run(listed, pages, kind, 5, version)


def test_every_page_is_followed_and_each_entry_read() -> None:
    pages = Pages(
        {
            "resources": [{"uri": "a://1", "name": "one", "mimeType": "text/plain", "size": 3}],
            "nextCursor": "p2",
        },
        {"resources": [{"uri": "a://2", "name": "two", "annotations": {"priority": 1}}]},
    )
    found = run(pages, RESOURCES)
    assert list(found) == [
        RemoteResource(uri="a://1", name="one", mime_type="text/plain", size=3),
        RemoteResource(uri="a://2", name="two", annotations={"priority": 1}),
    ]
    assert [r.params for r in pages.asked] == [{}, {"cursor": "p2"}]
    assert [r.method for r in pages.asked] == ["resources/list", "resources/list"]


def test_a_prompts_arguments_keep_what_mcp_says_of_them() -> None:
    argument = {"name": "who", "description": "Whom", "required": True, "x-extra": 1}
    (prompt,) = run(Pages({"prompts": [{"name": "greet", "arguments": [argument]}]}), PROMPTS)
    assert prompt == RemotePrompt(
        name="greet", arguments=({"name": "who", "description": "Whom", "required": True},)
    )
    (template,) = run(Pages({"resourceTemplates": [{"uriTemplate": "a://{x}", "name": "x"}]}), TEMPLATES)
    assert template.uri_template == "a://{x}"


MALFORMED = [
    (RESOURCES, {"resources": [{"name": "no uri"}]}, "resources.0.uri: a text is required"),
    (RESOURCES, {"resources": [{"uri": 7, "name": "n"}]}, "resources.0.uri: not a text"),
    (RESOURCES, {"resources": [{"uri": "a://1", "name": "n", "size": "big"}]}, "resources.0.size"),
    (RESOURCES, {"resources": "none"}, "resources: not a list"),
    (RESOURCES, {}, "resources: required"),
    (TEMPLATES, {"resourceTemplates": [{"name": "x"}]}, "resourceTemplates.0.uriTemplate"),
    (PROMPTS, {"prompts": [{"description": "no name"}]}, "prompts.0.name: a text is required"),
    (
        PROMPTS,
        {"prompts": [{"name": "p", "arguments": [{"required": True}]}]},
        "prompts.0.arguments.0.name: a text is required",
    ),
    (PROMPTS, {"prompts": [], "nextCursor": 5}, "nextCursor: not a text"),
    (PROMPTS, {"prompts": [], "ttlMs": -1}, "ttlMs"),
]


@pytest.mark.parametrize(("kind", "page", "said"), MALFORMED)
def test_an_entry_mcp_rules_out_fails_the_list_as_malformed(
    kind: CatalogList[Any], page: JSONObject, said: str
) -> None:
    with pytest.raises(ServerReplyError, match="is malformed") as refused:
        run(Pages(page), kind)
    assert refused.value.code == -32603 and said in refused.value.message, refused.value.message
    assert kind.method in refused.value.message


@pytest.mark.parametrize(("kind", "page", "said"), MALFORMED)
def test_the_sdks_own_types_refuse_the_same_pages(
    kind: CatalogList[Any], page: JSONObject, said: str
) -> None:
    # What is malformed here is what the SDK's result types refuse: no stricter, no looser.
    model = {
        "resources/list": types.ListResourcesResult,
        "resources/templates/list": types.ListResourceTemplatesResult,
        "prompts/list": types.ListPromptsResult,
    }[kind.method]
    with pytest.raises(Exception):  # noqa: B017 - pydantic's ValidationError, whatever its shape
        model.model_validate(page)


def test_a_repeated_cursor_ends_the_list() -> None:
    pages = Pages({"prompts": [], "nextCursor": "again"}, {"prompts": [], "nextCursor": "again"})
    with pytest.raises(ServerReplyError, match="repeated the cursor 'again'"):
        run(pages, PROMPTS)


@pytest.mark.parametrize(
    ("cursor", "said"), [("again", "repeated the cursor 'again'"), (7, "nextCursor: not a text")]
)
def test_the_skills_list_is_paged_alike(cursor: Any, said: str) -> None:
    """`pages` serves the skills' list too: it never ends short unsaid."""
    _, send = skill_request(SkillAction.LIST, {"extensions": {SKILLS: {}}}, 5)
    pages = Pages({"skills": [], "nextCursor": cursor}, {"skills": [], "nextCursor": cursor})
    with pytest.raises(ServerReplyError, match=said) as raised:
        anyio.run(send, pages)
    assert raised.value.code == -32603


def test_hints_are_read_as_the_sdk_cache_reads_them_and_only_where_the_revision_has_them() -> None:
    assert MAX_TTL_MS == SDK_MAX_TTL_MS
    assert page_freshness({}, MODERN) == ListFreshness(0, "private")
    assert page_freshness({"ttlMs": 5000, "cacheScope": "public"}, MODERN) == ListFreshness(5000, "public")
    assert page_freshness({"ttlMs": MAX_TTL_MS * 2, "cacheScope": "shared"}, MODERN) == ListFreshness(
        MAX_TTL_MS, "private"
    )
    assert page_freshness({"ttlMs": 5000, "cacheScope": "public"}, HANDSHAKE) is None
    pages = Pages(
        {"prompts": [], "nextCursor": "2", "ttlMs": 9000, "cacheScope": "public"},
        {"prompts": [], "ttlMs": 4000, "cacheScope": "public"},
    )
    assert run(pages, PROMPTS).freshness == ListFreshness(4000, "public")  # the shortest page wins
    assert run(Pages({"prompts": [], "ttlMs": 4000}), PROMPTS, HANDSHAKE).freshness is None
