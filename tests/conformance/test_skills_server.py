"""tests/servers/skills_server.py serves the Skills extension (``io.modelcontextprotocol/skills``,
SEP-2640) as the conformance suite judges it, and as an SDK client sees it.

The suite's ``sep-2640-skills-*`` server scenarios are extension scenarios: no requirement set
has them and the suite reports them without scoring, so the tests read every check themselves.
Run at 2026-07-28 (the suite's default for an extension scenario) against the server over
streamable HTTP, every check is ``SUCCESS`` (a ``WARNING`` or a ``SKIPPED`` fails), with the
default page size and with one entry a page (``nextCursor`` followed by the suite).

At 2025-11-25 (``--spec-version 2025-11-25 --force``) every check but ``wire-schema-valid`` is
``SKIPPED``: the handshake era's ``ServerCapabilities`` has no ``extensions`` field, and the SDK
drops it from the ``initialize`` result, so no handshake-era client learns of the extension. The
server still answers its methods there (the direct tests below run in both eras). Should the SDK
start declaring it, that test fails: make it want ``SUCCESS`` then.

The direct tests talk to the server with `mcp.Client` (``skills/*`` and
``resources/directory/read`` sent as request models through ``ClientSession.send_request``),
over streamable HTTP with one entry a page, in both eras, and once over stdio.
"""

from __future__ import annotations

import base64
import hashlib
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Literal

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp_types import INVALID_PARAMS, BlobResourceContents, PaginatedRequestParams, Request
from pydantic import ConfigDict

from tests.conformance import requirements
from tests.conformance.requirements import Scenario, node22, run_server_scenarios, suite_version
from tests.harness import forkserver
from tests.servers.http_server import REPO_ROOT, HTTPServer
from tests.servers.skills_server import (
    DirectoryReadParams,
    DirectoryReadResult,
    GetSkillParams,
    GetSkillResult,
    ListSkillsResult,
    Skill,
    write_sample,
)

MODULE = "tests.servers.skills_server"
SCENARIOS = ("sep-2640-skills-enumeration", "sep-2640-skills-manifest", "sep-2640-skills-directory")
SCENARIO_TIMEOUT = 90.0
WAIT = 30.0
ERAS = {"legacy": "2025-11-25", "auto": "2026-07-28"}
"""`Client` ``mode`` → the protocol version it should end up speaking with the server."""

pytestmark = pytest.mark.timeout(2 * len(SCENARIOS) * SCENARIO_TIMEOUT + 60)


# --- the conformance suite ----------------------------------------------------------------------


def statuses(scenarios: dict[str, Scenario]) -> dict[str, dict[str, int]]:
    """Per scenario, how many of its checks ended in each status."""
    return {
        name: dict(Counter(str(check.get("status")) for check in s.checks)) for name, s in scenarios.items()
    }


def not_succeeded(scenarios: dict[str, Scenario]) -> list[str]:
    return [
        f"{name}/{check.get('id')}: {check.get('status')} {str(check.get('errorMessage') or '')[:300]}"
        for name, scenario in scenarios.items()
        for check in scenario.checks
        if check.get("status") != "SUCCESS"
    ]


@pytest.mark.parametrize("page_size", [None, 1], ids=["one-page", "page-size-1"])
def test_every_check_of_every_skills_scenario_succeeds(tmp_path: Path, page_size: int | None) -> None:
    node = node22()
    options = () if page_size is None else ("--page-size", str(page_size))
    with HTTPServer(module=MODULE, extra_args=options) as server:
        scenarios, output = run_server_scenarios(
            node, server.url, SCENARIOS, tmp_path / "results", SCENARIO_TIMEOUT
        )
    where = f"conformance {suite_version()}, 2026-07-28, {MODULE} {' '.join(options)}"
    missing = [name for name in SCENARIOS if name not in scenarios or not scenarios[name].checks]
    assert not missing, f"{where}: no checks from {missing}\n{output}"
    print(f"{where}: {statuses(scenarios)}")
    failing = "\n".join(not_succeeded(scenarios))
    assert not failing, f"{where}: checks not SUCCESS:\n{failing}\n{output[-2000:]}"


