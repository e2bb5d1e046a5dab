"""An SDK `MCPServer` serving Agent Skills per the MCP Skills extension
(``io.modelcontextprotocol/skills``, SEP-2640, ext-skills ``specification/stable/skills.mdx``).

Run it as ``python -m tests.servers.skills_server [--transport stdio|streamable-http] [--port N]
[--skills DIR] [--page-size N] [--log-reads FILE]``. It speaks both protocol eras (2025-11-25 by
handshake, 2026-07-28 by discovery) over either transport. tests/conformance/test_skills_server.py
runs the suite's ``sep-2640-skills-*`` server scenarios against it over streamable HTTP.

The extension is specified against 2026-07-28, and only that era is told of it: the handshake
era's ``ServerCapabilities`` has no ``extensions`` field, so the SDK leaves it out of the
``initialize`` result. Its methods are answered in both eras all the same.

``--skills DIR`` is the skill namespace: every directory under it holding a ``SKILL.md`` is a skill
whose ``<skill-path>`` is its path below ``DIR`` (``acme/billing/refunds/SKILL.md`` is the skill
``refunds`` with the prefix ``acme/billing``). Without it the server writes a sample set to a
temporary folder (removed when it stops) and serves that: ``pdf-processing`` (``SKILL.md`` with
``metadata.version``, ``references/FORMS.md``, ``templates/invoice.md``,
``templates/regional/eu-invoice.md``) and ``acme/billing/refunds`` (``SKILL.md``,
``examples/email.md``).

Nothing is cached: every request scans ``DIR`` again, so a test that edits a file sees the new
digest in the next ``skills/list``. A ``SKILL.md`` whose frontmatter lacks a string ``name`` or
``description``, whose ``name`` breaks the Agent Skills naming rules or differs from its folder's
name, or that is not a JSON object, is not served (a warning says why). Names beginning with a
dot (``.git``, ``.DS_Store``) are not part of any skill.

What it serves:

- capabilities ``resources`` and (2026-07-28) ``extensions: {"io.modelcontextprotocol/skills":
  {"directoryRead": true}}``;
- every file of every skill as the resource ``skill://<skill-path>/<file-path>`` (segments
  percent-encoded where RFC 3986 asks), all of them in ``resources/list`` (a skill's
  ``SKILL.md`` with ``mimeType`` ``text/markdown`` and the frontmatter's ``name`` and
  ``description``), readable with ``resources/read`` (UTF-8 as text, anything else as a blob);
  any other URI is -32602; with ``--log-reads FILE`` each ``resources/read`` URI, served or not,
  is appended to FILE (a line each) before it is answered: what a host read, and when;
- ``skills/list`` (``cursor``/``nextCursor``, ``--page-size`` entries a page, default 1000) and
  ``skills/get`` (``{uri}`` of a ``SKILL.md``; any other is -32602): entries with the verbatim
  frontmatter and a complete ``resources`` manifest (``SKILL.md`` and every file below it, nested
  skills' files included, each with ``sha256:`` digest and byte size), ordered by URI;
- ``resources/directory/read`` (``{uri, cursor?}``): the direct children of a skill's root
  (``skill://<skill-path>``), of any folder inside a skill or of a prefix folder leading to one,
  files as in ``resources/list`` and folders with ``mimeType`` ``inode/directory``, paged by
  ``--page-size``; a URI that is not such a folder is -32602.

On 2026-07-28 the ``skills/*`` results carry ``ttlMs: 0`` (the catalog is read from disk anew on
every request) and ``cacheScope: "public"`` (every caller is served the same); the SDK stamps
``resultType: "complete"``. Handshake-era results carry neither.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import contextlib
import hashlib
import json
import logging
import mimetypes
import re
import signal
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Literal
from urllib.parse import quote

import yaml
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    InputRequiredResult,
    PaginatedRequestParams,
    RequestParams,
    Resource,
    Result,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import AnyUrl, BaseModel

__all__ = ["SAMPLE", "SKILLS", "Catalog", "SkillsExtension", "SkillsServer", "build", "main", "scan"]

logger = logging.getLogger(__name__)

SKILLS = "io.modelcontextprotocol/skills"
"""The extension's identifier (SEP-2640)."""
SCHEME = "skill://"
SKILL_MD = "SKILL.md"
DIRECTORY = "inode/directory"
MARKDOWN = "text/markdown"
TTL_MS = 0
"""The ``ttlMs`` of ``skills/*`` results: nothing is cached here, so neither should a client."""
DEFAULT_PAGE_SIZE = 1000

