"""Curation pages in a real browser: Conflicts' bulk dismissal (of a selection and of everything the
filters show) and its Undo, and Merges' "(all)" namespaces view with each cluster's namespace,
confidence and signals.

Runs `streamlit run app.py` on its own small bank and drives Debian's chromium with Playwright,
as tests/test_browser.py does (whose fixtures and helpers it uses).
"""

from __future__ import annotations

import re

import pytest

from memory_core import MemoryBank
from test_browser import Tab, _main, _serve, _tab, browser  # noqa: F401  (fixture)

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the test extra is installed in the venv
    expect = None


@pytest.fixture(scope="module")
def curation_bank(tmp_path_factory, embedder):
    """alice: three open conflicts (confidence 0.9, 0.85, 0.5) and a paraphrase pair; bob: a
    paraphrase pair. Each pair is one the merge classifier offers on the default model."""
    path = tmp_path_factory.mktemp("curation") / "curation.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        ids = bank.add_many([
            {"text": "Drinks tea every morning", "namespace": "alice", "created_at": "2025-01-10T08:00:00Z"},
            {"text": "Switched from tea to coffee", "namespace": "alice", "created_at": "2025-03-10T08:00:00Z"},
            {"text": "Lives in Uppsala", "namespace": "alice", "created_at": "2025-01-12T08:00:00Z"},
            {"text": "Moved to Gothenburg last month", "namespace": "alice", "created_at": "2025-04-12T08:00:00Z"},
            {"text": "Plays tennis on Saturdays", "namespace": "alice", "created_at": "2025-01-14T08:00:00Z"},
            {"text": "Gave up tennis for padel", "namespace": "alice", "created_at": "2025-05-14T08:00:00Z"},
            {"text": "Prefers vegetarian food", "namespace": "alice"},
            {"text": "Prefers vegetarian meals", "namespace": "alice"},
            {"text": "Works as a nurse at the city hospital", "namespace": "bob"},
            {"text": "Works as a nurse at the hospital in the city", "namespace": "bob"},
        ], dedupe=False)
        conflicts = [bank.record_conflict(ids[a], ids[a + 1], kind=kind, evidence=f"pair {a}", confidence=conf,
                                          suggestion="newer_wins", path="rules").id
                     for a, kind, conf in ((0, "switch", 0.9), (2, "contradiction", 0.85), (4, "switch", 0.5))]
        clusters = {ns: [c.ids for c, _ in bank.plan_merges(ns)] for ns in ("alice", "bob")}
    assert clusters == {"alice": [(ids[6], ids[7])], "bob": [(ids[8], ids[9])]}, clusters
    return path, conflicts, embedder


@pytest.fixture(scope="module")
def curation(curation_bank):
    yield from _serve(curation_bank[0])


@pytest.fixture
def tab(browser, curation):  # noqa: F811  (browser is the imported fixture)
    yield from _tab(browser, curation)


def _statuses(curation_bank) -> list[str]:
    path, conflicts, embedder = curation_bank
    with MemoryBank.open(path, embedder=embedder) as bank:
        by_id = {c.id: c.status for c in bank.conflicts(namespace="alice", status=None)}
    return [by_id[i] for i in conflicts]


def _undo(tab: Tab) -> None:
    """Press the Undo of the latest resolution (drawn above the filters) and wait for its confirmation."""
    main = _main(tab)
    main.locator(".st-key-undo-last button").click()
    tab.settle()
    expect(main.get_by_text("Undone: the memories and the conflicts are back", exact=False).first).to_be_visible()


def test_conflicts_bulk_dismiss_of_a_selection_and_its_undo(tab, curation_bank):
    _, conflicts, _ = curation_bank
    tab.page.goto(tab.base_url + "/conflicts?ns=alice&sort=confidence")
    tab.settle()
    main = _main(tab)
    expect(main.get_by_text("Open conflicts (3)")).to_be_visible()
    dismiss = main.get_by_role("button", name="Dismiss the 0 selected", exact=True)
    expect(dismiss).to_be_disabled()  # nothing picked: nothing to dismiss
    for cid in conflicts[:2]:
        main.locator(f".st-key-pick-{cid} label").click()
        tab.settle()
    main.get_by_role("button", name="Dismiss the 2 selected", exact=True).click()
    tab.settle()
    expect(main.get_by_text(f"Dismissed 2 conflicts ({conflicts[0]}, {conflicts[1]}).")).to_be_visible()
    toast = tab.page.locator('[data-testid="stToast"]').filter(has_text="Dismissed 2 conflicts")
    expect(toast).to_be_in_viewport()
    expect(main.get_by_text("Open conflicts (1)")).to_be_visible()
    assert _statuses(curation_bank) == ["dismissed", "dismissed", "open"]
    expect(main.locator(".st-key-undo-last button")).to_be_in_viewport()
    _undo(tab)
    expect(main.get_by_text("Open conflicts (3)")).to_be_visible()
    assert _statuses(curation_bank) == ["open", "open", "open"]
    tab.check_clean("conflicts-bulk-dismiss")
    tab.screenshot("conflicts-bulk-dismiss")


def test_conflicts_dismiss_all_the_filters_show_asks_first_and_undoes(tab, curation_bank):
    tab.page.goto(tab.base_url + "/conflicts?ns=alice&min_confidence=0.8")
    tab.settle()
    main = _main(tab)
    expect(main.get_by_text("Open conflicts (2 of 3)")).to_be_visible()
    every = main.get_by_role("button", name="Dismiss all 2 shown by the filters", exact=True)
    expect(every).to_be_disabled()  # until the operator confirms
    main.locator(".st-key-bulk-confirm label").click()
    tab.settle()
    every.click()
    tab.settle()
    expect(main.get_by_text(re.compile(r"^Dismissed 2 conflicts"))).to_be_visible()
    expect(main.get_by_text("Open conflicts (0 of 1)")).to_be_visible()
    assert _statuses(curation_bank) == ["dismissed", "dismissed", "open"]  # the 0.5 one was filtered out
    _undo(tab)
    assert _statuses(curation_bank) == ["open", "open", "open"]
    tab.check_clean("conflicts-dismiss-filtered")


def test_merges_all_namespaces_shows_each_clusters_namespace_signals_and_confidence(tab):
    tab.page.goto(tab.base_url + "/merges?ns=(all)")
    tab.settle()
    main = _main(tab)
    expect(main.get_by_text("Candidate clusters in all namespaces (2)")).to_be_visible()
    heads = main.locator("h4").filter(has_text="Cluster").all_inner_texts()
    assert len(heads) == 2 and all(re.search(r"confidence 0\.\d\d", h) for h in heads), heads
    for ns in ("alice", "bob"):
        expect(main.get_by_text(f"namespace {ns}", exact=True)).to_be_visible()
    why = main.get_by_text(re.compile(r"^Why suggested: cosine 0\.\d\d lowest"))
    expect(why).to_have_count(2)
    # The shared words are the engine's tokens (stems): one cluster's name its fact, the other's theirs.
    expect(why.filter(has_text=re.compile(r"shared words: .*vegetarian"))).to_have_count(1)
    expect(why.filter(has_text=re.compile(r"shared words: .*nurs"))).to_have_count(1)
    expect(main.get_by_text("Works as a nurse at the city hospital", exact=True)).to_be_visible()
    tab.check_clean("merges-all-namespaces")
    tab.screenshot("merges-all-namespaces")