def test_the_handshake_era_is_not_told_of_the_extension(tmp_path: Path) -> None:
    node = node22()
    with HTTPServer(module=MODULE) as server:
        runs = [
            ["server", "--url", server.url, "--scenario", name, "--spec-version", "2025-11-25", "--force"]
            for name in SCENARIOS
        ]
        scenarios, output = requirements._run_each(node, runs, tmp_path / "results", SCENARIO_TIMEOUT)
    where = f"conformance {suite_version()}, 2025-11-25, {MODULE}"
    assert set(scenarios) == set(SCENARIOS), f"{where}: ran {sorted(scenarios)}\n{output}"
    print(f"{where}: {statuses(scenarios)}")
    for name, scenario in scenarios.items():
        for check in scenario.checks:
            status, message = check.get("status"), str(check.get("errorMessage"))
            if check.get("id") == "wire-schema-valid":
                assert status == "SUCCESS", f"{where}: {name}: {check}"
            else:
                assert status == "SKIPPED", f"{where}: {name}/{check.get('id')}: {status} {message}"
                assert "did not declare the io.modelcontextprotocol/skills extension" in message, message


# --- an SDK client, directly -----------------------------------------------------------------


class ListSkills(Request[PaginatedRequestParams, Literal["skills/list"]]):
    method: Literal["skills/list"] = "skills/list"


class GetSkill(Request[GetSkillParams, Literal["skills/get"]]):
    method: Literal["skills/get"] = "skills/get"


class ReadDirectory(Request[DirectoryReadParams, Literal["resources/directory/read"]]):
    method: Literal["resources/directory/read"] = "resources/directory/read"


class WireGetSkill(GetSkillResult):
    """A ``skills/get`` result that keeps the keys it does not know (in ``model_extra``)."""

    model_config = ConfigDict(extra="allow")


SERVED = {
    "skill://acme/billing/refunds/SKILL.md",
    "skill://pdf-processing/SKILL.md",
    "skill://pdf-processing/skills/ocr/SKILL.md",
}
"""The skills `skills_folder` holds that the server serves."""


def skills_folder(folder: Path) -> Path:
    """The sample set, a file that is not UTF-8, a skill nested in another and one misnamed."""
    write_sample(folder)
    (folder / "pdf-processing" / "assets").mkdir()
    (folder / "pdf-processing" / "assets" / "logo.bin").write_bytes(bytes(range(256)))
    nested = folder / "pdf-processing" / "skills" / "ocr"
    nested.mkdir(parents=True)
    (nested / "SKILL.md").write_text("---\nname: ocr\ndescription: Read scanned pages\n---\n\nOCR.\n")
    (folder / "misnamed").mkdir()
    (folder / "misnamed" / "SKILL.md").write_text("---\nname: other\ndescription: Not its folder\n---\n")
    return folder


