"""The Activity page: every change across the bank by operation, filtered (and restored from a link),
each undoable, and an undo that can no longer apply says why."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from memory_core import MemoryBank

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture
def activity_bank(tmp_path, embedder, monkeypatch):
    """alice: three memories, two forgotten together (one operation); bob: one edited from the CLI."""
    path = tmp_path / "activity.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        a, b, c = (bank.add(t, namespace="alice") for t in ("Likes tea", "Plays chess", "Reads novels"))
        group = bank.forget_many([a, b])
    with MemoryBank.open(path, embedder=embedder, actor="cli") as bank:
        d = bank.add("Works night shifts", namespace="bob")
        bank.update(d, importance=0.9)
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    return path, embedder, {"a": a, "b": b, "c": c, "d": d, "forget": group}


def opened(query: dict) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("dashboard/activity.py")
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def ops(at):
    found = [d.value for d in at.dataframe if "operation" in d.value.columns]
    return found[0] if found else None


def words(at) -> str:
    return " ".join(str(x.value) for kind in (at.markdown, at.caption, at.warning, at.info, at.success)
                    for x in kind)


def test_every_change_is_listed_with_its_actor_and_filtered(activity_bank):
    path, _, ids = activity_bank
    t = ops(opened({"ns": "(all)"}))
    assert list(t["action"])[:2] == ["update", "add"] and set(t["actor"]) == {"api", "cli"}
    forget = t[t["operation"] == ids["forget"]].iloc[0]
    assert forget["memories"] == 2 and forget["undo"] == "possible"
    t = ops(opened({"ns": "bob"}))
    assert set(t["action"]) == {"add", "update"}
    t = ops(opened({"ns": "(all)", "actor": "cli", "action": "update"}))
    assert list(t["action"]) == ["update"] and list(t["actor"]) == ["cli"]


def test_a_bulk_forget_is_undone_as_one_operation_and_not_twice(activity_bank):
    path, embedder, ids = activity_bank
    at = opened({"ns": "alice"})
    at.selectbox(key="activity_undo_group").select(ids["forget"]).run()
    at.button(key="activity_undo").click().run()
    assert not at.exception and f"Undid operation {ids['forget']}" in words(at)
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.get(ids["a"]).status == bank.get(ids["b"]).status == "active"
    at.selectbox(key="activity_undo_group").select(ids["forget"]).run()
    assert "cannot be undone: already undone" in words(at)
    assert not [b for b in at.button if b.key == "activity_undo"]


def test_an_undo_blocked_by_a_later_change_says_why(activity_bank):
    path, embedder, ids = activity_bank
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.restore(ids["a"])  # a later change to a memory of the bulk forget
    at = opened({"ns": "alice"})
    at.selectbox(key="activity_undo_group").select(ids["forget"]).run()
    at.button(key="activity_undo").click().run()
    assert not at.exception
    assert f"Operation {ids['forget']} cannot be undone" in words(at), words(at)


@pytest.mark.parametrize("query, says", [({"actor": "mallory"}, "`actor=mallory`"), ({"limit": "7"}, "`limit=7`"),
                                         ({"ns": "nobody"}, "the namespace `nobody` is not in this bank")])
def test_bad_values_in_the_link_are_named(activity_bank, query, says):
    at = opened(query)
    assert says in words(at), words(at)
