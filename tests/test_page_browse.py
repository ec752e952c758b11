"""The Browse page: filters, searches, the detail view and its actions, add by hand, markup shown literally."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from memory_core import MemoryBank


@pytest.fixture(scope="session")
def embedder():
    """all-MiniLM-L6-v2 rather than the default model: the rankings these tests read were measured with it."""
    from memory_core.embedding.embedder import MINILM_MODEL, get_embedder

    return get_embedder(MINILM_MODEL)

APP = str(Path(__file__).resolve().parent.parent / "app.py")
MARKUP = "**bold** <b>html</b> # not a heading"


@pytest.fixture
def browse(tmp_path, embedder, monkeypatch):
    """A small bank (fresh path per test: the dashboard caches one bank per path) and the Browse page."""
    path = tmp_path / "browse.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        ids = {
            "veg": bank.add("Prefers vegetarian food", namespace="alice", importance=0.8, category="preference",
                            created_at="2024-01-15T10:00:00Z"),
            "berlin": bank.add("Moved to Berlin in August", namespace="alice", category="fact",
                               created_at="2025-08-10T10:00:00Z"),
            "marathon": bank.add("Wants to run a marathon next year", namespace="alice", category="goal",
                                 created_at="2025-06-01T10:00:00Z"),
            "markup": bank.add(MARKUP, namespace="alice", category="other"),
            "night": bank.add("Works night shifts", namespace="bob", category="fact"),
        }
        bank.forget(ids["berlin"])
        # One logged recall: bob's only active memory is returned; alice's are never recalled.
        assert [h.memory.id for h in bank.recall("night shifts at work", namespace="bob", record=True)] == [ids["night"]]
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("dashboard/browse.py").run()
    assert not at.exception
    at.selectbox(key="browse_namespace").select("alice").run()
    assert not at.exception

    def open_bank():
        return MemoryBank.open(path, embedder=embedder)
    return at, ids, open_bank


def table(at):
    return at.dataframe(key="browse_table").value if any(
        getattr(d, "key", None) == "browse_table" for d in at.dataframe) else None


def texts(at) -> set[str]:
    t = table(at)
    return set() if t is None else set(t["text"])


def detail(at, mid: int):
    at.selectbox(key="browse_detail").select(mid).run()
    assert not at.exception
    return at


def test_browse_renders_and_filters_narrow_the_table(browse):
    at, ids, _ = browse
    assert texts(at) == {"Prefers vegetarian food", "Wants to run a marathon next year", MARKUP}
    at.selectbox(key="browse_status").select("archived").run()
    assert texts(at) == {"Moved to Berlin in August"}
    at.selectbox(key="browse_status").select("(any)").run()
    at.selectbox(key="browse_category").select("goal").run()
    assert texts(at) == {"Wants to run a marathon next year"}
    at.selectbox(key="browse_namespace").select("(all)").run()
    at.selectbox(key="browse_category").select("fact").run()
    assert texts(at) == {"Moved to Berlin in August", "Works night shifts"}
    assert not at.exception


def test_plain_text_search_finds_a_memory(browse):
    at, ids, _ = browse
    at.text_input(key="browse_contains").input("MARATHON").run()
    assert texts(at) == {"Wants to run a marathon next year"}


def test_semantic_search_ranks_the_relevant_memory_first_and_records_nothing(browse):
    at, ids, open_bank = browse
    with open_bank() as bank:
        logged = len(bank.retrievals(limit=None))
    at.text_input(key="browse_query").input("what should I cook for dinner, any meat?").run()
    assert not at.exception
    t = table(at)
    assert t["text"].iloc[0] == "Prefers vegetarian food"
    assert list(t["score"]) == sorted(t["score"], reverse=True)
    with open_bank() as bank:
        assert len(bank.retrievals(limit=None)) == logged  # only the fixture's recall


def test_semantic_hits_pass_through_the_bank_filters(browse):
    """The table's filters narrow the semantic hits as they narrow the table: by the bank's filters."""
    at, ids, _ = browse
    at.text_input(key="browse_query").input("what should I cook for dinner, any meat?").run()
    assert "Wants to run a marathon next year" in texts(at) and MARKUP in texts(at)  # threshold 0: all of them
    at.selectbox(key="browse_category").select("goal").run()
    assert texts(at) == {"Wants to run a marathon next year"}
    at.selectbox(key="browse_category").select("(any)").run()
    at.selectbox(key="browse_tier").select("hot").run()
    assert texts(at) == {MARKUP}
    at.text_input(key="browse_contains").input("VEGETARIAN").run()
    assert texts(at) == set() and not at.exception


def test_soft_delete_hides_from_recall_and_restore_brings_it_back(browse):
    at, ids, open_bank = browse
    veg = ids["veg"]
    detail(at, veg).button(key=f"forget_{veg}").click().run()
    assert not at.exception and "Archived" in at.success[0].value
    with open_bank() as bank:
        assert bank.get(veg).status == "archived"
        assert veg not in [h.memory.id for h in bank.recall("vegetarian food", namespace="alice", record=False)]
    assert "Prefers vegetarian food" not in texts(at)
    at.selectbox(key="browse_status").select("archived").run()
    detail(at, veg).button(key=f"restore_{veg}").click().run()
    assert not at.exception
    with open_bank() as bank:
        assert bank.get(veg).status == "active"
        assert veg in [h.memory.id for h in bank.recall("vegetarian food", namespace="alice", record=False)]
        assert [e.action for e in bank.history(veg)][-2:] == ["forget", "restore"]


def test_edit_importance_and_pin_change_the_bank(browse):
    at, ids, open_bank = browse
    mid = ids["marathon"]
    detail(at, mid)
    at.number_input(key=f"edit_importance_{mid}").set_value(0.95)
    at.button(key=f"FormSubmitter:edit_form_{mid}-Save changes").click().run()
    assert not at.exception
    at.button(key=f"pin_{mid}").click().run()
    assert not at.exception
    with open_bank() as bank:
        m = bank.get(mid)
        assert m.importance == pytest.approx(0.95) and m.pinned and m.text == "Wants to run a marathon next year"


def test_add_by_hand_creates_a_memory(browse):
    at, ids, open_bank = browse
    at.text_area(key="add_text").input("Allergic to peanuts")
    at.selectbox(key="add_category").select("profile")
    at.number_input(key="add_importance").set_value(0.9)
    at.button(key="FormSubmitter:add_form-Add memory").click().run()
    assert not at.exception and "Added memory" in at.success[0].value, at.success
    assert "Allergic to peanuts" in texts(at)
    with open_bank() as bank:
        [m] = bank.memories(namespace="alice", contains="peanuts")
        assert (m.category, m.importance) == ("profile", pytest.approx(0.9))


def test_hard_delete_needs_the_typed_id(browse):
    at, ids, open_bank = browse
    mid = ids["marathon"]
    detail(at, mid).button(key=f"hard_delete_{mid}").click().run()
    assert "nothing was deleted" in at.error[0].value
    at.text_input(key=f"hard_confirm_{mid}").input(str(mid + 1000)).run()
    at.button(key=f"hard_delete_{mid}").click().run()
    assert "nothing was deleted" in at.error[0].value
    with open_bank() as bank:
        assert bank.get(mid).status == "active"
    at.text_input(key=f"hard_confirm_{mid}").input(str(mid)).run()
    at.button(key=f"hard_delete_{mid}").click().run()
    assert not at.exception and "deleted forever" in at.success[0].value
    with open_bank() as bank:
        m = bank.get(mid)
        assert m.status == "deleted" and m.text is None


def test_markup_in_a_memory_is_shown_literally(browse):
    at, ids, _ = browse
    detail(at, ids["markup"])
    assert at.code[0].value == MARKUP
    assert all("<b>" not in md.value and "**bold**" not in md.value for md in at.markdown)


def test_empty_bank_offers_the_add_form(tmp_path, embedder, monkeypatch):
    path = tmp_path / "empty-browse.duckdb"
    MemoryBank.open(path, embedder=embedder).close()
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("dashboard/browse.py").run()
    assert not at.exception
    at.text_area(key="add_text").input("First memory")
    at.button(key="FormSubmitter:add_form-Add memory").click().run()
    assert not at.exception
    assert "First memory" in texts(at)


def test_bulk_soft_delete_of_the_selection_and_exports(browse):
    at, ids, open_bank = browse
    assert len(at.get("download_button")) == 2  # CSV and JSONL of the filtered set
    at.text_input(key="browse_contains").input("e").run()  # any filter; the rows below are the table's first two
    first_two = [int(i) for i in table(at)["id"].iloc[:2]]
    at.session_state["browse_table"] = {"selection": {"rows": [0, 1], "columns": [], "cells": []}}
    at.run()
    at.button(key="bulk_forget").click().run()
    assert not at.exception and "Archived 2 memories" in at.success[0].value
    with open_bank() as bank:
        assert [bank.get(i).status for i in first_two] == ["archived", "archived"]


def test_importance_range_narrows_the_table(browse):
    at, ids, _ = browse
    at.slider(key="browse_importance").set_value((0.7, 1.0)).run()
    assert not at.exception
    assert texts(at) == {"Prefers vegetarian food"}
    at.slider(key="browse_importance").set_value((0.0, 0.6)).run()
    assert texts(at) == {"Wants to run a marathon next year", MARKUP}


def test_created_date_range_narrows_the_table(browse):
    at, ids, _ = browse
    at.date_input(key="browse_created").set_value((date(2025, 1, 1), date(2025, 12, 31))).run()
    assert not at.exception
    assert texts(at) == {"Wants to run a marathon next year"}
    at.selectbox(key="browse_status").select("(any)").run()
    assert texts(at) == {"Wants to run a marathon next year", "Moved to Berlin in August"}
    # the end day is included whole
    at.date_input(key="browse_created").set_value((date(2024, 1, 1), date(2024, 1, 15))).run()
    assert texts(at) == {"Prefers vegetarian food"}


def test_last_used_and_pinned_filters(browse):
    at, ids, _ = browse
    at.selectbox(key="browse_namespace").select("(all)").run()
    at.date_input(key="browse_used").set_value((date(2000, 1, 1), date(2100, 1, 1))).run()
    assert not at.exception
    assert texts(at) == {"Works night shifts"}  # the only memory ever recalled
    at.date_input(key="browse_used").set_value(()).run()
    at.selectbox(key="browse_pinned").select("pinned").run()
    assert texts(at) == set()
    at.selectbox(key="browse_pinned").select("not pinned").run()
    assert "Works night shifts" in texts(at)


def test_sort_by_importance_puts_the_most_important_first(browse):
    at, ids, _ = browse
    assert table(at)["text"].iloc[0] != "Prefers vegetarian food"  # newest first: it is the oldest
    at.selectbox(key="browse_order").select("importance").run()
    assert not at.exception
    t = table(at)
    assert t["text"].iloc[0] == "Prefers vegetarian food"
    assert list(t["importance"]) == sorted(t["importance"], reverse=True)


def recall_log(at):
    """The detail view's recall log table, or None (non-selectable dataframes expose no key in AppTest)."""
    logs = [d.value for d in at.dataframe if list(d.value.columns) == ["when", "query", "rank", "score"]]
    return logs[0] if logs else None


def test_detail_view_shows_the_recall_log(browse):
    at, ids, _ = browse
    detail(at, ids["veg"])
    assert any("never recalled yet" in c.value for c in at.caption)
    assert recall_log(at) is None
    at.selectbox(key="browse_namespace").select("bob").run()
    detail(at, ids["night"])
    assert not any("never recalled yet" in c.value for c in at.caption)
    log = recall_log(at)
    assert list(log["query"]) == ["night shifts at work"] and list(log["rank"]) == [1]
    assert log["when"].iloc[0] != "" and log["score"].iloc[0] is not None


def test_tier_filter_narrows_the_table(browse):
    """The fixture's dated memories are long untouched (cold); the undated ones were made today (hot)."""
    at, ids, _ = browse
    at.selectbox(key="browse_tier").select("cold").run()
    assert texts(at) == {"Prefers vegetarian food", "Wants to run a marathon next year"}
    at.selectbox(key="browse_tier").select("hot").run()
    assert texts(at) == {MARKUP}
    assert not at.exception
