"""The gateway's ``skill://`` URIs: each backend's skills under its namespace.

Two backends may both serve ``skill://refunds/SKILL.md``: two unrelated skills. Through the
gateway a backend's ``skill://<path>/<file>`` is ``skill://<namespace>/<path>/<file>``: the
namespace is the first segment of the skill path (its authority), so a skill's name, the final
segment, is unchanged, the origin is recoverable from the URI alone, and no two backends' skills
meet. Skills under other schemes are not relayed. Pure.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final

__all__ = ["SCHEME", "inward", "outward", "outward_entry"]

SCHEME: Final = "skill://"


def outward(namespace: str, uri: str) -> str | None:
    """The gateway's URI of ``namespace``'s ``uri`` (None: not a ``skill://`` URI)."""
    if not uri.startswith(SCHEME) or len(uri) == len(SCHEME):
        return None
    return f"{SCHEME}{namespace}/{uri[len(SCHEME) :]}"


def inward(uri: str, namespaces: Collection[str]) -> tuple[str, str] | None:
    """The namespace and the backend's own URI of the gateway's ``uri``, if it names one of
    ``namespaces`` (None: not a URI of the gateway's skills)."""
    if not uri.startswith(SCHEME):
        return None
    namespace, slash, rest = uri[len(SCHEME) :].partition("/")
    if not slash or not rest or namespace not in namespaces:
        return None
    return namespace, f"{SCHEME}{rest}"


def outward_entry(namespace: str, entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """``namespace``'s skill entry with the gateway's URIs (None: a skill not relayed). Its
    frontmatter, digests and sizes are the backend's: the gateway rewrites no content."""
    uri = outward(namespace, str(entry.get("uri", "")))
    if uri is None:
        return None
    resources = entry.get("resources")
    if isinstance(resources, list):
        files = []
        for item in resources:
            file_uri = outward(namespace, str(item.get("uri", "")))
            if file_uri is None:
                return None
            files.append({**item, "uri": file_uri})
        resources = files
    return {**entry, "uri": uri, "resources": resources}