def uri_of(folder: Path, path: Path) -> str:
    return "skill://" + path.relative_to(folder).as_posix()


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@pytest.fixture(params=list(ERAS))
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A skills folder and the URL of the server serving it, one entry a page."""
    folder = skills_folder(tmp_path / "skills")
    with HTTPServer(module=MODULE, extra_args=("--skills", str(folder), "--page-size", "1")) as server:
        yield folder, server.url


def talk(url: str, mode: str, check: Callable[[Client], Awaitable[None]]) -> None:
    """Run ``check`` on a client of ``url`` connected in ``mode``, without a response cache."""

    async def main() -> None:
        with anyio.fail_after(WAIT):
            async with Client(url, mode=mode, cache=None) as client:
                assert client.protocol_version == ERAS[mode]
                await check(client)

    anyio.run(main)


async def list_pages(client: Client) -> list[ListSkillsResult]:
    """Every page of ``skills/list``, following ``nextCursor``."""
    pages = [await client.session.send_request(ListSkills(params=PaginatedRequestParams()), ListSkillsResult)]
    while (cursor := pages[-1].next_cursor) is not None:
        assert len(pages) <= 2 * len(SERVED), "skills/list does not end"
        request = ListSkills(params=PaginatedRequestParams(cursor=cursor))
        pages.append(await client.session.send_request(request, ListSkillsResult))
    return pages


async def list_all(client: Client) -> dict[str, Skill]:
    return {skill.uri: skill for page in await list_pages(client) for skill in page.skills}


async def get_skill(client: Client, uri: str) -> GetSkillResult:
    return await client.session.send_request(GetSkill(params=GetSkillParams(uri=uri)), GetSkillResult)


async def read_directory(client: Client, uri: str) -> list[tuple[str, str | None]]:
    """``(uri, mimeType)`` of the folder's children, every page."""
    children: list[tuple[str, str | None]] = []
    cursor: str | None = None
    while True:
        request = ReadDirectory(params=DirectoryReadParams(uri=uri, cursor=cursor))
        page = await client.session.send_request(request, DirectoryReadResult)
        assert len(page.resources) <= 1  # --page-size 1
        children += [(child.uri, child.mime_type) for child in page.resources]
        if (cursor := page.next_cursor) is None:
            return children


async def read_bytes(client: Client, uri: str) -> bytes:
    (contents,) = (await client.read_resource(uri)).contents
    if isinstance(contents, BlobResourceContents):
        return base64.b64decode(contents.blob)
    return contents.text.encode()


def test_every_digest_is_that_of_the_file_on_disk(served: tuple[Path, str], mode: str) -> None:
    folder, url = served

    async def check(client: Client) -> None:
        skills = await list_all(client)
        assert set(skills) == SERVED
        for uri, skill in skills.items():
            root = folder / uri.removeprefix("skill://").removesuffix("/SKILL.md")
            on_disk = {uri_of(folder, path): path for path in root.rglob("*") if path.is_file()}
            assert [r.uri for r in skill.resources] == sorted(on_disk), uri  # complete, once each
            for resource in skill.resources:
                data = on_disk[resource.uri].read_bytes()
                assert (resource.digest, resource.size) == (digest(data), len(data)), resource.uri
                assert await read_bytes(client, resource.uri) == data, resource.uri
        pdf = {r.uri for r in skills["skill://pdf-processing/SKILL.md"].resources}
        assert {"skill://pdf-processing/assets/logo.bin", "skill://pdf-processing/skills/ocr/SKILL.md"} <= pdf
        assert skills["skill://pdf-processing/SKILL.md"].frontmatter == {
            "name": "pdf-processing",
            "description": "Extract, fill, and assemble PDF documents",
            "metadata": {"version": "1.0"},
        }

    talk(url, mode, check)


def test_an_edit_on_disk_shows_in_the_next_listing(served: tuple[Path, str], mode: str) -> None:
    folder, url = served
    invoice = folder / "pdf-processing" / "templates" / "invoice.md"
    added = folder / "pdf-processing" / "templates" / "credit-note.md"
    skill_uri = "skill://pdf-processing/SKILL.md"

    async def check(client: Client) -> None:
        before = {r.uri: r.digest for r in (await list_all(client))[skill_uri].resources}
        invoice.write_bytes(invoice.read_bytes() + b"Due: {due}\n")
        added.write_text("# Credit note\n")
        after = {r.uri: r.digest for r in (await list_all(client))[skill_uri].resources}
        changed = uri_of(folder, invoice)
        assert after[changed] == digest(invoice.read_bytes()) != before[changed]
        assert after.pop(uri_of(folder, added)) == digest(added.read_bytes())
        assert {uri: d for uri, d in after.items() if uri != changed} == {
            uri: d for uri, d in before.items() if uri != changed
        }
        fetched = (await get_skill(client, skill_uri)).skill
        assert {r.uri: r.digest for r in fetched.resources}[changed] == after[changed]

    talk(url, mode, check)


