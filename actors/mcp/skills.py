"""Agent Skills served over MCP (the Skills extension, SEP-2640), as a host reads them.

A server that declares ``io.modelcontextprotocol/skills`` lists its skills (``skills/list``)
and answers for one (``skills/get``). Each `Skill` entry carries the skill's frontmatter and a
complete manifest of its files with their digests and sizes. The host reads nothing ahead of
need: a skill's ``SKILL.md`` is read when the skill is loaded, a supporting file when it is
read, and each is verified against the entry the host holds (`verified`, `checked_manifest`).
A read of a file the entry does not list is a verification failure, as is a size, a digest or
a frontmatter that does not match. Pure values and functions: no I/O, no threads.
"""

from __future__ import annotations

import base64
import hashlib
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

import yaml

__all__ = [
    "DYNAMIC",
    "EXTENSION",
    "MAX_FILES",
    "MAX_TOTAL_BYTES",
    "SKILL_FAULT",
    "Skill",
    "SkillFault",
    "SkillFile",
    "SkillRejected",
    "checked_manifest",
    "content_bytes",
    "digest_of",
    "frontmatter_of",
    "listed",
    "offers_skills",
    "verified",
]

EXTENSION: Final = "io.modelcontextprotocol/skills"
"""The extension's identifier, under the server's ``capabilities.extensions``."""
DYNAMIC: Final = "dynamic"
"""An entry's ``resources`` when the server cannot publish stable digests."""
MAX_FILES: Final = 512
"""Files per skill every host must accept (and this one accepts no more)."""
MAX_TOTAL_BYTES: Final = 16 * 1024 * 1024
"""Total bytes per skill, summed over its files' sizes."""
MANIFEST: Final = "SKILL.md"
SKILL_FAULT: Final = "skill_fault"
"""The `ToolResult.metadata` key of a verification failure's `SkillFault`."""

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_NAME = re.compile(r"[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){0,63}")


class SkillFault(StrEnum):
    """Why a skill, or one of its files, was not used. Decide on it, never on the text."""

    INVALID_ENTRY = "invalid_entry"
    """The entry breaks the extension's rules (its shape, its URI, its name, its manifest)."""
    TOO_LARGE = "too_large"
    """More files or bytes than a host must accept."""
    UNLISTED = "unlisted"
    """A file the held entry does not list: the skill changed since the entry was taken."""
    SIZE = "size"
    """The file's length is not the size the entry gives."""
    DIGEST = "digest"
    """The file's SHA-256 is not the digest the entry gives."""
    FRONTMATTER = "frontmatter"
    """The ``SKILL.md`` read says other than the entry's frontmatter (or says nothing)."""


class SkillRejected(Exception):
    """A skill or a file not used, with its `SkillFault`."""

    def __init__(self, fault: SkillFault, message: str) -> None:
        super().__init__(message)
        self.fault = fault
        self.message = message


@dataclass(frozen=True)
class SkillFile:
    """One file of a skill, as its entry describes it."""

    uri: str
    digest: str
    size: int

    def to_json(self) -> dict[str, Any]:
        return {"uri": self.uri, "digest": self.digest, "size": self.size}


