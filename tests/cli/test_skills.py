"""``mcp-actors skills``: the skills of real skills servers (tests/servers/skills_server.py over
stdio, each with a folder of the test's own) listed by origin, one skill's ``SKILL.md`` and one
of its files printed verified, and a server that lies about a skill's content
(tests/cli/lying_skills_server.py): none of it printed, the fault named, exit status 1.
"""

from __future__ import annotations

import io
import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from actors.cli import main
from tests.cli.lying_skills_server import INJECTED
from tests.harness import forkserver
from tests.runtime.conftest import ROOT, stdio_server
from tests.servers.skills_server import SAMPLE, write_sample

MODERN = "2026-07-28"
PDF_MD = SAMPLE["pdf-processing/SKILL.md"]
REFUNDS_MD = SAMPLE["acme/billing/refunds/SKILL.md"]
LOGO = bytes(range(256))


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    status = main(list(argv), out=out)
    return status, out.getvalue()


def skills_folder(folder: Path) -> Path:
    """The sample set and a binary file in ``pdf-processing``."""
    write_sample(folder)
    (folder / "pdf-processing" / "assets").mkdir()
    (folder / "pdf-processing" / "assets" / "logo.bin").write_bytes(LOGO)
    return folder


def skills_server(folder: Path) -> dict[str, Any]:
    return stdio_server("skills_server", "--skills", str(folder), protocol=MODERN)


def lying_server(folder: Path) -> dict[str, Any]:
    command, *args = forkserver.python_module("tests.cli.lying_skills_server", str(folder))
    return {"command": command, "args": args, "cwd": str(ROOT), "protocol": MODERN}


def write_config(folder: Path, servers: dict[str, Any]) -> str:
    path = folder / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers, "builtin": {"enabled": False}}))
    return str(path)


def rows(out: str) -> list[list[str]]:
    """The cells of a table's rows (under its header and rule), split on runs of two spaces."""
    return [[cell.strip() for cell in line.split("  ") if cell.strip()] for line in out.splitlines()[2:]]


@pytest.fixture
def two(tmp_path: Path) -> str:
    """``a`` and ``b``, each serving the sample set (both a ``pdf-processing``), and ``fx``, which
    serves no skills."""
    a, b = skills_folder(tmp_path / "a"), skills_folder(tmp_path / "b")
    return write_config(tmp_path, {"a": skills_server(a), "b": skills_server(b), "fx": stdio_server()})


# ---- the listing --------------------------------------------------------------------------------


