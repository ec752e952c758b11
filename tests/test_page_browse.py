"""The Browse page: filters and facets, searches, pages, bulk actions, exports, add by hand, markup shown literally."""

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


def row_ids(at) -> list[int]:
    """The table's memory ids, read from their links to the memory page."""
    t = table(at)
    return [] if t is None else [int(link.rsplit("=", 1)[1]) for link in t["id"]]


def words(at) -> str:
    return " ".join(str(x.value) for kind in (at.markdown, at.caption, at.warning, at.info, at.success)
                    for x in kind)


def test_browse_renders_and_filters_narrow_the_table(browse):
    at, ids, _ = browse
    assert texts(at) == {"Prefers vegetarian food", "Wants to run a marathon next year", MARKUP}
    at.selectbox(key="status").select("archived").run()
    assert texts(at) == {"Moved to Berlin in August"}
    at.selectbox(key="status").select("(any)").run()
    at.selectbox(key="category").select("goal").run()
    assert texts(at) == {"Wants to run a marathon next year"}
    at.selectbox(key="browse_namespace").select("(all)").run()
    at.selectbox(key="category").select("fact").run()
    assert texts(at) == {"Moved to Berlin in August", "Works night shifts"}
    assert not at.exception


def test_plain_text_search_finds_a_memory(browse):
    at, ids, _ = browse
    at.text_input(key="text").input("MARATHON").run()
    assert texts(at) == {"Wants to run a marathon next year"}


def test_semantic_search_ranks_the_relevant_memory_first_and_records_nothing(browse):
    at, ids, open_bank = browse
    with open_bank() as bank:
        logged = len(bank.retrievals(limit=None))
    at.text_input(key="q").input("what should I cook for dinner, any meat?").run()
    assert not at.exception
    t = table(at)
    assert t["text"].iloc[0] == "Prefers vegetarian food"
    assert list(t["score"]) == sorted(t["score"], reverse=True)
    with open_bank() as bank:
        assert len(bank.retrievals(limit=None)) == logged  # only the fixture's recall


def test_semantic_hits_pass_through_the_bank_filters(browse):
    """The table's filters narrow the semantic hits as they narrow the table: by the bank's filters."""
    at, ids, _ = browse
    at.text_input(key="q").input("what should I cook for dinner, any meat?").run()
    assert "Wants to run a marathon next year" in texts(at) and MARKUP in texts(at)  # threshold 0: all of them
    at.selectbox(key="category").select("goal").run()
    assert texts(at) == {"Wants to run a marathon next year"}
    at.selectbox(key="category").select("(any)").run()
    at.selectbox(key="tier").select("hot").run()
    assert texts(at) == {MARKUP}
    at.text_input(key="text").input("VEGETARIAN").run()
    assert texts(at) == set() and not at.exception


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
    assert len(at.get("download_button")) == 2  # CSV and JSONL of the current view
    at.text_input(key="text").input("e").run()  # any filter; the rows below are the table's first two
    first_two = row_ids(at)[:2]
    at.session_state["browse_table"] = {"selection": {"rows": [0, 1], "columns": [], "cells": []}}
    at.run()
    at.button(key="bulk_forget").click().run()
    assert not at.exception and "Archived 2 memories" in at.success[0].value
    with open_bank() as bank:
        assert [bank.get(i).status for i in first_two] == ["archived", "archived"]


def test_importance_range_narrows_the_table(browse):
    at, ids, _ = browse
    at.slider(key="importance").set_value((0.7, 1.0)).run()
    assert not at.exception
    assert texts(at) == {"Prefers vegetarian food"}
    at.slider(key="importance").set_value((0.0, 0.6)).run()
    assert texts(at) == {"Wants to run a marathon next year", MARKUP}


def test_created_date_range_narrows_the_table(browse):
    at, ids, _ = browse
    at.date_input(key="created").set_value((date(2025, 1, 1), date(2025, 12, 31))).run()
    assert not at.exception
    assert texts(at) == {"Wants to run a marathon next year"}
    at.selectbox(key="status").select("(any)").run()
    assert texts(at) == {"Wants to run a marathon next year", "Moved to Berlin in August"}
    # the end day is included whole
    at.date_input(key="created").set_value((date(2024, 1, 1), date(2024, 1, 15))).run()
    assert texts(at) == {"Prefers vegetarian food"}


