"""The documentation's layout and links: written pages in docs/, generated files in docs/generated/,
and every relative link in README.md and docs/ points at a file that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks import report

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GENERATED = DOCS / "generated"
PAGES = sorted([ROOT / "README.md", *DOCS.rglob("*.md")])
# [text](target) and ![alt](target), outside code spans is good enough for these pages.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def relative_links(page: Path) -> list[str]:
    targets = LINK.findall(page.read_text(encoding="utf-8"))
    return [t for t in targets if not re.match(r"^(?:[a-z]+:|#)", t)]


def test_generated_files_live_apart_from_the_written_pages() -> None:
    assert (GENERATED / "robotlib.html").is_file(), "make docs writes docs/generated/robotlib.html"
    assert (GENERATED / "performance.png").is_file(), "make bench writes docs/generated/performance.png"
    loose = sorted(p.name for p in DOCS.iterdir() if p.is_file() and p.suffix != ".md")
    assert not loose, f"only written pages belong in docs/; generated files go to docs/generated/: {loose}"


def test_the_pages_link_to_the_generated_files() -> None:
    assert "generated/robotlib.html" in relative_links(DOCS / "robot.md")
    assert "generated/robotlib.html" in relative_links(DOCS / "index.md")
    assert "generated/performance.png" in relative_links(DOCS / "performance.md")


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_points_at_a_file(page: Path) -> None:
    broken = [t for t in relative_links(page) if not (page.parent / t.split("#", 1)[0]).exists()]
    assert not broken, f"{page.relative_to(ROOT)} links to missing files: {broken}"


def test_the_benchmark_report_writes_its_plot_where_the_page_links_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert report.PLOT == GENERATED / "performance.png"
    monkeypatch.setattr(report, "write_plot", lambda *_: True)  # matplotlib is the bench extra
    page = tmp_path / "performance.md"
    report.write({}, doc=page, plot=tmp_path / "performance.png")
    assert "![Benchmark results](generated/performance.png)" in page.read_text(encoding="utf-8")