_NAME = re.compile(r"^(?!.*--)[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$")
"""The Agent Skills naming rules: 1-64 lowercase letters, digits and hyphens, no hyphen first,
last or twice in a row."""
_FRONTMATTER = re.compile(r"\A\ufeff?---\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_SEGMENT_SAFE = "!$&'()*+,;=:@"
"""Characters RFC 3986 allows in a path segment besides the unreserved ones."""

SAMPLE: dict[str, str] = {
    "pdf-processing/SKILL.md": (
        "---\n"
        "name: pdf-processing\n"
        "description: Extract, fill, and assemble PDF documents\n"
        "metadata:\n"
        '  version: "1.0"\n'
        "---\n\n"
        "# PDF processing\n\n"
        "Read `references/FORMS.md` before filling a form. Pick the matching template from\n"
        "`templates/` (regional variants are in `templates/regional/`).\n"
    ),
    "pdf-processing/references/FORMS.md": (
        "# Forms\n\nFill every field; leave none blank. Dates are written YYYY-MM-DD.\n"
    ),
    "pdf-processing/templates/invoice.md": "# Invoice\n\nNumber: {number}\nTotal: {total}\n",
    "pdf-processing/templates/regional/eu-invoice.md": (
        "# EU invoice\n\nNumber: {number}\nVAT number: {vat}\nTotal incl. VAT: {total}\n"
    ),
    "acme/billing/refunds/SKILL.md": (
        "---\n"
        "name: refunds\n"
        "description: Process customer refund requests per company policy\n"
        "license: Apache-2.0\n"
        "---\n\n"
        "# Refunds\n\nCheck the order, refund to the original payment method, then answer the\n"
        "customer as in `examples/email.md`.\n"
    ),
    "acme/billing/refunds/examples/email.md": (
        "Dear customer,\n\nYour refund of {amount} is on its way.\n\nACME Billing\n"
    ),
}
"""The sample set served without ``--skills``: path below the skills folder → text."""


# --- wire shapes -----------------------------------------------------------------------------


class SkillResource(BaseModel):
    """One file of a skill: its URI, the SHA-256 of its raw bytes and their number."""

    uri: str
    digest: str
    size: int


class Skill(BaseModel):
    """A skill entry, as ``skills/list`` and ``skills/get`` answer it."""

    uri: str
    frontmatter: dict[str, Any]
    resources: list[SkillResource]


class CacheFields(Result):
    """``ttlMs`` and ``cacheScope``: set on 2026-07-28, absent (None) on a handshake-era wire."""

    ttl_ms: int | None = None
    cache_scope: Literal["public", "private"] | None = None


class ListSkillsResult(CacheFields):
    skills: list[Skill]
    next_cursor: str | None = None


class GetSkillResult(CacheFields):
    skill: Skill


class GetSkillParams(RequestParams):
    """Params of ``skills/get``."""

    uri: str


class DirectoryReadParams(PaginatedRequestParams):
    """Params of ``resources/directory/read``."""

    uri: str


class DirectoryReadResult(Result):
    resources: list[Resource]
    next_cursor: str | None = None


# --- the catalog: the skills folder as it is now --------------------------------------------


def _uri(parts: Sequence[str]) -> str:
    return SCHEME + "/".join(quote(part, safe=_SEGMENT_SAFE) for part in parts)


def _visible(path: Path, root: Path) -> bool:
    return not any(part.startswith(".") for part in path.relative_to(root).parts)


def _mime_type(path: Path) -> str:
    if path.suffix.lower() in (".md", ".markdown"):
        return MARKDOWN
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed or "application/octet-stream"


class _FrontmatterLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` but for timestamps, which stay the strings the author wrote: the
    frontmatter is rendered verbatim as JSON, and JSON has no dates."""

    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


def parse_frontmatter(text: str) -> dict[str, Any] | str:
    """The YAML frontmatter of a ``SKILL.md`` as a JSON object, or why it is not one."""
    block = _FRONTMATTER.match(text)
    if block is None:
        return "no leading --- delimited YAML frontmatter"
    try:
        loaded = yaml.load(block.group(1), Loader=_FrontmatterLoader)
        json.dumps(loaded, allow_nan=False)
    except (yaml.YAMLError, TypeError, ValueError) as exc:
        return f"frontmatter is not JSON-representable YAML: {exc}"
    if not isinstance(loaded, dict) or not all(isinstance(key, str) for key in loaded):
        return "frontmatter is not a mapping with string keys"
    for field in ("name", "description"):
        if not isinstance(loaded.get(field), str) or not loaded[field]:
            return f"frontmatter has no non-empty string {field!r}"
    return loaded


@dataclass(frozen=True)
class SkillFolder:
    """A skill found on disk: its ``SKILL.md`` URI, root folder, frontmatter and files."""

    uri: str
    root: Path
    frontmatter: dict[str, Any]
    files: tuple[Path, ...]


@dataclass(frozen=True)
class Catalog:
    """What the skills folder serves at one moment: skills by ``SKILL.md`` URI, files and
    folders by URI."""

    skills: dict[str, SkillFolder]
    files: dict[str, Path]
    folders: dict[str, Path]
    root: Path

    def uri(self, path: Path) -> str:
        return _uri(path.relative_to(self.root).parts)

    def resource(self, uri: str) -> Resource:
        """The ``Resource`` of a served file or folder."""
        if uri in self.folders:
            return Resource(uri=uri, name=self.folders[uri].name, mime_type=DIRECTORY)
        path = self.files[uri]
        skill = self.skills.get(uri)
        if skill is not None:
            return Resource(
                uri=uri,
                name=skill.frontmatter["name"],
                description=skill.frontmatter["description"],
                mime_type=MARKDOWN,
                size=path.stat().st_size,
            )
        return Resource(uri=uri, name=path.name, mime_type=_mime_type(path), size=path.stat().st_size)

    def entry(self, skill: SkillFolder) -> Skill:
        """The skill's entry, its digests computed from the bytes on disk now."""
        resources = []
        for path in skill.files:
            data = path.read_bytes()
            digest = "sha256:" + hashlib.sha256(data).hexdigest()
            resources.append(SkillResource(uri=self.uri(path), digest=digest, size=len(data)))
        return Skill(uri=skill.uri, frontmatter=skill.frontmatter, resources=resources)

    def children(self, folder_uri: str) -> list[str]:
        """The URIs of a served folder's direct children that are served, in URI order."""
        folder = self.folders[folder_uri]
        found = (self.uri(child) for child in folder.iterdir())
        return sorted(uri for uri in found if uri in self.files or uri in self.folders)


def scan(root: Path) -> Catalog:
    """The skills under ``root`` as they are on disk now."""
    root = root.resolve()
    skills: dict[str, SkillFolder] = {}
    files: dict[str, Path] = {}
    folders: dict[str, Path] = {}
    for skill_md in sorted(root.rglob(SKILL_MD)):
        skill_root = skill_md.parent
        parts = skill_root.relative_to(root).parts
        if not parts or not skill_md.is_file() or not _visible(skill_md, root):
            continue
        uri = _uri((*parts, SKILL_MD))
        parsed = parse_frontmatter(skill_md.read_bytes().decode("utf-8", errors="replace"))
        if isinstance(parsed, str):
            logger.warning("not serving %s: %s", uri, parsed)
            continue
        if parsed["name"] != parts[-1] or not _NAME.match(parsed["name"]):
            logger.warning(
                "not serving %s: name %r must be its folder's and a valid name", uri, parsed["name"]
            )
            continue
        inside = sorted(path for path in skill_root.rglob("*") if _visible(path, root))
        skill_files = tuple(path for path in inside if path.is_file())
        skills[uri] = SkillFolder(uri, skill_root, parsed, skill_files)
        files.update((_uri(path.relative_to(root).parts), path) for path in skill_files)
        folders.update((_uri(path.relative_to(root).parts), path) for path in inside if path.is_dir())
        for depth in range(1, len(parts) + 1):  # the skill's root and the prefix folders above it
            folders[_uri(parts[:depth])] = root.joinpath(*parts[:depth])
    return Catalog(skills, files, folders, root)


# --- the extension -----------------------------------------------------------------------------


def _encode_cursor(last_uri: str) -> str:
    return base64.urlsafe_b64encode(last_uri.encode()).decode()


def _after_cursor(uris: list[str], cursor: str | None) -> list[str]:
    """``uris`` (sorted) after the one a cursor names; a cursor this server did not write is -32602."""
    if cursor is None:
        return uris
    try:
        last = base64.urlsafe_b64decode(cursor.encode()).decode()
    except (binascii.Error, UnicodeError, ValueError):
        raise MCPError(code=INVALID_PARAMS, message=f"Invalid cursor: {cursor!r}") from None
    return [uri for uri in uris if uri > last]


def _page(uris: list[str], cursor: str | None, size: int) -> tuple[list[str], str | None]:
    """One page of ``uris`` from ``cursor``, and the cursor of the next page if there is one."""
    rest = _after_cursor(uris, cursor)
    page = rest[:size]
    return page, (_encode_cursor(page[-1]) if len(rest) > size else None)


class SkillsExtension(Extension):
    """The skills extension over the folder ``root``, read anew for every request."""

    identifier = SKILLS

    def __init__(self, root: Path, page_size: int = DEFAULT_PAGE_SIZE) -> None:
        self.root = root
        self.page_size = page_size

    def settings(self) -> dict[str, Any]:
        return {"directoryRead": True}

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding("skills/list", PaginatedRequestParams, self._list),
            MethodBinding("skills/get", GetSkillParams, self._get),
            MethodBinding("resources/directory/read", DirectoryReadParams, self._read_directory),
        )

    def catalog(self) -> Catalog:
        return scan(self.root)

    @staticmethod
    def _cache_fields(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return {"ttl_ms": TTL_MS, "cache_scope": "public"}
        return {}

    async def _list(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams
    ) -> HandlerResult:
        catalog = self.catalog()
        page, next_cursor = _page(sorted(catalog.skills), params.cursor, self.page_size)
        skills = [catalog.entry(catalog.skills[uri]) for uri in page]
        return ListSkillsResult(skills=skills, next_cursor=next_cursor, **self._cache_fields(ctx))

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: GetSkillParams) -> HandlerResult:
        catalog = self.catalog()
        skill = catalog.skills.get(params.uri)
        if skill is None:
            raise MCPError(code=INVALID_PARAMS, message=f"No skill is served at {params.uri}")
        return GetSkillResult(skill=catalog.entry(skill), **self._cache_fields(ctx))

    async def _read_directory(
        self, ctx: ServerRequestContext[Any, Any], params: DirectoryReadParams
    ) -> HandlerResult:
        catalog = self.catalog()
        if params.uri not in catalog.folders:
            raise MCPError(code=INVALID_PARAMS, message=f"{params.uri} is not a directory resource")
        page, next_cursor = _page(catalog.children(params.uri), params.cursor, self.page_size)
        return DirectoryReadResult(resources=[catalog.resource(uri) for uri in page], next_cursor=next_cursor)


class SkillsServer(MCPServer[None]):
    """An `MCPServer` whose resources are the skill files of its `SkillsExtension`, listed and read
    from disk on every request instead of registered once."""

    def __init__(self, skills: SkillsExtension, log_reads: Path | None = None) -> None:
        # No subscriptions/listen: nothing watches the folder, so no change is ever announced
        # (and the 2026-07-28 capabilities say so: listChanged and subscribe false).
        super().__init__("skills-server", extensions=[skills], subscriptions=False)
        self.skills = skills
        self.log_reads = log_reads

    async def list_resources(self) -> list[Resource]:
        catalog = self.skills.catalog()
        return [catalog.resource(uri) for uri in sorted(catalog.files)]

    async def read_resource(
        self, uri: AnyUrl | str, context: Context[None, Any] | None = None
    ) -> Iterable[ReadResourceContents] | InputRequiredResult:
        if self.log_reads is not None:
            with self.log_reads.open("a", encoding="utf-8") as log:
                log.write(f"{uri}\n")
        catalog = self.skills.catalog()
        path = catalog.files.get(str(uri))
        if path is None:
            raise ResourceNotFoundError(f"No skill file is served at {uri}")
        data = path.read_bytes()
        mime_type = catalog.resource(str(uri)).mime_type
        try:
            return [ReadResourceContents(content=data.decode("utf-8"), mime_type=mime_type)]
        except UnicodeDecodeError:
            return [ReadResourceContents(content=data, mime_type=mime_type)]


def build(skills: Path, page_size: int = DEFAULT_PAGE_SIZE, log_reads: Path | None = None) -> SkillsServer:
    """A server for the skills folder ``skills`` (each read's URI appended to ``log_reads``)."""
    return SkillsServer(SkillsExtension(skills, page_size), log_reads)


def write_sample(folder: Path) -> None:
    """Write `SAMPLE` under ``folder``."""
    for relative, text in SAMPLE.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    sys.exit(0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--skills", type=Path, help="the skills folder (default: a sample set)")
    parser.add_argument(
        "--page-size",
        type=int,
        default=DEFAULT_PAGE_SIZE,
        help="entries per page of skills/list and of resources/directory/read",
    )
    parser.add_argument("--log-reads", type=Path, help="append each resources/read URI to this file")
    args = parser.parse_args(argv)
    if args.page_size <= 0:
        parser.error("--page-size must be positive")
    if args.skills is not None and not args.skills.is_dir():
        parser.error(f"--skills {args.skills}: not a folder")
    # uvicorn re-raises the SIGTERM it stopped on once it is done: this handler then unwinds
    # the `with` below, which removes the sample folder.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    with contextlib.ExitStack() as stack:
        folder = args.skills
        if folder is None:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="skills-server-")))
            write_sample(folder)
        server = build(folder, args.page_size, args.log_reads)
        if args.transport == "stdio":
            server.run("stdio")
        else:
            server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
