"""BENCHMARKS.md's headline table stays true to the sections it summarizes.

Each row of "Headline figures" names a section of the page (the start of a heading); every number
in its figure column must appear in that section, so a benchmark re-run that changes a figure
without its row here fails this test, saying which row to update. The table sits above the part
``python -m bench`` regenerates, which must leave it in place.
"""

from __future__ import annotations

import re
from pathlib import Path

from bench import _report

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "BENCHMARKS.md"
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
MAX_LINES = 500


def headline_rows(text: str) -> list[tuple[str, str, str]]:
    """The (what, figure, section) rows of the "Headline figures" table."""
    block = text.split("## Headline figures", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip().strip("|").split("|") for line in block.splitlines() if line.startswith("|")]
    return [tuple(cell.strip() for cell in row) for row in rows[2:]]  # after the header and the rule


def contents_rows(text: str) -> list[str]:
    """The section titles the "Contents" table lists, in its order."""
    block = text.split("## Contents", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip().strip("|").split("|") for line in block.splitlines() if line.startswith("|")]
    return [row[0].strip() for row in rows[2:]]


def section(text: str, title: str) -> str:
    """The text of the first heading starting with ``title``, up to the next heading of its level or above."""
    match = re.search(rf"^(#+) {re.escape(title)}.*$", text, re.M)
    assert match, f"no heading starts with {title!r}"
    level = len(match.group(1))
    after = text[match.end():]
    end = re.search(rf"^#{{1,{level}}} ", after, re.M)
    return after[:end.start()] if end else after


def test_every_headline_figure_is_in_its_section():
    text = PAGE.read_text(encoding="utf-8")
    rows = headline_rows(text)
    assert len(rows) >= 10
    stale = []
    for what, figure, title in rows:
        body = section(text, title)
        found = set(NUMBER.findall(body))
        numbers = NUMBER.findall(figure)
        assert numbers, f"the row {what!r} has no figure"
        missing = [n for n in numbers if n not in found]
        if missing:
            stale.append(f"{what}: {missing} not in section {title!r}")
    assert not stale, "BENCHMARKS.md's headline rows to update:\n" + "\n".join(stale)


def test_the_page_is_a_reference_with_its_contents_first():
    """At most 500 lines (issue 41): one section per benchmark, each listed in the contents at the
    top, in the order the page has them, and each listed section is there once."""
    text = PAGE.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_LINES
    listed = contents_rows(text)
    assert len(listed) >= 15
    headings = [h for h in re.findall(r"^## (.+)$", text, re.M)
                if h.split(" (")[0] not in ("Contents", "Headline figures", "How the tables were made")]
    assert [next(h for h in headings if h.startswith(title)) for title in listed] == \
        [h for h in headings if any(h.startswith(title) for title in listed)]
    for title in listed:
        assert sum(h.startswith(title) for h in headings) == 1, f"{title!r} is not one section"
    assert all(any(h.startswith(title) for title in listed) for h in headings), "a section missing from the contents"


def test_the_table_catches_a_stale_figure():
    text = PAGE.read_text(encoding="utf-8")
    what, figure, title = headline_rows(text)[0]
    body = section(text, title)
    assert not set(NUMBER.findall("999.123")) & set(NUMBER.findall(body))


def test_regenerating_the_tables_keeps_the_headline_table(tmp_path):
    """``python -m bench`` rewrites only its part of the page (between its markers)."""
    page = tmp_path / "BENCHMARKS.md"
    page.write_text(PAGE.read_text(encoding="utf-8"), encoding="utf-8")
    _report.write(page, "## How the tables were made\n\nregenerated\n")
    new = page.read_text(encoding="utf-8")
    assert new.index("## Headline figures") < new.index(_report.START) < new.index("regenerated")
    assert "## Retrieval quality on LoCoMo" in new  # what follows the generated part stays too
    assert new.count("## Headline figures") == 1
