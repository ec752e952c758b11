"""The operator's flows in a real browser: open a memory from Browse, a conflict and a recall; a
filtered view that survives a reload and a copied link; a bulk forget undone from the Activity
page; a logged recall opened in Tune ranks as it was logged.

Runs `streamlit run app.py` on its own small bank and drives Debian's chromium with Playwright,
as tests/test_browser.py does (whose fixtures and helpers it uses).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest

from memory_core import MemoryBank, ScoringParams
from test_browser import CHROMIUM_ARGS, XSS_TEXT, Tab, _fill, _main, _serve, _tab, browser  # noqa: F401  (fixture)

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the test extra is installed in the venv
    expect = None

WIDE = "wide"  # a preset whose threshold lets the logged recall return something
QUERY = "does she drink tea or coffee in the morning"
ROW = 35  # px: the height of a row (and of the header) in Streamlit's data grid


@pytest.fixture(scope="module")
def console_bank(tmp_path_factory, embedder):
    path = tmp_path_factory.mktemp("console") / "console.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        ids = _fill(bank)
        bank.save_preset(WIDE, ScoringParams().replace(threshold=0.1, k=3))
        hits = bank.recall(QUERY, namespace="alice", params=WIDE)
        bank.flush()
        ids["recall"], ids["received"] = bank.last_retrieval_id, [h.memory.id for h in hits]
        ids["bob"] = [m.id for m in bank.memories("bob")]
    assert ids["received"], "the logged recall must return something"
    return path, ids, embedder


@pytest.fixture(scope="module")
def console(console_bank):
    yield from _serve(console_bank[0])


@pytest.fixture
def tab(browser, console):  # noqa: F811  (browser is the imported fixture)
    yield from _tab(browser, console)


def _open(tab: Tab, path: str) -> None:
    tab.page.goto(tab.base_url + path)
    expect(tab.page.locator('[data-testid="stSidebarNav"]')).to_be_visible(timeout=60_000)
    tab.settle()


def _cell(tab: Tab, row: int, x: float) -> tuple[float, float]:
    """The point ``x`` px into row ``row`` (0: the first data row) of the page's first data grid."""
    box = _main(tab).locator('[data-testid="stDataFrame"]').first.bounding_box()
    return box["x"] + x, box["y"] + ROW + ROW * row + ROW / 2


def _follow(tab: Tab, click) -> Tab:
    """Run ``click`` (which opens a link in a new tab, as Streamlit's links do) and return that tab, settled."""
    with tab.page.context.expect_page() as opened:
        click()
    new = Tab(opened.value, tab.base_url)
    new.page.wait_for_load_state()
    new.settle()
    return new


def test_open_a_memory_from_browse(tab, console_bank):
    _, ids, _ = console_bank
    _open(tab, "/browse?ns=alice&text=pwned")
    expect(_main(tab).get_by_text("1 matching memories", exact=False)).to_be_visible()

    def click_id():
        x, y = _cell(tab, 0, 46)  # the id column, right of the selection boxes
        tab.page.mouse.move(x, y)
        tab.page.wait_for_timeout(300)
        tab.page.mouse.click(x, y)

    memory = _follow(tab, click_id)
    assert urlparse(memory.page.url).path == "/memory" and f"id={ids['xss']}" in memory.page.url
    expect(_main(memory).locator('[data-testid="stCode"]').first).to_contain_text("<script>window.__pwned=1</script>")
    memory.check_clean("memory-from-browse")
    memory.screenshot("memory-from-browse")


def test_open_a_memory_from_a_conflict(tab, console_bank):
    _, ids, _ = console_bank
    _open(tab, "/conflicts?ns=alice")
    link = _main(tab).get_by_role("link", name=f"memory {ids['older']}", exact=True)
    memory = _follow(tab, link.click)
    assert f"id={ids['older']}" in memory.page.url
    main = _main(memory)
    expect(main.get_by_text(f"Conflict {ids['conflict']} (open", exact=False)).to_be_visible()
    expect(main.locator('[data-testid="stCode"]').first).to_contain_text("Drinks tea every morning")
    memory.check_clean("memory-from-conflict")