def test_last_used_and_pinned_filters(browse):
    at, ids, _ = browse
    at.selectbox(key="browse_namespace").select("(all)").run()
    at.date_input(key="used").set_value((date(2000, 1, 1), date(2100, 1, 1))).run()
    assert not at.exception
    assert texts(at) == {"Works night shifts"}  # the only memory ever recalled
    at.date_input(key="used").set_value(()).run()
    at.selectbox(key="pinned").select("pinned").run()
    assert texts(at) == set()
    at.selectbox(key="pinned").select("not pinned").run()
    assert "Works night shifts" in texts(at)


def test_sort_by_importance_puts_the_most_important_first(browse):
    at, ids, _ = browse
    assert table(at)["text"].iloc[0] != "Prefers vegetarian food"  # newest first: it is the oldest
    at.selectbox(key="sort").select("importance").run()
    assert not at.exception
    t = table(at)
    assert t["text"].iloc[0] == "Prefers vegetarian food"
    assert list(t["importance"]) == sorted(t["importance"], reverse=True)


def test_tier_filter_narrows_the_table(browse):
    """The fixture's dated memories are long untouched (cold); the undated ones were made today (hot)."""
    at, ids, _ = browse
    at.selectbox(key="tier").select("cold").run()
    assert texts(at) == {"Prefers vegetarian food", "Wants to run a marathon next year"}
    at.selectbox(key="tier").select("hot").run()
    assert texts(at) == {MARKUP}
    assert not at.exception


def test_every_id_links_to_the_memory_page_and_markup_stays_text(browse):
    at, ids, _ = browse
    assert set(table(at)["id"]) == {f"./memory?id={ids[k]}" for k in ("veg", "marathon", "markup")}
    assert MARKUP in texts(at)  # a dataframe cell: never rendered as markdown
    assert all("<b>" not in md.value and "**bold**" not in md.value for md in at.markdown)


def _opened(path, query: dict[str, str]) -> AppTest:
    """Browse opened from a link (a reload or a shared URL) with these query parameters."""
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("dashboard/browse.py")
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def test_a_link_restores_the_filtered_view(browse):
    at, ids, _ = browse
    at = _opened(None, {"ns": "alice", "status": "(any)", "category": "fact"})
    assert texts(at) == {"Moved to Berlin in August"}
    at = _opened(None, {"ns": "alice", "text": "marathon"})
    assert texts(at) == {"Wants to run a marathon next year"}
    at = _opened(None, {"ns": "bob"})
    assert texts(at) == {"Works night shifts"}


@pytest.mark.parametrize("query, says", [
    ({"ns": "nobody"}, "the namespace `nobody` is not in this bank"),
    ({"ns": "alice", "status": "gone"}, "`status=gone`: the status must be one of"),
    ({"ns": "alice", "importance": "x,2"}, "`importance=x,2`"),
    ({"ns": "alice", "created": "yesterday"}, "`created=yesterday`"),
    ({"ns": "alice", "size": "7"}, "`size=7`"),
])
def test_a_bad_value_in_the_link_is_named_on_the_page(browse, query, says):
    at = _opened(None, query)
    assert says in words(at), words(at)
    assert texts(at)  # the page still shows a table


def test_facets_show_their_counts(browse):
    at, ids, _ = browse
    assert "archived (1)" in at.selectbox(key="status").options
    assert "goal (1)" in at.selectbox(key="category").options
    assert "active (3)" in at.selectbox(key="status").options


def test_page_size_and_pages(browse):
    at, ids, open_bank = browse
    with open_bank() as bank:
        bank.add_many([{"text": f"Filler note {i}", "namespace": "alice"} for i in range(30)])
    at.run()
    assert len(table(at)) == 33 and "33" in words(at)  # one page of 50
    at.selectbox(key="size").select(25).run()
    assert len(table(at)) == 25 and "page 1 of 2" in words(at)
    at = _opened(None, {"ns": "alice", "size": "25", "page": "2"})
    assert len(table(at)) == 8 and "page 2 of 2" in words(at)


