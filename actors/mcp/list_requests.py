"""The catalog's lists as request values: ``resources/list``, ``resources/templates/list`` and
``prompts/list`` through the transport's one `RequestTransport.send`.

Every page is asked for in turn (``nextCursor``) and read into the seam's dataclasses; an entry
without the fields MCP requires (or with fields of the wrong type) fails the list as -32603
"malformed", as the SDK's own result types would. The pages' caching hints are combined beside
the items, on sessions whose revision has them (`actors.mcp.revisions`), read as the SDK's
client cache reads them. No SDK import: this runs above the seam, on the event-loop thread.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from actors.mcp.freshness import MAX_TTL_MS, ListFreshness, Listing, combined
from actors.mcp.revisions import revision_of
from actors.mcp.transport import (
    JSONObject,
    RemotePrompt,
    RemoteResource,
    RemoteResourceTemplate,
    Request,
    RequestTransport,
    ServerReplyError,
)

__all__ = [
    "PROMPTS",
    "RESOURCES",
    "TEMPLATES",
    "CatalogList",
    "MalformedEntry",
    "listed",
    "page_freshness",
    "pages",
]

_MAX_PAGES: Final = 1000
_ARGUMENT_KEYS: Final = ("name", "title", "description", "required")
"""What a prompt's argument says (MCP's ``PromptArgument``); other keys are not kept."""
_INTERNAL_ERROR: Final = -32603

_T = TypeVar("_T")


class MalformedEntry(ValueError):
    """An entry of a list that MCP's types rule out (`CatalogList.read`), said by where."""


@dataclass(frozen=True)
class CatalogList(Generic[_T]):
    """One list of the catalog: its method, the key of a page's entries, and how an entry
    becomes the seam's dataclass."""

    method: str
    key: str
    read: Callable[[Mapping[str, Any]], _T]


def _text(entry: Mapping[str, Any], key: str, *, required: bool = False) -> str | None:
    value = entry.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise MalformedEntry(f"{key}: {'a text is required' if value is None else 'not a text'}")
    return value


def _object(entry: Mapping[str, Any], key: str) -> JSONObject | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise MalformedEntry(f"{key}: not an object")
    return dict(value)


def _resource(entry: Mapping[str, Any]) -> RemoteResource:
    size = entry.get("size")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int)):
        raise MalformedEntry("size: not a whole number")
    return RemoteResource(
        uri=_text(entry, "uri", required=True) or "",
        name=_text(entry, "name", required=True) or "",
        title=_text(entry, "title"),
        description=_text(entry, "description"),
        mime_type=_text(entry, "mimeType"),
        size=size,
        annotations=_object(entry, "annotations"),
    )


def _template(entry: Mapping[str, Any]) -> RemoteResourceTemplate:
    return RemoteResourceTemplate(
        uri_template=_text(entry, "uriTemplate", required=True) or "",
        name=_text(entry, "name", required=True) or "",
        title=_text(entry, "title"),
        description=_text(entry, "description"),
        mime_type=_text(entry, "mimeType"),
        annotations=_object(entry, "annotations"),
    )


def _prompt(entry: Mapping[str, Any]) -> RemotePrompt:
    arguments = entry.get("arguments") or []
    if not isinstance(arguments, list):
        raise MalformedEntry("arguments: not a list")
    for index, argument in enumerate(arguments):
        if not isinstance(argument, dict):
            raise MalformedEntry(f"arguments.{index}: not an object")
        try:
            _text(argument, "name", required=True)
        except MalformedEntry as exc:
            raise MalformedEntry(f"arguments.{index}.{exc}") from None
    return RemotePrompt(
        name=_text(entry, "name", required=True) or "",
        title=_text(entry, "title"),
        description=_text(entry, "description"),
        arguments=tuple({k: a[k] for k in _ARGUMENT_KEYS if a.get(k) is not None} for a in arguments),
    )


def _argument(argument: Mapping[str, Any]) -> JSONObject:
    kept = {key: argument[key] for key in _ARGUMENT_KEYS if argument.get(key) is not None}
    if not isinstance(kept.get("required", False), bool):
        del kept["required"]  # not for us to guess what it means
    return kept


RESOURCES: Final = CatalogList("resources/list", "resources", _resource)
TEMPLATES: Final = CatalogList("resources/templates/list", "resourceTemplates", _template)
PROMPTS: Final = CatalogList("prompts/list", "prompts", _prompt)


def page_freshness(page: Mapping[str, Any], protocol_version: str | None) -> ListFreshness | None:
    """One page's caching hint, as the SDK's client cache reads it: on revisions that have
    hints only, an absent ``ttlMs`` as 0, anything but ``public`` as private, the TTL capped."""
    if not revision_of(protocol_version).cache_hints:
        return None
    ttl_ms = page.get("ttlMs", 0)
    if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int) or ttl_ms < 0:
        raise MalformedEntry("ttlMs: not a whole number of milliseconds")
    return ListFreshness(
        min(ttl_ms, MAX_TTL_MS), "public" if page.get("cacheScope") == "public" else "private"
    )


async def pages(
    t: RequestTransport, method: str, params: JSONObject, timeout: float | None
) -> AsyncIterator[JSONObject]:
    """Every page of ``method`` in turn, following ``nextCursor``. A cursor that is no text, one
    repeated or more than `_MAX_PAGES` pages fail it as -32603: a list never ends short unsaid."""
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(_MAX_PAGES):
        asked = {**params, "cursor": cursor} if cursor else dict(params)
        page = await t.send(Request(method, asked), timeout)
        yield page
        cursor = page.get("nextCursor")
        if cursor is not None and not isinstance(cursor, str):
            raise ServerReplyError(
                f"the server's answer to {method} is malformed: nextCursor: not a text", _INTERNAL_ERROR
            )
        if not cursor:
            return
        if cursor in seen:
            raise ServerReplyError(f"{method} repeated the cursor {cursor!r}", _INTERNAL_ERROR)
        seen.add(cursor)
    raise ServerReplyError(f"{method} has more than {_MAX_PAGES} pages", _INTERNAL_ERROR)


async def listed(
    t: RequestTransport, kind: CatalogList[_T], timeout: float | None, protocol_version: str | None
) -> Listing[_T]:
    """Every entry of every page of ``kind``, with the pages' caching hint combined."""
    items: list[_T] = []
    hints: list[ListFreshness | None] = []
    async for page in pages(t, kind.method, {}, timeout):
        entries = page.get(kind.key)
        try:
            if not isinstance(entries, list):
                raise MalformedEntry(f"{kind.key}: {'required' if entries is None else 'not a list'}")
            for index, entry in enumerate(entries):
                try:
                    items.append(kind.read(entry if isinstance(entry, Mapping) else {}))
                except MalformedEntry as exc:
                    raise MalformedEntry(f"{kind.key}.{index}.{exc}") from None
            hints.append(page_freshness(page, protocol_version))
        except MalformedEntry as exc:
            raise ServerReplyError(
                f"the server's answer to {kind.method} is malformed: {exc}", _INTERNAL_ERROR
            ) from None
    return Listing(tuple(items), combined(hints))
