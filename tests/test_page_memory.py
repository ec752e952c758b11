"""One memory's page, opened by id from a link: fields, history, conflicts, merges, recalls, actions, bad ids."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from memory_core import MemoryBank

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture
def memory_bank(tmp_path, embedder):
    """alice: a conflict (tea vs coffee), a merge, a recall with feedback; an archived memory."""
    path = tmp_path / "memory-page.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        tea = bank.add("Drinks tea every morning", namespace="alice", created_at="2025-03-01T08:00:00Z")
        coffee = bank.add("Drinks coffee every morning, never tea", namespace="alice")
        one = bank.add("Likes hiking in the Alps", namespace="alice")
        two = bank.add("Enjoys hiking trips in the Alps", namespace="alice")
        old = bank.add("Lived in Paris", namespace="alice")
        conflict = bank.record_conflict(tea, coffee, kind="contradiction", evidence="tea vs coffee",
                                        confidence=0.9, suggestion="newer_wins", path="rules")
        merged = bank.merge([one, two], "Likes hiking in the Alps")
        hits = bank.recall("what does she drink in the morning", namespace="alice", record=True, threshold=0)
        bank.flush()
        rid = bank.last_retrieval_id
        bank.feedback(rid, used_ids=[hits[0].memory.id], helpful=True)
        bank.update(old, importance=0.9)
        bank.forget(old)
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    yield path, dict(tea=tea, coffee=coffee, one=one, two=two, old=old, merged=merged.merged_id,
                     conflict=conflict.id, top=hits[0].memory.id), embedder
    monkeypatch.undo()


def open_page(raw_id: str | None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("dashboard/memory.py")
    if raw_id is not None:
        at.query_params["id"] = raw_id
    at.run()
    assert not at.exception, at.exception
    return at


def words(at) -> str:
    return " ".join(str(x.value) for kind in (at.markdown, at.caption, at.warning, at.info, at.success, at.subheader)
                    for x in kind)


def table(at, key: str):
    """The table of one section (AppTest gives a non-selectable dataframe no key: found by a column)."""
    column = {"memory_history": "change", "memory_recalls": "query"}[key]
    found = [d.value for d in at.dataframe if column in d.value.columns]
    return found[0] if found else None


def test_a_link_opens_the_memory_with_its_conflict_and_history(memory_bank):
    path, ids, _ = memory_bank
    at = open_page(str(ids["tea"]))
    assert at.code[0].value == "Drinks tea every morning"
    text = words(at)
    assert f"Conflict {ids['conflict']} (open" in text
    assert f"[#{ids['coffee']}](./memory?id={ids['coffee']})" in text  # the other memory, linked
    history = table(at, "memory_history")
    assert list(history["action"]) == ["add"]
    assert history["dated"].iloc[0].startswith("2025-03-01")  # the memory's own date, not the import's
    assert "tier" in text


def test_history_reads_as_before_and_after_and_a_change_can_be_undone(memory_bank):
    path, ids, embedder = memory_bank
    at = open_page(str(ids["old"]))
    history = table(at, "memory_history")
    assert list(history["action"]) == ["add", "update", "forget"]
    assert "importance: 0.5 → 0.9" in history["change"].iloc[1]
    assert "status: active → archived" in history["change"].iloc[2]
    at.selectbox(key="memory_undo_event").select(int(history["event"].iloc[1])).run()
    at.button(key="memory_undo").click().run()
    assert not at.exception and "Undid event" in at.success[0].value
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.get(ids["old"]).importance == pytest.approx(0.5)


def test_merges_and_recalls_with_feedback_are_shown(memory_bank):
    path, ids, _ = memory_bank
    at = open_page(str(ids["one"]))
    assert f"→ [#{ids['merged']}](./memory?id={ids['merged']})" in words(at)
    at = open_page(str(ids["top"]))
    recalls = table(at, "memory_recalls")
    assert list(recalls["query"]) == ["what does she drink in the morning"]
    assert list(recalls["used"]) == ["yes"] and list(recalls["helpful"]) == ["yes"]


def test_forget_and_restore_from_the_page(memory_bank):
    path, ids, embedder = memory_bank
    at = open_page(str(ids["tea"]))
    at.button(key="memory_forget").click().run()
    assert not at.exception and "Archived" in at.success[0].value
    at.button(key="memory_restore").click().run()
    assert not at.exception and "Restored" in at.success[0].value
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert [e.action for e in bank.history(ids["tea"])][-2:] == ["forget", "restore"]


def test_edit_saves_the_changed_fields(memory_bank):
    path, ids, embedder = memory_bank
    at = open_page(str(ids["coffee"]))
    at.number_input(key="memory_edit_importance").set_value(0.95)
    at.button(key="FormSubmitter:memory_edit-Save changes").click().run()
    assert not at.exception and "Updated importance" in at.success[0].value
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.get(ids["coffee"]).importance == pytest.approx(0.95)


def test_durability_is_shown_with_the_rules_reading_and_editable(memory_bank):
    """A habit reads as durable; marking it transient by hand is saved, and the page says the rule
    read it otherwise, so an operator sees a durability set by hand."""
    path, ids, embedder = memory_bank
    at = open_page(str(ids["tea"]))
    assert "Durability: **durable**" in words(at) and "a habit" in words(at)
    at.selectbox(key="memory_edit_durability").select("transient")
    at.button(key="FormSubmitter:memory_edit-Save changes").click().run()
    assert not at.exception and "Updated durability" in at.success[0].value
    assert "Durability: **transient**" in words(at) and "(set by hand)" in words(at)
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.get(ids["tea"]).durability == "transient"


@pytest.mark.parametrize("raw, says", [("999999", "no memory #999999"), ("abc", "is not a memory id"),
                                       ("-3", "is not a memory id")])
def test_a_bad_id_in_the_link_says_so(memory_bank, raw, says):
    at = open_page(raw)
    assert says in words(at) and not at.code


def test_no_id_asks_for_one(memory_bank):
    at = open_page(None)
    assert "Open a memory by its id" in words(at)