def test_bulk_restore_and_regrade_the_selection(browse):
    at, ids, open_bank = browse
    at.selectbox(key="status").select("(any)").run()
    rows = row_ids(at)
    at.session_state["browse_table"] = {"selection": {"rows": list(range(len(rows))), "columns": [], "cells": []}}
    at.run()
    at.number_input(key="bulk_importance").set_value(0.7)
    at.button(key="bulk_set_importance").click().run()
    assert not at.exception and "Set the importance of 3" in at.success[0].value
    at.session_state["browse_table"] = {"selection": {"rows": list(range(len(rows))), "columns": [], "cells": []}}
    at.run()
    at.button(key="bulk_restore").click().run()
    assert not at.exception and "Restored 1" in at.success[0].value
    with open_bank() as bank:
        assert bank.get(ids["berlin"]).status == "active"
        assert bank.get(ids["veg"]).importance == pytest.approx(0.7)
        regrade = [e for e in bank.events(limit=20) if e.action == "update"]
        assert len(regrade) == 3 and len({e.group_id for e in regrade}) == 1  # one operation, undone as one


def test_durability_is_shown_filtered_and_set_on_a_selection_then_undone(browse):
    """Each row shows its durability; the facet narrows the table and lives in the link; setting
    it on a selection is one operation, and its Undo on the page puts every row back."""
    at, ids, open_bank = browse
    t = table(at)
    assert dict(zip(t["text"], t["durability"]))["Prefers vegetarian food"] == "durable"
    before = dict(zip(row_ids(at), t["durability"]))
    at.selectbox(key="durability").select("transient").run()
    assert not at.exception and texts(at) == set() and at.query_params["durability"] in ("transient", ["transient"])
    at.selectbox(key="durability").select("(any)").run()
    at.session_state["browse_table"] = {"selection": {"rows": list(range(len(before))), "columns": [], "cells": []}}
    at.run()
    at.selectbox(key="bulk_durability").select("transient")
    at.button(key="bulk_set_durability").click().run()
    assert not at.exception and f"Set the durability of {len(before)}" in at.success[0].value
    with open_bank() as bank:
        assert {bank.get(i).durability for i in before} == {"transient"}
    at.selectbox(key="durability").select("transient").run()
    assert set(row_ids(at)) == set(before)
    at.button(key="browse_undo_button").click().run()
    assert not at.exception and "Undid operation" in at.success[0].value
    with open_bank() as bank:
        assert {i: bank.get(i).durability for i in before} == before
    assert texts(at) == set()  # the filtered view (transient) is empty again


def test_the_language_facet_counts_and_narrows_and_lives_in_the_link(tmp_path, embedder, monkeypatch):
    path = tmp_path / "languages.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add("Prefers vegetarian food", namespace="alice")
        bank.add("Föredrar vegetarisk mat och dricker inte kaffe", namespace="alice")
        bank.add("喜欢吃素，不喝咖啡", namespace="alice")
        bank.add("老家在成都", namespace="alice")
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    at = _opened(path, {"ns": "alice"})
    options = at.selectbox(key="lang").options
    assert {"en (1)", "sv (1)", "zh (2)"} <= set(options)
    at.selectbox(key="lang").select("zh").run()
    assert texts(at) == {"喜欢吃素，不喝咖啡", "老家在成都"}
    at = _opened(path, {"ns": "alice", "lang": "sv"})
    assert texts(at) == {"Föredrar vegetarisk mat och dricker inte kaffe"}
    # an edit that changes the language moves the memory to the other facet
    with MemoryBank.open(path, embedder=embedder) as bank:
        (sv,) = bank.memories("alice", language="sv")
        bank.update(sv.id, text="Prefers vegetarian food and drinks no coffee")
        assert bank.stats("alice")["by_language"] == {"en": 2, "zh": 2}