@dataclass(frozen=True)
class Skill:
    """A skill's entry (what ``skills/list`` and ``skills/get`` return): immutable, so a host
    can hold it for as long as it acts on the skill and hand it between threads."""

    uri: str
    """The URI of its ``SKILL.md``."""
    frontmatter: Mapping[str, Any]
    """Its ``SKILL.md`` frontmatter as JSON (``name``, ``description`` and whatever else)."""
    files: tuple[SkillFile, ...] | None
    """Its complete manifest, ``SKILL.md`` included; None when the server marks it dynamic."""

    @property
    def name(self) -> str:
        return str(self.frontmatter["name"])

    @property
    def description(self) -> str:
        return str(self.frontmatter["description"])

    @property
    def root(self) -> str:
        """The skill's directory: its ``SKILL.md`` URI without ``/SKILL.md``."""
        return self.uri[: -len(MANIFEST) - 1]

    @property
    def dynamic(self) -> bool:
        return self.files is None

    def file(self, uri: str) -> SkillFile | None:
        """The manifest's entry for ``uri``, if it lists it."""
        return next((f for f in self.files or () if f.uri == uri), None)

    def resolve(self, path: str) -> str:
        """The URI of ``path``: a URI as it is, or a reference relative to the skill's root
        (which cannot climb out of it)."""
        if "://" in path:
            return path
        joined = posixpath.normpath(posixpath.join("/", path)).lstrip("/")
        return f"{self.root}/{joined}"

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files or ())

    def to_json(self) -> dict[str, Any]:
        resources: Any = DYNAMIC if self.files is None else [f.to_json() for f in self.files]
        return {"uri": self.uri, "frontmatter": dict(self.frontmatter), "resources": resources}

    @classmethod
    def from_json(cls, entry: Any) -> Skill:
        """The entry ``entry`` (JSON), checked as a host must before it loads the skill;
        `SkillRejected` (``invalid_entry``, ``too_large``) if it may not be loaded."""
        if not isinstance(entry, Mapping):
            raise _invalid(f"a skill entry is an object, not {type(entry).__name__}")
        uri, frontmatter, resources = entry.get("uri"), entry.get("frontmatter"), entry.get("resources")
        if not isinstance(uri, str) or not uri.endswith(f"/{MANIFEST}") or "://" not in uri:
            raise _invalid(f"the entry's uri {uri!r} is not the URI of a {MANIFEST}")
        if not isinstance(frontmatter, Mapping):
            raise _invalid(f"{uri}: the entry has no frontmatter object")
        name, description = frontmatter.get("name"), frontmatter.get("description")
        if not isinstance(name, str) or not isinstance(description, str) or not description:
            raise _invalid(f"{uri}: the frontmatter needs a name and a description")
        if not _NAME.fullmatch(name) or uri.split("/")[-2] != name:
            raise _invalid(f"{uri}: the name {name!r} is not the skill's final path segment")
        skill = cls(uri, dict(frontmatter), _files(uri, resources))
        _check_manifest(skill)
        return skill


def offers_skills(capabilities: Mapping[str, Any]) -> bool:
    """Whether a server's capabilities (JSON) declare the Skills extension."""
    extensions = capabilities.get("extensions")
    return isinstance(extensions, Mapping) and isinstance(extensions.get(EXTENSION), Mapping)


def digest_of(data: bytes) -> str:
    """``sha256:<hex>`` of ``data``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def content_bytes(contents: Any, uri: str) -> bytes:
    """The raw bytes of ``uri`` in a ``resources/read`` answer's ``contents`` (text as UTF-8, a
    blob decoded); `SkillRejected` (``digest``) when the answer holds no content for it."""
    for item in contents if isinstance(contents, list) else ():
        if isinstance(item, Mapping) and item.get("uri") in (uri, None):
            if isinstance(item.get("text"), str):
                return str(item["text"]).encode()
            if isinstance(item.get("blob"), str):
                return base64.b64decode(str(item["blob"]), validate=False)
    raise SkillRejected(SkillFault.DIGEST, f"{uri}: the server's answer holds no content for it")


def listed(skill: Skill, uri: str) -> SkillFile | None:
    """The held entry's file at ``uri`` (None for a dynamic skill: any file may be read);
    `SkillRejected` (``unlisted``) if the entry does not list it."""
    if skill.files is None:
        return None
    entry = skill.file(uri)
    if entry is None:
        raise SkillRejected(
            SkillFault.UNLISTED, f"{uri} is not a file of {skill.uri} as listed: the skill changed since"
        )
    return entry


def verified(skill: Skill, uri: str, data: bytes) -> bytes:
    """``data``, read at ``uri`` for ``skill``, if it is what the held entry describes;
    `SkillRejected` (``unlisted``, ``size``, ``digest``, ``too_large``) if not."""
    if skill.files is None:
        if len(data) > MAX_TOTAL_BYTES:
            raise SkillRejected(SkillFault.TOO_LARGE, f"{uri}: over {MAX_TOTAL_BYTES} bytes")
        return data
    entry = listed(skill, uri)
    assert entry is not None  # not dynamic
    if len(data) != entry.size:
        raise SkillRejected(SkillFault.SIZE, f"{uri}: {len(data)} bytes, the entry says {entry.size}")
    if digest_of(data) != entry.digest:
        raise SkillRejected(SkillFault.DIGEST, f"{uri}: its digest is not the entry's")
    return data


def checked_manifest(skill: Skill, data: bytes) -> str:
    """The text of ``skill``'s ``SKILL.md`` (verified bytes), if its frontmatter is the
    entry's, field by field; `SkillRejected` (``frontmatter``) if not."""
    text = data.decode("utf-8", errors="replace")
    found = frontmatter_of(text)
    if found is None:
        raise SkillRejected(SkillFault.FRONTMATTER, f"{skill.uri}: it has no YAML frontmatter")
    differ = sorted(
        k for k in set(found) | set(skill.frontmatter) if found.get(k) != skill.frontmatter.get(k)
    )
    if differ:
        raise SkillRejected(
            SkillFault.FRONTMATTER,
            f"{skill.uri}: its frontmatter differs from the entry's in {', '.join(differ)}",
        )
    return text