def test_skills_get_of_what_is_not_a_served_skill_is_invalid_params(
    served: tuple[Path, str], mode: str
) -> None:
    _, url = served

    async def check(client: Client) -> None:
        listed = await list_all(client)
        for uri in sorted(SERVED):
            result = await client.session.send_request(GetSkill(params=GetSkillParams(uri=uri)), WireGetSkill)
            assert result.skill == listed[uri]
            cache = (result.ttl_ms, result.cache_scope)
            assert cache == ((0, "public") if mode == "auto" else (None, None)), result
            assert "nextCursor" not in (result.model_extra or {})
        for uri in (
            "skill://no-such-skill/SKILL.md",
            "skill://misnamed/SKILL.md",  # on disk, but its name is not its folder's
            "skill://pdf-processing/references/FORMS.md",  # a file of a skill, not one
            "skill://pdf-processing",
        ):
            with pytest.raises(MCPError) as refused:
                await get_skill(client, uri)
            assert refused.value.code == INVALID_PARAMS, uri

    talk(url, mode, check)


def test_a_directory_read_of_what_is_not_a_directory_is_invalid_params(
    served: tuple[Path, str], mode: str
) -> None:
    _, url = served

    async def check(client: Client) -> None:
        assert await read_directory(client, "skill://pdf-processing/templates") == [
            ("skill://pdf-processing/templates/invoice.md", "text/markdown"),
            ("skill://pdf-processing/templates/regional", "inode/directory"),
        ]
        assert await read_directory(client, "skill://acme") == [("skill://acme/billing", "inode/directory")]
        for uri in (
            "skill://pdf-processing/SKILL.md",
            "skill://pdf-processing/templates/invoice.md",
            "skill://pdf-processing/no-such-folder",
            "skill://pdf-processing/templates/",  # directory URIs have no trailing slash
            "skill://misnamed",  # not served
        ):
            with pytest.raises(MCPError) as refused:
                await read_directory(client, uri)
            assert refused.value.code == INVALID_PARAMS, uri
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("skill://pdf-processing/no-such-file.md")
        assert unknown.value.code == INVALID_PARAMS

    talk(url, mode, check)


def test_paging_the_listing_by_one_returns_every_skill_once(served: tuple[Path, str], mode: str) -> None:
    _, url = served

    async def check(client: Client) -> None:
        pages = await list_pages(client)
        assert [len(page.skills) for page in pages] == [1] * len(SERVED)
        uris = [skill.uri for page in pages for skill in page.skills]
        assert sorted(uris) == sorted(SERVED)  # each exactly once
        with pytest.raises(MCPError) as bad_cursor:
            await client.session.send_request(
                ListSkills(params=PaginatedRequestParams(cursor="not a cursor!")), ListSkillsResult
            )
        assert bad_cursor.value.code == INVALID_PARAMS

    talk(url, mode, check)


def test_the_sample_set_is_served_over_stdio(mode: str) -> None:
    command, *args = forkserver.python_module(MODULE, "--transport", "stdio")
    server = StdioServerParameters(command=command, args=args, cwd=str(REPO_ROOT))

    async def main() -> None:
        with anyio.fail_after(WAIT):
            async with Client(server, mode=mode, cache=None) as client:
                assert client.protocol_version == ERAS[mode]
                skills = await list_all(client)
                listing = await client.list_resources()
        assert set(skills) == {"skill://acme/billing/refunds/SKILL.md", "skill://pdf-processing/SKILL.md"}
        assert {r.uri for r in listing.resources} == {
            r.uri for skill in skills.values() for r in skill.resources
        }

    anyio.run(main)