def test_open_a_memory_from_a_recall(tab, console_bank):
    _, ids, _ = console_bank
    first = ids["received"][0]
    _open(tab, f"/recalls?ns=alice&id={ids['recall']}")
    expect(_main(tab).get_by_text(f"Recall {ids['recall']}", exact=False).first).to_be_visible()
    link = _main(tab).get_by_role("link", name=f"#{first}", exact=True).first
    memory = _follow(tab, link.click)
    assert f"id={first}" in memory.page.url
    expect(_main(memory).get_by_text(QUERY).first).to_be_attached()  # its recalls list the query
    memory.check_clean("memory-from-recall")


def test_a_filtered_view_survives_a_reload_and_a_copied_link(tab, browser):  # noqa: F811
    _open(tab, "/browse?ns=alice")
    page, main = tab.page, _main(tab)
    box = page.get_by_label("Text contains")
    box.fill("tea")
    tab.page.wait_for_timeout(800)  # the search applies after a typing pause, no Enter needed
    tab.settle()
    expect(main.get_by_text("2 matching memories", exact=False)).to_be_visible()
    main.locator(".st-key-category [data-testid='stSelectbox']").click()
    page.get_by_role("option", name=re.compile(r"^preference")).click()
    tab.settle()
    expect(main.get_by_text("2 matching memories", exact=False)).to_be_visible()
    query = parse_qs(urlparse(page.url).query)
    assert query.get("text") == ["tea"] and query.get("category") == ["preference"] and query.get("ns") == ["alice"]
    url = page.url
    page.reload()
    tab.settle()
    expect(main.get_by_text("2 matching memories", exact=False)).to_be_visible()
    expect(page.get_by_label("Text contains")).to_have_value("tea")
    # The copied link in a fresh browser context (another operator): the same view.
    other = next(_tab(browser, tab.base_url))
    other.page.goto(url)
    other.settle()
    expect(_main(other).get_by_text("2 matching memories", exact=False)).to_be_visible()
    expect(other.page.get_by_label("Text contains")).to_have_value("tea")
    other.check_clean("browse-from-link")
    other.page.context.close()


def test_a_bulk_forget_then_its_undo_from_the_activity_log(tab, console_bank):
    path, ids, embedder = console_bank
    _open(tab, "/browse?ns=bob")
    main = _main(tab)
    expect(main.get_by_text("2 matching memories", exact=False)).to_be_visible()
    for row in (0, 1):  # tick both selection boxes
        tab.page.mouse.click(*_cell(tab, row, 16))
        tab.settle()
    main.get_by_role("button", name="Forget 2", exact=True).click()
    tab.settle()
    expect(main.get_by_text("Archived 2 memories", exact=False)).to_be_visible()
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert {bank.get(i).status for i in ids["bob"]} == {"archived"}

    _open(tab, "/activity?ns=bob")
    main = _main(tab)
    button = main.get_by_role("button", name=re.compile(r"^Undo operation \d+$"))
    expect(button).to_be_visible()
    expect(main.get_by_role("combobox", name="Operation")).to_have_value(re.compile("forget by dashboard"))
    button.click()
    tab.settle()
    expect(main.get_by_text("Undid operation", exact=False)).to_be_visible()
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert {bank.get(i).status for i in ids["bob"]} == {"active"}
    tab.check_clean("activity-undo")
    tab.screenshot("activity-undo")


def test_open_in_tune_reproduces_the_logged_ranking(tab, console_bank):
    _, ids, _ = console_bank
    _open(tab, f"/recalls?ns=alice&id={ids['recall']}")
    _main(tab).get_by_role("link", name=re.compile("Open in Tune")).click()
    tab.settle()
    page, main = tab.page, _main(tab)
    assert urlparse(page.url).path == "/tune"
    expect(page.get_by_label("Query", exact=True)).to_have_value(QUERY)
    expect(main.locator("h3").filter(has_text="candidates in")).to_be_visible()
    shown = [t for t in main.locator('[data-testid="stText"]').all_inner_texts() if t.startswith("✅ in")]
    ranked = [int(re.search(r"#(\d+)", t).group(1)) for t in shown]
    assert ranked == ids["received"], (ranked, ids["received"])
    tab.check_clean("tune-from-recall")
    tab.screenshot("tune-from-recall")
