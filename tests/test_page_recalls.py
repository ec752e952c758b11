"""The Recalls page: the log filtered (and restored from a link), one recall's candidates against its
threshold, what the agent received, its feedback, and the link that opens it in Tune."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from streamlit.testing.v1 import AppTest

from memory_core import MemoryBank

APP = str(Path(__file__).resolve().parent.parent / "app.py")
AT = datetime(2026, 3, 2, 9, 30, tzinfo=timezone.utc)


@pytest.fixture
def recalls_bank(tmp_path, embedder, monkeypatch):
    """alice: three memories; recalls: one answered with feedback, one empty; bob: one recall."""
    path = tmp_path / "recalls.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        tea = bank.add("Drinks green tea every morning", namespace="alice", created_at="2026-01-10T08:00:00Z")
        bank.add("Her daughter is called Mia", namespace="alice", created_at="2026-02-01T08:00:00Z")
        bank.add("Works night shifts", namespace="bob", created_at="2026-02-01T08:00:00Z")
        hits = bank.recall("what does she drink in the morning", namespace="alice", now=AT, record=True)
        rid = bank.last_retrieval_id
        bank.recall("quantum chromodynamics lecture notes", namespace="alice", now=AT, record=True)
        empty = bank.last_retrieval_id
        bank.recall("night shift schedule", namespace="bob", now=AT, record=True)
        bank.flush()
        bank.feedback(rid, used_ids=[tea], helpful=True)
    assert [h.memory.id for h in hits][:1] == [tea]
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    return path, {"tea": tea, "answered": rid, "empty": empty}


def opened(query: dict) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("dashboard/recalls.py")
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def words(at) -> str:
    return " ".join(str(x.value) for kind in (at.markdown, at.caption, at.warning, at.info, at.subheader)
                    for x in kind)


def listed(at) -> list[str]:
    found = [d.value for d in at.dataframe if "returned" in d.value.columns]
    return [] if not found else list(found[0]["query"])


def test_the_log_is_listed_and_filtered(recalls_bank):
    at = opened({"ns": "(all)"})
    assert set(listed(at)) == {"what does she drink in the morning", "quantum chromodynamics lecture notes",
                               "night shift schedule"}
    at.selectbox(key="results").select("empty").run()
    assert listed(at) == ["quantum chromodynamics lecture notes"]
    at.selectbox(key="results").select("any").run()
    at.selectbox(key="feedback").select("helpful").run()
    assert listed(at) == ["what does she drink in the morning"]
    at = opened({"ns": "bob"})
    assert listed(at) == ["night shift schedule"]
    at = opened({"ns": "alice", "results": "not empty", "dates": ["2026-03-01", "2026-03-03"]})
    assert listed(at) == ["what does she drink in the morning"]
    at = opened({"ns": "alice", "dates": ["2025-01-01", "2025-01-02"]})
    assert listed(at) == [] and "No logged recall matches" in words(at)


def test_one_recall_shows_its_candidates_what_was_received_and_the_feedback(recalls_bank):
    path, ids = recalls_bank
    at = opened({"ns": "alice", "id": str(ids["answered"])})
    cands = [d.value for d in at.dataframe if "vs threshold" in d.value.columns][0]
    top = cands.iloc[0]
    assert top["id"] == f"./memory?id={ids['tea']}" and top["received"] == "yes"
    assert top["vs threshold"].startswith("in (+")
    assert any(v.startswith("out (") for v in cands["vs threshold"])  # the other memory, below the threshold
    assert "Drinks green tea every morning" in at.code[0].value  # what the agent received
    assert "helpful" in words(at)


def test_an_empty_recall_says_nothing_was_received(recalls_bank):
    path, ids = recalls_bank
    at = opened({"ns": "alice", "id": str(ids["empty"])})
    assert "Nothing: no memory cleared the threshold" in words(at)


def test_open_in_tune_carries_query_moment_and_preset(recalls_bank):
    path, ids = recalls_bank
    at = opened({"ns": "alice", "id": str(ids["answered"])})
    [link] = [p for p in at.get("page_link") if "Open in Tune" in p.proto.label]
    carried = {k: v[0] for k, v in parse_qs(link.proto.query_string).items()}
    assert link.proto.page.endswith("tune")
    assert carried["tune_query"] == "what does she drink in the morning" and carried["ns"] == "alice"
    assert carried["tune_as_of"] == AT.date().isoformat()
    assert datetime.fromisoformat(carried["at"]) == AT
    tune = AppTest.from_file(APP, default_timeout=60).run()
    tune.switch_page("dashboard/tune.py")
    for k, v in carried.items():
        tune.query_params[k] = v
    tune.run()
    assert not tune.exception, tune.exception
    assert tune.text_input(key="tune_query").value == "what does she drink in the morning"
    assert tune.date_input(key="tune_as_of").value == AT.date()
    assert tune.selectbox(key="tune_preset").value == carried["tune_preset"]


@pytest.mark.parametrize("query, says", [({"id": "abc"}, "is not a recall id"), ({"id": "99999"}, "no logged recall 99999"),
                                         ({"results": "some"}, "`results=some`"), ({"dates": "soon"}, "`dates=soon`")])
def test_bad_values_in_the_link_are_named(recalls_bank, query, says):
    at = opened({"ns": "alice", **query})
    assert says in words(at), words(at)