class _JSONLoader(yaml.SafeLoader):
    """YAML as JSON sees it: a date stays the text it was written as."""


_JSONLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def frontmatter_of(text: str) -> dict[str, Any] | None:
    """The leading ``---``-delimited YAML frontmatter of ``text`` as JSON, or None."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    try:
        end = next(i for i, line in enumerate(lines[1:], 1) if line.strip() == "---")
    except StopIteration:
        return None
    try:
        found = yaml.load("\n".join(lines[1:end]), Loader=_JSONLoader)
    except yaml.YAMLError:
        return None
    return dict(found) if isinstance(found, dict) else None


def _invalid(message: str) -> SkillRejected:
    return SkillRejected(SkillFault.INVALID_ENTRY, message)


def _files(uri: str, resources: Any) -> tuple[SkillFile, ...] | None:
    if resources == DYNAMIC:
        return None
    if not isinstance(resources, list):
        raise _invalid(f"{uri}: resources is neither a list of files nor {DYNAMIC!r}")
    files: list[SkillFile] = []
    for item in resources:
        if not isinstance(item, Mapping):
            raise _invalid(f"{uri}: a file of its manifest is not an object")
        file_uri, digest, size = item.get("uri"), item.get("digest"), item.get("size")
        if not isinstance(file_uri, str) or not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
            raise _invalid(f"{uri}: the file {file_uri!r} has no uri or no sha256 digest")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise _invalid(f"{uri}: the file {file_uri!r} has no size in bytes")
        files.append(SkillFile(file_uri, digest, size))
    return tuple(files)


def _check_manifest(skill: Skill) -> None:
    if skill.files is None:
        return
    uris = [f.uri for f in skill.files]
    if skill.uri not in uris:
        raise _invalid(f"{skill.uri}: its manifest does not list its {MANIFEST}")
    if len(set(uris)) != len(uris):
        raise _invalid(f"{skill.uri}: its manifest lists a file twice")
    outside = [u for u in uris if not u.startswith(f"{skill.root}/") or "/../" in u or u.endswith("/..")]
    if outside:
        raise _invalid(f"{skill.uri}: its manifest lists files outside the skill: {', '.join(outside)}")
    if len(uris) > MAX_FILES or skill.total_bytes > MAX_TOTAL_BYTES:
        raise SkillRejected(
            SkillFault.TOO_LARGE,
            f"{skill.uri}: {len(uris)} files, {skill.total_bytes} bytes: over the {MAX_FILES} files"
            f" or {MAX_TOTAL_BYTES} bytes a host must accept",
        )
