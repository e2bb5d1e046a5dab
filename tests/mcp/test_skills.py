"""The host's side of skills (SEP-2640) as pure functions: an entry checked before a skill may be
loaded, and every file read checked against the entry held (its size, its digest, its place in
the manifest, the SKILL.md's frontmatter). Tables: each row a rule, each rule a way to break it."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from actors.mcp.skills import (
    DYNAMIC,
    MAX_FILES,
    MAX_TOTAL_BYTES,
    Skill,
    SkillFault,
    SkillRejected,
    checked_manifest,
    content_bytes,
    digest_of,
    frontmatter_of,
    offers_skills,
    verified,
)

MANIFEST = (
    b"---\nname: pdf-processing\ndescription: Extract PDF text\nmetadata:\n  version: '1.0'\n---\n\n# PDF\n"
)
FORMS = b"# Forms\n"
URI = "skill://pdf-processing/SKILL.md"
FORMS_URI = "skill://pdf-processing/references/FORMS.md"


def entry(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "uri": URI,
        "frontmatter": {
            "name": "pdf-processing",
            "description": "Extract PDF text",
            "metadata": {"version": "1.0"},
        },
        "resources": [
            {"uri": URI, "digest": digest_of(MANIFEST), "size": len(MANIFEST)},
            {"uri": FORMS_URI, "digest": digest_of(FORMS), "size": len(FORMS)},
        ],
    }
    return {**base, **changes}


def files(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"uri": URI, "digest": digest_of(MANIFEST), "size": len(MANIFEST)}, *extra]


def test_an_entry_is_read_whole() -> None:
    skill = Skill.from_json(entry())
    assert (skill.name, skill.root, skill.dynamic) == ("pdf-processing", "skill://pdf-processing", False)
    assert skill.to_json() == entry()
    assert skill.resolve("references/FORMS.md") == FORMS_URI
    assert skill.resolve("../../etc/passwd") == "skill://pdf-processing/etc/passwd"  # never above its root
    assert Skill.from_json(entry(resources=DYNAMIC)).dynamic


BAD_ENTRIES = [
    ("not an object", ["x"], SkillFault.INVALID_ENTRY),
    ("uri not a SKILL.md", entry(uri="skill://pdf-processing/README.md"), SkillFault.INVALID_ENTRY),
    ("no frontmatter", entry(frontmatter=None), SkillFault.INVALID_ENTRY),
    ("no description", entry(frontmatter={"name": "pdf-processing"}), SkillFault.INVALID_ENTRY),
    (
        "name not the last segment",
        entry(frontmatter={"name": "other", "description": "d"}),
        SkillFault.INVALID_ENTRY,
    ),
    (
        "name breaks the naming rules",
        entry(uri="skill://Bad--Name/SKILL.md", frontmatter={"name": "Bad--Name", "description": "d"}),
        SkillFault.INVALID_ENTRY,
    ),
    ("no resources", {k: v for k, v in entry().items() if k != "resources"}, SkillFault.INVALID_ENTRY),
    ("resources neither list nor dynamic", entry(resources="static"), SkillFault.INVALID_ENTRY),
    (
        "manifest misses SKILL.md",
        entry(resources=[{"uri": FORMS_URI, "digest": digest_of(FORMS), "size": 8}]),
        SkillFault.INVALID_ENTRY,
    ),
    ("a file twice", entry(resources=files(files()[0])), SkillFault.INVALID_ENTRY),
    (
        "a file outside the skill",
        entry(resources=files({"uri": "skill://other/x.md", "digest": digest_of(b""), "size": 0})),
        SkillFault.INVALID_ENTRY,
    ),
    (
        "a file climbing out",
        entry(resources=files({"uri": "skill://pdf-processing/../x", "digest": digest_of(b""), "size": 0})),
        SkillFault.INVALID_ENTRY,
    ),
    (
        "a digest in upper case",
        entry(resources=[{"uri": URI, "digest": digest_of(MANIFEST).upper(), "size": 1}]),
        SkillFault.INVALID_ENTRY,
    ),
    (
        "a size that is not a count",
        entry(resources=[{"uri": URI, "digest": digest_of(MANIFEST), "size": True}]),
        SkillFault.INVALID_ENTRY,
    ),
    (
        "too many files",
        entry(
            resources=files(
                *(
                    {"uri": f"skill://pdf-processing/{n}", "digest": digest_of(b""), "size": 0}
                    for n in range(MAX_FILES)
                )
            )
        ),
        SkillFault.TOO_LARGE,
    ),
    (
        "too many bytes",
        entry(resources=files({"uri": FORMS_URI, "digest": digest_of(b""), "size": MAX_TOTAL_BYTES})),
        SkillFault.TOO_LARGE,
    ),
]


@pytest.mark.parametrize(("why", "bad", "fault"), BAD_ENTRIES, ids=[row[0] for row in BAD_ENTRIES])
def test_an_entry_a_host_may_not_load_is_rejected(why: str, bad: Any, fault: SkillFault) -> None:
    with pytest.raises(SkillRejected) as rejected:
        Skill.from_json(bad)
    assert rejected.value.fault is fault, why


def test_the_limits_themselves_are_accepted() -> None:
    extra = [
        {"uri": f"skill://pdf-processing/{n}", "digest": digest_of(b""), "size": 0}
        for n in range(MAX_FILES - 1)
    ]
    assert len(Skill.from_json(entry(resources=files(*extra))).files or ()) == MAX_FILES
    whole = files({"uri": FORMS_URI, "digest": digest_of(b""), "size": MAX_TOTAL_BYTES - len(MANIFEST)})
    assert Skill.from_json(entry(resources=whole)).total_bytes == MAX_TOTAL_BYTES


READS = [
    ("the bytes listed", URI, MANIFEST, None),
    ("one byte more", URI, MANIFEST + b"!", SkillFault.SIZE),
    ("same size, other bytes", URI, MANIFEST.replace(b"PDF", b"EVL"), SkillFault.DIGEST),
    ("a file not listed", "skill://pdf-processing/scripts/run.sh", b"", SkillFault.UNLISTED),
]


@pytest.mark.parametrize(("why", "uri", "data", "fault"), READS, ids=[row[0] for row in READS])
def test_a_file_is_used_only_as_the_entry_describes_it(
    why: str, uri: str, data: bytes, fault: SkillFault | None
) -> None:
    skill = Skill.from_json(entry())
    if fault is None:
        assert verified(skill, uri, data) == data
        return
    with pytest.raises(SkillRejected) as rejected:
        verified(skill, uri, data)
    assert rejected.value.fault is fault, why


def test_a_dynamic_skill_has_nothing_to_verify_but_its_size() -> None:
    skill = Skill.from_json(entry(resources=DYNAMIC))
    assert verified(skill, "skill://pdf-processing/any.md", b"x") == b"x"
    with pytest.raises(SkillRejected) as rejected:
        verified(skill, URI, b"x" * (MAX_TOTAL_BYTES + 1))
    assert rejected.value.fault is SkillFault.TOO_LARGE


FRONTMATTERS = [
    ("the entry's", MANIFEST, True),
    ("a field changed", MANIFEST.replace(b"Extract PDF text", b"Exfiltrate credentials"), False),
    ("a field added", MANIFEST.replace(b"---\n\n", b"allowed-tools: Bash\n---\n\n"), False),
    ("a field missing", MANIFEST.replace(b"metadata:\n  version: '1.0'\n", b""), False),
    ("a number where the entry has text", MANIFEST.replace(b"'1.0'", b"1.0"), False),
    ("no frontmatter", b"# PDF\n", False),
    ("an unclosed block", b"---\nname: pdf-processing\n", False),
    ("not YAML", b"---\nname: [\n---\n", False),
]


@pytest.mark.parametrize(("why", "data", "same"), FRONTMATTERS, ids=[row[0] for row in FRONTMATTERS])
def test_a_skill_md_loads_only_with_the_entrys_frontmatter(why: str, data: bytes, same: bool) -> None:
    skill = Skill.from_json(entry())
    if same:
        assert checked_manifest(skill, data) == data.decode()
        return
    with pytest.raises(SkillRejected) as rejected:
        checked_manifest(skill, data)
    assert rejected.value.fault is SkillFault.FRONTMATTER, why


def test_frontmatter_reads_as_json_sees_it() -> None:
    found = frontmatter_of("---\nname: a\ndescription: d\ncreated: 2026-01-02\n---\nbody")
    assert found == {"name": "a", "description": "d", "created": "2026-01-02"}  # a date stays text


def test_content_is_the_raw_bytes_of_the_uri_asked() -> None:
    blob = base64.b64encode(b"\x00\x01").decode()
    assert content_bytes([{"uri": URI, "text": "é"}], URI) == "é".encode()
    assert content_bytes([{"uri": URI, "blob": blob}], URI) == b"\x00\x01"
    with pytest.raises(SkillRejected):
        content_bytes([{"uri": "skill://other/SKILL.md", "text": "x"}], URI)


def test_only_a_declared_extension_offers_skills() -> None:
    assert offers_skills({"extensions": {"io.modelcontextprotocol/skills": {}}})
    assert not offers_skills({"extensions": {"io.modelcontextprotocol/skills": True}})
    assert not offers_skills({"resources": {}})