def test_skills_lists_every_skill_by_its_origin(two: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, out = run("skills", "--config", two)
    assert status == 0, capsys.readouterr().err
    assert out.splitlines()[0].split() == ["skill", "name", "files", "description"]
    assert rows(out) == [
        [f"{ns}/{path}", name, files, description]
        for ns in ("a", "b")
        for path, name, files, description in (
            ("acme/billing/refunds", "refunds", "2", "Process customer refund requests per company policy"),
            ("pdf-processing", "pdf-processing", "5", "Extract, fill, and assemble PDF documents"),
        )
    ]
    status, out = run("skills", "b", "--config", two, "--json")
    shown = json.loads(out)
    assert status == 0 and (shown["rejected"], shown["failures"]) == ([], [])
    assert [(s["origin"], s["label"], s["files"]) for s in shown["skills"]] == [
        ("b", "b/acme/billing/refunds", 2),
        ("b", "b/pdf-processing", 5),
    ]
    pdf = shown["skills"][1]
    assert pdf["uri"] == "skill://pdf-processing/SKILL.md" and pdf["frontmatter"]["metadata"] == {
        "version": "1.0"
    }
    assert {r["uri"] for r in pdf["resources"]} >= {"skill://pdf-processing/assets/logo.bin"}
    status, out = run("skills", "fx", "--config", two)  # a server without the extension
    assert (status, rows(out)) == (0, [])


def test_a_server_that_fails_and_an_entry_that_may_not_be_loaded_are_said_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = skills_folder(tmp_path / "s")
    huge = folder / "huge"
    (huge / "parts").mkdir(parents=True)
    (huge / "SKILL.md").write_text("---\nname: huge\ndescription: More files than a host must take\n---\n")
    for n in range(512):  # with its SKILL.md, 513 files: over the 512 every host must accept
        (huge / "parts" / f"{n}.md").write_text(f"{n}\n")
    config = write_config(
        tmp_path, {"s": skills_server(folder), "gone": {"command": "no-such-command-anywhere"}}
    )
    status, out = run("skills", "--config", config)
    err = capsys.readouterr().err
    assert status == 1
    assert [row[0] for row in rows(out)] == ["s/acme/billing/refunds", "s/pdf-processing"]  # still listed
    assert "error: server 'gone' did not list its skills: connection: " in err
    assert (
        "error: server 's' lists the skill skill://huge/SKILL.md that may not be loaded (too_large): " in err
    )
    status, out = run("skills", "s", "--config", config, "--json")
    assert status == 1
    assert [(r["server"], r["uri"], r["fault"]) for r in json.loads(out)["rejected"]] == [
        ("s", "skill://huge/SKILL.md", "too_large")
    ]
    assert run("skills", "load", "s", "huge", "--config", config) == (1, "")  # said why, not "no such"
    assert (
        "lists the skill skill://huge/SKILL.md that may not be loaded (too_large)" in capsys.readouterr().err
    )


def test_an_unknown_server_or_a_wrong_number_of_words_starts_nothing(
    two: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("skills", "nope", "--config", two) == (1, "")
    assert capsys.readouterr().err == "error: not_found: no server for namespace 'nope' (known: a, b, fx)\n"
    assert run("skills", "a", "b", "--config", two) == (2, "")
    assert "usage: mcp-actors skills [NS], not 'skills a b'" in capsys.readouterr().err
    assert run("skills", "load", "a", "--config", two) == (2, "")
    assert "usage: mcp-actors skills load NS SKILL" in capsys.readouterr().err
    assert run("skills", "read", "a", "pdf-processing", "--config", two) == (2, "")


# ---- load and read ------------------------------------------------------------------------------


def test_skills_load_prints_the_verified_skill_md_under_a_line_naming_its_origin(two: str) -> None:
    header = "# skill pdf-processing from b (MCP server, untrusted): skill://pdf-processing/SKILL.md\n"
    for named in ("pdf-processing", "skill://pdf-processing/SKILL.md", "b/pdf-processing"):
        assert run("skills", "load", "b", named, "--config", two) == (0, header + PDF_MD), named
    status, out = run("skills", "load", "a", "acme/billing/refunds", "--config", two)
    assert (status, out.splitlines()[0]) == (
        0,
        "# skill refunds from a (MCP server, untrusted): skill://acme/billing/refunds/SKILL.md",
    )
    assert out.partition("\n")[2] == REFUNDS_MD
    status, out = run("skills", "load", "a", "refunds", "--config", two, "--json")
    result = json.loads(out)
    assert status == 0 and result["success"] and result["output"]["text"] == REFUNDS_MD


def test_a_name_two_skills_share_is_refused_and_each_is_named_by_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = skills_folder(tmp_path / "s")
    support = folder / "acme" / "support" / "refunds"
    support.mkdir(parents=True)
    (support / "SKILL.md").write_text(
        "---\nname: refunds\ndescription: Refunds, as support answers them\n---\n"
    )
    config = write_config(tmp_path, {"s": skills_server(folder)})
    assert run("skills", "load", "s", "refunds", "--config", config) == (1, "")
    assert capsys.readouterr().err == (
        "error: validation: 'refunds' names 2 skills of 's': s/acme/billing/refunds, s/acme/support/refunds;"
        " name one by its path\n"
    )
    status, out = run("skills", "load", "s", "acme/support/refunds", "--config", config)
    assert status == 0 and "Refunds, as support answers them" in out
    assert run("skills", "load", "s", "no-such-skill", "--config", config) == (1, "")
    assert "error: not_found: server 's' lists no skill 'no-such-skill'" in capsys.readouterr().err


def test_skills_read_prints_one_verified_file_and_nothing_outside_the_skill(
    two: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    forms = SAMPLE["pdf-processing/references/FORMS.md"]
    assert run("skills", "read", "a", "pdf-processing", "references/FORMS.md", "--config", two) == (0, forms)
    assert run(
        "skills", "read", "a", "pdf-processing", "templates/../references/FORMS.md", "--config", two
    ) == (
        0,
        forms,
    )
    logo = "[resource skill://pdf-processing/assets/logo.bin, 256 B]"
    assert run("skills", "read", "a", "pdf-processing", "assets/logo.bin", "--config", two) == (
        0,
        logo + "\n",
    )
    saved = tmp_path / "saved"
    status, out = run(
        "skills", "read", "a", "pdf-processing", "assets/logo.bin", "--config", two, "--save", str(saved)
    )
    assert status == 0 and out.startswith(logo + " saved to ")
    assert (saved / "logo.bin").read_bytes() == LOGO
    for outside in ("../acme/billing/refunds/SKILL.md", "skill://acme/billing/refunds/SKILL.md"):
        assert run("skills", "read", "a", "pdf-processing", outside, "--config", two) == (1, "")
        assert "(skill fault: unlisted: nothing of it is printed)" in capsys.readouterr().err
    assert run("skills", "read", "fx", "skill://pdf-processing/SKILL.md", "x", "--config", two) == (1, "")
    assert capsys.readouterr().err.startswith("error: server_error: the server does not serve skills")


def test_a_skill_that_fails_verification_exits_1_naming_its_fault_and_prints_none_of_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, {"liar": lying_server(skills_folder(tmp_path / "s"))})
    status, out = run("skills", "--config", config)
    assert status == 0 and [row[0] for row in rows(out)] == [
        "liar/acme/billing/refunds",
        "liar/pdf-processing",
    ]
    assert run("skills", "load", "liar", "pdf-processing", "--config", config) == (1, "")
    err = capsys.readouterr().err
    assert err.startswith("error: validation: skills/load skill://pdf-processing/SKILL.md: ")
    assert err.endswith("(skill fault: size: nothing of it is printed)\n")
    assert "INJECTED" not in err
    status, out = run("skills", "load", "liar", "pdf-processing", "--config", config, "--json")
    result = json.loads(out)
    assert status == 1 and result["metadata"]["skill_fault"] == "size" and result["output"] is None
    assert "INJECTED" not in out
    assert run("skills", "read", "liar", "pdf-processing", "references/FORMS.md", "--config", config) == (
        1,
        "",
    )
    assert "(skill fault: size: nothing of it is printed)" in capsys.readouterr().err
    # The skill it does not lie about loads.
    status, out = run("skills", "load", "liar", "refunds", "--config", config)
    assert status == 0 and out.endswith(REFUNDS_MD) and INJECTED not in out


def test_a_server_named_by_its_command_needs_no_namespace(tmp_path: Path) -> None:
    folder = skills_folder(tmp_path / "s")
    command = shlex.join(forkserver.python_module("tests.servers.skills_server", "--skills", str(folder)))
    status, out = run("skills", "--command", command, "--name", "sk")
    assert status == 0 and [row[0] for row in rows(out)] == ["sk/acme/billing/refunds", "sk/pdf-processing"]
    status, out = run("skills", "load", "pdf-processing", "--command", command, "--name", "sk")
    assert status == 0 and out.endswith(PDF_MD)
    status, out = run(
        "skills", "read", "pdf-processing", "templates/invoice.md", "--command", command, "--name", "sk"
    )
    assert (status, out) == (0, SAMPLE["pdf-processing/templates/invoice.md"])
