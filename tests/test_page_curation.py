"""The curation pages (Conflicts, Merges, Maintenance) driven through the dashboard with AppTest.

Every test uses its own bank file: st.cache_resource shares one bank per path.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from memory_core import MemoryBank


@pytest.fixture(scope="session")
def embedder():
    """all-MiniLM-L6-v2 rather than the default model: the merge clusters these pages show were measured with it."""
    from memory_core.embedding.embedder import MINILM_MODEL, get_embedder

    return get_embedder(MINILM_MODEL)

APP = str(Path(__file__).resolve().parent.parent / "app.py")
MARKUP = "**bold** <b>x</b> lives in Oslo"


def ago(days: float) -> datetime:
    return datetime.now(timezone.utc) - timedelta(days=days)


def _app(path: Path, monkeypatch, page: str) -> AppTest:
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    at = AppTest.from_file(APP, default_timeout=90).run()
    assert not at.exception, at.exception
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def _plain_texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text] + [c.value for c in at.code]


def _markdown(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def _conflict_bank(path: Path, embedder, older: str = "Lives in Paris", newer: str = "Moved to Berlin"):
    with MemoryBank.open(path, embedder=embedder) as bank:
        a, b = bank.add_many([
            {"text": older, "namespace": "alice", "created_at": ago(30)},
            {"text": newer, "namespace": "alice", "created_at": ago(2)},
        ])
        c = bank.record_conflict(a, b, kind="switch", evidence="Paris vs Berlin", confidence=0.9,
                                 suggestion="newer_wins", path="rules")
    return a, b, c.id


# -- empty banks --------------------------------------------------------------------------------

@pytest.mark.parametrize("page", ["dashboard/conflicts.py", "dashboard/merges.py", "dashboard/maintenance.py"])
def test_pages_explain_an_empty_bank(tmp_path, embedder, monkeypatch, page):
    path = tmp_path / f"empty-{Path(page).stem}.duckdb"
    MemoryBank.open(path, embedder=embedder).close()
    at = _app(path, monkeypatch, page)
    assert any("no memories yet" in i.value for i in at.info)


# -- conflicts ----------------------------------------------------------------------------------

def test_conflicts_newer_wins_then_undo(tmp_path, embedder, monkeypatch):
    path = tmp_path / "conflicts-newer.duckdb"
    a, b, cid = _conflict_bank(path, embedder)
    at = _app(path, monkeypatch, "dashboard/conflicts.py")
    texts = _plain_texts(at)
    assert "Lives in Paris" in texts and "Moved to Berlin" in texts
    assert at.button(key=f"resolve-{cid}-newer_wins").proto.type == "primary"  # the suggestion stands out

    at.button(key=f"resolve-{cid}-newer_wins").click().run()
    assert not at.exception, at.exception
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.get(a).status == "superseded" and bank.get(a).superseded_by == b
        assert bank.get(b).status == "active"
        assert bank.conflict(cid).status == "resolved"
    assert any("resolved" in s.value for s in at.success)

    at.button(key="undo-last").click().run()
    assert not at.exception, at.exception
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.get(a).status == "active" and bank.get(a).superseded_by is None
        assert bank.conflict(cid).status == "open"
    assert at.button(key=f"resolve-{cid}-newer_wins")  # open again on the page


def test_conflicts_dismiss_and_undo_from_recent(tmp_path, embedder, monkeypatch):
    path = tmp_path / "conflicts-dismiss.duckdb"
    a, b, cid = _conflict_bank(path, embedder)
    at = _app(path, monkeypatch, "dashboard/conflicts.py")
    at.button(key=f"resolve-{cid}-dismiss").click().run()
    assert not at.exception, at.exception
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.conflict(cid).status == "dismissed"
        assert bank.get(a).status == "active" and bank.get(b).status == "active"
    assert any("No open conflicts" in i.value for i in at.info)

    at.button(key=f"undo-{cid}").click().run()  # from the recently resolved list
    assert not at.exception, at.exception
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.conflict(cid).status == "open"


def test_conflicts_edit_one_memory(tmp_path, embedder, monkeypatch):
    path = tmp_path / "conflicts-edit.duckdb"
    a, b, cid = _conflict_bank(path, embedder)
    at = _app(path, monkeypatch, "dashboard/conflicts.py")
    at.text_input(key=f"edit-text-{cid}-{a}").input("Lived in Paris until 2025").run()
    at.button(key=f"resolve-{cid}-edit").click().run()
    assert not at.exception, at.exception
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.get(a).text == "Lived in Paris until 2025"
        assert bank.conflict(cid).resolution == "edit"


def test_conflicts_explicit_wins_is_refused_readably_for_same_kinds(tmp_path, embedder, monkeypatch):
    path = tmp_path / "conflicts-kinds.duckdb"
    _, _, cid = _conflict_bank(path, embedder)
    at = _app(path, monkeypatch, "dashboard/conflicts.py")
    assert at.button(key=f"resolve-{cid}-explicit_wins").disabled  # both memories are explicit


def test_conflicts_show_markup_literally(tmp_path, embedder, monkeypatch):
    path = tmp_path / "conflicts-markup.duckdb"
    _conflict_bank(path, embedder, older=MARKUP, newer="Lives in Bergen")
    at = _app(path, monkeypatch, "dashboard/conflicts.py")
    assert MARKUP in _plain_texts(at)
    assert "<b>x</b>" not in _markdown(at) and "**bold**" not in _markdown(at)


def _triage_bank(path: Path, embedder) -> dict[str, int]:
    """Three open conflicts of three kinds and confidences, detected in the order low, high, middle."""
    with MemoryBank.open(path, embedder=embedder) as bank:
        ids = bank.add_many([{"text": t, "namespace": "alice", "created_at": ago(40 - i)} for i, t in enumerate((
            "Eats meat", "Is vegetarian", "Lives in Paris", "Moved to Berlin", "Has 2 cats", "Has 3 cats"))])
        found = [("polarity", 0.5, 0, 1), ("switch", 0.9, 2, 3), ("value_change", 0.7, 4, 5)]
        made = bank.record_conflicts([{"a_id": ids[a], "b_id": ids[b], "kind": kind, "evidence": kind,
                                       "confidence": conf, "suggestion": "newer_wins", "path": "rules"}
                                      for kind, conf, a, b in found])
    return {kind: c.id for (kind, *_), c in zip(found, made)} | {"ids": ids}


def _headings(at: AppTest) -> list[str]:
    return [m.value.split(" · ")[1] for m in at.markdown if m.value.startswith("#### Conflict")]


def test_conflicts_filter_and_sort_live_in_the_url(tmp_path, embedder, monkeypatch):
    path = tmp_path / "conflicts-triage.duckdb"
    made = _triage_bank(path, embedder)
    at = _app(path, monkeypatch, "dashboard/conflicts.py")
    assert _headings(at) == ["switch", "value_change", "polarity"]  # confidence, high first
    at.selectbox(key="sort").select("oldest").run()
    assert _headings(at) == ["polarity", "switch", "value_change"]
    at.slider(key="min_confidence").set_value(0.6).run()
    assert not at.exception, at.exception
    assert _headings(at) == ["switch", "value_change"] and "Open conflicts (2 of 3)" in [s.value for s in at.subheader]
    at.selectbox(key="kind").select("value_change").run()
    assert _headings(at) == ["value_change"]
    at.slider(key="min_confidence").set_value(0.8).run()
    assert _headings(at) == [] and any("passes the filters" in i.value for i in at.info)
    ids = made["ids"]
    at.selectbox(key="kind").select("any").run()
    assert f"(./memory?id={ids[2]})" in _markdown(at) and f"(./memory?id={ids[3]})" in _markdown(at)


def test_conflicts_open_on_the_filters_of_a_link(tmp_path, embedder, monkeypatch):
    path = tmp_path / "conflicts-link.duckdb"
    _triage_bank(path, embedder)
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params.update({"min_confidence": "0.6", "sort": "newest"})
    at.run()
    at.switch_page("dashboard/conflicts.py").run()
    assert not at.exception, at.exception
    assert _headings(at) == ["value_change", "switch"]
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params.update({"kind": "polarity"})
    at.run()
    at.switch_page("dashboard/conflicts.py").run()
    assert _headings(at) == ["polarity"]
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params.update({"min_confidence": "lots", "kind": "nonsense", "sort": "random"})
    at.run()
    at.switch_page("dashboard/conflicts.py").run()
    assert not at.exception, at.exception
    warnings = " ".join(w.value for w in at.warning)
    assert "min_confidence=lots" in warnings and "kind=nonsense" in warnings and "sort=random" in warnings
    assert len(_headings(at)) == 3


def _top_box_first(at: AppTest, text: str) -> bool:
    """Is the element saying ``text`` drawn before the filters (so above every card)?"""
    order = [e for e in at.main if getattr(e, "value", None) is not None]
    said = next(i for i, e in enumerate(order) if isinstance(e.value, str) and text in e.value)
    filters = next(i for i, e in enumerate(order) if getattr(e, "key", None) == "min_confidence")
    return said < filters


def test_conflicts_bulk_dismiss_of_the_selected_is_one_undo(tmp_path, embedder, monkeypatch):
    path = tmp_path / "conflicts-bulk.duckdb"
    made = _triage_bank(path, embedder)
    at = _app(path, monkeypatch, "dashboard/conflicts.py")
    assert at.button(key="bulk-dismiss-selected").disabled and at.button(key="bulk-dismiss-filtered").disabled
    at.checkbox(key=f"pick-{made['switch']}").check().run()
    at.checkbox(key=f"pick-{made['polarity']}").check().run()
    at.button(key="bulk-dismiss-selected").click().run()
    assert not at.exception, at.exception
    with MemoryBank.open(path, embedder=embedder) as bank:
        status = {k: bank.conflict(made[k]).status for k in ("switch", "polarity", "value_change")}
        assert status == {"switch": "dismissed", "polarity": "dismissed", "value_change": "open"}
        assert bank.conflict(made["switch"]).group_id == bank.conflict(made["polarity"]).group_id
    assert _headings(at) == ["value_change"]
    assert any("Dismissed 2 conflicts" in t.value for t in at.toast)
    assert _top_box_first(at, "Dismissed 2 conflicts")
    at.button(key="undo-last").click().run()
    assert not at.exception, at.exception
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert {bank.conflict(made[k]).status for k in ("switch", "polarity", "value_change")} == {"open"}
    assert _headings(at) == ["switch", "value_change", "polarity"]
    assert "undo-last" not in [b.key for b in at.button]


def test_conflicts_bulk_dismiss_of_the_filtered_needs_confirmation(tmp_path, embedder, monkeypatch):
    path = tmp_path / "conflicts-bulk-filtered.duckdb"
    made = _triage_bank(path, embedder)
    at = _app(path, monkeypatch, "dashboard/conflicts.py")
    at.slider(key="min_confidence").set_value(0.6).run()
    assert at.button(key="bulk-dismiss-filtered").disabled
    at.checkbox(key="bulk-confirm").check().run()
    at.button(key="bulk-dismiss-filtered").click().run()
    assert not at.exception, at.exception
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.conflict(made["switch"]).status == "dismissed"
        assert bank.conflict(made["value_change"]).status == "dismissed"
        assert bank.conflict(made["polarity"]).status == "open"  # below the filter: untouched


def test_conflicts_confirmation_of_one_card_is_above_the_cards(tmp_path, embedder, monkeypatch):
    path = tmp_path / "conflicts-top.duckdb"
    made = _triage_bank(path, embedder)
    at = _app(path, monkeypatch, "dashboard/conflicts.py")
    at.button(key=f"resolve-{made['polarity']}-dismiss").click().run()  # the last card on the page
    assert not at.exception, at.exception
    message = f"Conflict {made['polarity']} resolved: Dismiss."
    assert any(message in t.value for t in at.toast) and _top_box_first(at, message)
    at.button(key="undo-last").click().run()
    assert any("Undone" in t.value for t in at.toast)
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.conflict(made["polarity"]).status == "open"


def test_conflicts_detection_button_runs(tmp_path, embedder, monkeypatch):
    path = tmp_path / "conflicts-detect.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add_many([{"text": "Works night shifts", "namespace": "bob"}])
    at = _app(path, monkeypatch, "dashboard/conflicts.py")
    assert any("No open conflicts" in i.value for i in at.info)
    next(b for b in at.button if b.label == "Run detection now").click().run()
    assert not at.exception, at.exception
    assert any("Detection found" in s.value for s in at.success)


# -- merges -------------------------------------------------------------------------------------

def _dupes_bank(path: Path, embedder, text: str = "Prefers dark mode in every editor") -> list[int]:
    with MemoryBank.open(path, embedder=embedder) as bank:
        return bank.add_many([
            {"text": text, "namespace": "bob", "importance": 0.6, "created_at": ago(40)},
            {"text": text, "namespace": "bob", "importance": 0.5, "created_at": ago(20)},
            {"text": "Works night shifts at the hospital", "namespace": "bob", "created_at": ago(5)},
        ], dedupe=False)  # the same text twice on purpose: an exact duplicate to merge


def test_merge_from_the_page_then_undo(tmp_path, embedder, monkeypatch):
    path = tmp_path / "merge-one.duckdb"
    a, b, other = _dupes_bank(path, embedder)
    at = _app(path, monkeypatch, "dashboard/merges.py")
    key = f"{a}-{b}"
    assert at.text_area(key=f"merge-text-{key}").value == "Prefers dark mode in every editor"
    at.text_area(key=f"merge-text-{key}").input("Prefers dark mode in all editors").run()
    at.button(key=f"merge-{key}").click().run()
    assert not at.exception, at.exception
    with MemoryBank.open(path, embedder=embedder) as bank:
        [record] = bank.merges()
        assert record.member_ids == (a, b) and record.path == "manual"
        new = bank.get(record.merged_id)
        assert new.text == "Prefers dark mode in all editors" and new.status == "active"
        assert bank.get(a).status == "merged" and bank.get(other).status == "active"
    assert any("Merged 2 memories" in s.value for s in at.success)
    assert "Prefers dark mode in all editors" in _plain_texts(at)  # listed under past merges

    at.button(key=f"undo-merge-{record.id}").click().run()
    assert not at.exception, at.exception
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.merges()[0].undone_at is not None
        assert bank.get(a).status == "active" and bank.get(b).status == "active"
        assert bank.count(namespace="bob") == 3
        with pytest.raises(Exception):
            bank.get(record.merged_id)
    assert at.button(key=f"merge-{key}")  # the cluster is a candidate again


def test_merge_all_and_markup_shown_literally(tmp_path, embedder, monkeypatch):
    path = tmp_path / "merge-all.duckdb"
    a, b, _ = _dupes_bank(path, embedder, text=MARKUP)
    at = _app(path, monkeypatch, "dashboard/merges.py")
    assert MARKUP in _plain_texts(at)
    assert "<b>x</b>" not in _markdown(at)
    at.button(key="merge-all").click().run()
    assert not at.exception, at.exception
    with MemoryBank.open(path, embedder=embedder) as bank:
        [record] = bank.merges()
        assert record.member_ids == (a, b) and bank.get(record.merged_id).text == MARKUP
    assert any("No merge candidates" in i.value for i in at.info)


def test_merges_opens_where_there_is_something_to_merge_until_the_user_picks(tmp_path, embedder, monkeypatch):
    """alice (the largest, listed first) has nothing to merge, bob has a cluster: the page opens on
    bob, as the Overview counts; a namespace the user picked, here or on another page, is kept."""
    path = tmp_path / "merge-where.duckdb"
    _dupes_bank(path, embedder)
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add_many([{"text": text, "namespace": "alice"} for text in (
            "Drinks tea every morning", "Moved to Berlin in August", "Has a cat called Miso", "Plays the cello")])
        assert [ns for ns, _ in bank.namespaces()] == ["alice", "bob"]
    at = _app(path, monkeypatch, "dashboard/merges.py")
    assert at.selectbox(key="namespace").value == "bob"
    assert "Candidate clusters in bob (1)" in [s.value for s in at.subheader]

    at.selectbox(key="namespace").select("alice").run()  # the user's choice ...
    at.switch_page("dashboard/overview.py").run()
    at.switch_page("dashboard/merges.py").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="namespace").value == "alice"  # ... is where the page opens again

    at = _app(path, monkeypatch, "dashboard/browse.py")  # a new session picks alice on another page
    at.selectbox(key="browse_namespace").select("alice").run()
    at.switch_page("dashboard/merges.py").run()
    assert at.selectbox(key="namespace").value == "alice"


def test_merges_across_all_namespaces_show_why_each_cluster_was_suggested(tmp_path, embedder, monkeypatch):
    path = tmp_path / "merge-all-namespaces.duckdb"
    a, b, _ = _dupes_bank(path, embedder)
    with MemoryBank.open(path, embedder=embedder) as bank:
        c, d = bank.add_many([{"text": "Runs 5 km every morning", "namespace": "carol"},
                              {"text": "Runs 5 km every morning", "namespace": "carol"}], dedupe=False)
    at = _app(path, monkeypatch, "dashboard/merges.py")
    at.selectbox(key="namespace").select("(all)").run()
    assert not at.exception, at.exception
    assert "Candidate clusters in all namespaces (2)" in [s.value for s in at.subheader]
    assert {f"merge-{a}-{b}", f"merge-{c}-{d}"} <= {button.key for button in at.button}
    captions = [cap.value for cap in at.caption]
    assert "namespace bob" in captions and "namespace carol" in captions
    why = [cap for cap in captions if cap.startswith("Why suggested")]
    assert len(why) == 2 and all("cosine 1.00 lowest" in w for w in why)
    assert any("shared numbers: 5" in w and "languages: en" in w for w in why)
    assert any("dark" in w.split("shared words: ")[1] for w in why)
    headings = [m.value for m in at.markdown if m.value.startswith("#### Cluster")]
    assert all("confidence 1.00" in h for h in headings)
    at.button(key=f"merge-{c}-{d}").click().run()
    assert not at.exception, at.exception
    with MemoryBank.open(path, embedder=embedder) as bank:
        [record] = bank.merges()
        assert record.member_ids == (c, d) and bank.get(record.merged_id).namespace == "carol"


def test_merges_on_the_default_model_come_from_the_classifier_with_its_confidence(tmp_path, monkeypatch):
    from memory_core.embedding.embedder import get_embedder

    path = tmp_path / "merge-classifier.duckdb"
    others = ["Lives in Lisbon", "Works as a nurse", "Has two cats", "Plays the cello", "Drives an old Volvo",
              "Reads crime novels before bed", "Takes the train to work", "Grows tomatoes on the balcony"]
    with MemoryBank.open(path, embedder=get_embedder()) as bank:  # multilingual-e5-small, the default
        ids = bank.add_many([{"text": t, "namespace": "ann"} for t in
                             [*others, "Prefers tea to coffee", "Prefers tea over coffee"]])
    tea = f"merge-{ids[-2]}-{ids[-1]}"
    at = _app(path, monkeypatch, "dashboard/merges.py")
    assert [b.key for b in at.button if b.key and b.key.startswith("merge-") and b.key != "merge-all"] == [tea]
    [heading] = [m.value for m in at.markdown if m.value.startswith("#### Cluster")]
    assert "near duplicate · confidence 0.8" in heading or "near duplicate · confidence 0.9" in heading
    assert not [s for s in at.slider if s.key == "merge_threshold"]  # a cosine bar only when asked for
    at.checkbox(key="merge_threshold_on").check().run()
    assert not at.exception, at.exception
    at.slider(key="merge_threshold").set_value(0.99).run()
    assert any("No merge candidates" in i.value and "0.99" in i.value for i in at.info)


def test_cluster_signals_say_what_the_members_share(embedder):
    from memory_core.curation import merge

    texts = ["Has 2 cats at home", "Has 2 cats at home in Oslo", "Has 3 cats at home"]
    members = [merge.Candidate(i, t, str(i), embedder.encode_one(t), 0.5, ago(1), 0, "explicit", "fact")
               for i, t in enumerate(texts)]
    signals = merge.cluster_signals(members[:2])
    assert signals["shared_numbers"] == ["2"] and signals["numbers_only_in_some"] == []
    assert "cat" in " ".join(signals["shared_words"]) and 0.5 < signals["min_cosine"] <= signals["mean_cosine"] <= 1
    assert merge.cluster_signals([members[0], members[2]])["numbers_only_in_some"] == ["2", "3"]
    with pytest.raises(Exception, match="two or more"):
        merge.cluster_signals(members[:1])


def test_merges_threshold_slider_changes_the_candidates(tmp_path, embedder, monkeypatch):
    path = tmp_path / "merge-slider.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add_many([{"text": "Works night shifts", "namespace": "bob"},
                       {"text": "Likes hiking in the Alps", "namespace": "bob"}])
    at = _app(path, monkeypatch, "dashboard/merges.py")
    assert any("No merge candidates" in i.value for i in at.info)
    at.checkbox(key="merge_related_on").check().run()
    assert not at.exception, at.exception


# -- maintenance --------------------------------------------------------------------------------

def _expiry_bank(path: Path, embedder) -> tuple[int, int]:
    with MemoryBank.open(path, embedder=embedder) as bank:
        old, keep = bank.add_many([
            {"text": "Asked about a parking ticket once", "namespace": "alice", "importance": 0.2,
             "created_at": ago(400)},
            {"text": "Prefers tea in the morning", "namespace": "alice", "importance": 0.8, "created_at": ago(10)},
        ])
    return old, keep


def test_maintenance_dry_run_changes_nothing_then_apply_archives(tmp_path, embedder, monkeypatch):
    path = tmp_path / "maintenance.duckdb"
    old, keep = _expiry_bank(path, embedder)
    at = _app(path, monkeypatch, "dashboard/maintenance.py")
    assert not at.dataframe  # nothing previewed yet

    at.button(key="m_dry").click().run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert list(table["action"]) == ["expire"] and list(table["memories"]) == [str(old)]
    assert "Asked about a parking ticket once" in table["why"].iloc[0] and table["durability"].iloc[0] == "transient"
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.get(old).status == "active" and bank.get(keep).status == "active"
        assert [r["dry_run"] for r in bank.maintenance_runs()] == [True]

    at.button(key="m_apply").click().run()
    assert not at.exception, at.exception
    assert any("Maintenance applied" in s.value for s in at.success)
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.get(old).status == "archived" and bank.get(keep).status == "active"
        runs = bank.maintenance_runs(include_dry_runs=False)
        assert len(runs) == 1 and runs[0]["report"]["counts"]["expired"] == 1
    assert any(e.label.startswith(f"Run {runs[0]['id']} ") and "applied" in e.label for e in at.expander)


def test_maintenance_plan_inputs_change_the_dry_run(tmp_path, embedder, monkeypatch):
    path = tmp_path / "maintenance-plan.duckdb"
    old, _ = _expiry_bank(path, embedder)
    at = _app(path, monkeypatch, "dashboard/maintenance.py")
    at.number_input(key="m_transient_after").set_value(500.0).run()  # the old log is 400 days old
    at.button(key="m_dry").click().run()
    assert not at.exception, at.exception
    assert any("Nothing to change" in i.value for i in at.info)
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.get(old).status == "active"
        assert bank.maintenance_runs()[0]["plan"]["transient_after_days"] == 500.0


def test_maintenance_hard_expiry_needs_confirmation(tmp_path, embedder, monkeypatch):
    path = tmp_path / "maintenance-hard.duckdb"
    _expiry_bank(path, embedder)
    at = _app(path, monkeypatch, "dashboard/maintenance.py")
    at.selectbox(key="m_action").select("hard").run()
    at.button(key="m_dry").click().run()
    assert at.button(key="m_apply").disabled
    at.checkbox(key="m_confirm_hard").check().run()
    assert not at.button(key="m_apply").disabled


def _transient_bank(path: Path, embedder) -> dict[str, int]:
    with MemoryBank.open(path, embedder=embedder) as bank:
        ids = bank.add_many([
            {"text": "Has a cold today", "namespace": "alice", "created_at": ago(10)},
            {"text": "Asked how to rebase a branch", "namespace": "alice", "created_at": ago(60)},
            {"text": "Allergic to peanuts", "namespace": "alice", "created_at": ago(400)},
        ])
    return dict(zip(("cold", "log", "peanuts"), ids))


def test_maintenance_applies_only_after_a_dry_run_of_the_same_settings(tmp_path, embedder, monkeypatch):
    path = tmp_path / "maintenance-gate.duckdb"
    _transient_bank(path, embedder)
    at = _app(path, monkeypatch, "dashboard/maintenance.py")
    assert at.button(key="m_apply").disabled  # no dry run yet
    at.button(key="m_dry").click().run()
    assert not at.button(key="m_apply").disabled
    at.number_input(key="m_day").set_value(30.0).run()  # a setting changed since the dry run
    assert at.button(key="m_apply").disabled
    assert any("settings changed since the dry run" in w.value for w in at.warning)
    at.button(key="m_dry").click().run()
    assert not at.button(key="m_apply").disabled


def test_maintenance_rows_say_why_and_can_be_left_out(tmp_path, embedder, monkeypatch):
    path = tmp_path / "maintenance-rows.duckdb"
    ids = _transient_bank(path, embedder)
    at = _app(path, monkeypatch, "dashboard/maintenance.py")
    at.button(key="m_dry").click().run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert sorted(table["memories"]) == sorted([str(ids["cold"]), str(ids["log"])])
    assert set(table["durability"]) == {"transient"} and all(table["age (days)"] > 0)
    assert set(table["last used"]) == {"never"} and all("transient" in w for w in table["why"])
    review = at.dataframe[1].value  # the old durable fact: listed, never expired
    assert list(review["memories"]) == [str(ids["peanuts"])] and "review" in review["why"].iloc[0]
    at.multiselect(key="m_leave_out").select(f"expire:{ids['cold']}").run()
    at.button(key="m_apply").click().run()
    assert not at.exception, at.exception
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.get(ids["cold"]).status == "active"  # left out
        assert bank.get(ids["log"]).status == "archived" and bank.get(ids["peanuts"]).status == "active"


def test_maintenance_past_runs_can_be_undone_from_the_page(tmp_path, embedder, monkeypatch):
    path = tmp_path / "maintenance-undo.duckdb"
    ids = _transient_bank(path, embedder)
    at = _app(path, monkeypatch, "dashboard/maintenance.py")
    at.button(key="m_dry").click().run()
    at.button(key="m_apply").click().run()
    with MemoryBank.open(path, embedder=embedder) as bank:
        [run] = bank.maintenance_runs(include_dry_runs=False)
        assert bank.get(ids["log"]).status == "archived"
    assert [b.key for b in at.button if b.key.startswith("m_undo_")] == [f"m_undo_{run['id']}"]  # not the dry run
    at.button(key=f"m_undo_{run['id']}").click().run()
    assert not at.exception, at.exception
    assert any(f"Run {run['id']} undone" in s.value for s in at.success)
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert [bank.get(i).status for i in ids.values()] == ["active"] * 3
    assert f"m_undo_{run['id']}" not in [b.key for b in at.button]
    assert any(e.label.startswith(f"Run {run['id']} ") and "undone" in e.label for e in at.expander)


def test_merges_of_a_large_namespace_wait_until_asked(tmp_path, embedder, monkeypatch):
    """A large namespace is searched for merge candidates only once the operator ticks the box
    (every pair is compared); then its clusters show as for any namespace."""
    from memory_core.curation import merge

    path = tmp_path / "merge-large.duckdb"
    a, b, _ = _dupes_bank(path, embedder)
    monkeypatch.setattr(merge, "LARGE_NAMESPACE", 3)
    at = _app(path, monkeypatch, "dashboard/merges.py")
    assert f"merge-{a}-{b}" not in [button.key for button in at.button]
    assert any("bob holds 3 memories" in i.value for i in at.info)
    at.checkbox(key="merge_large::bob").check().run()
    assert not at.exception, at.exception
    assert f"merge-{a}-{b}" in [button.key for button in at.button]
    at.selectbox(key="namespace").select("(all)").run()  # all namespaces: a large one is named, not searched
    assert not at.exception, at.exception
    assert any("Not searched here" in cap.value and "bob" in cap.value for cap in at.caption)
    assert f"merge-{a}-{b}" not in [button.key for button in at.button]


def test_many_conflicts_are_shown_a_page_at_a_time(tmp_path, embedder, monkeypatch):
    """1,600 open conflicts drawn at once took minutes; a page of them is drawn, the rest a pick away."""
    path = tmp_path / "bank.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        ids = bank.add_many([{"text": f"Lives in city number {i}", "namespace": "alice", "created_at": ago(50 - i)}
                             for i in range(46)])
        bank.record_conflicts([{"a_id": ids[i], "b_id": ids[i + 1], "kind": "value_change", "evidence": f"pair {i}",
                                "confidence": 0.7, "suggestion": "newer_wins", "path": "rules"} for i in range(45)])
    at = _app(path, monkeypatch, "dashboard/conflicts.py")
    headings = [m.value for m in at.markdown if m.value.startswith("#### Conflict")]
    assert len(headings) == 20 and "Open conflicts (45)" in [s.value for s in at.subheader]
    at.selectbox(key="conflicts_page").set_value(3).run()
    assert not at.exception, at.exception
    last = [m.value for m in at.markdown if m.value.startswith("#### Conflict")]
    assert len(last) == 5 and not set(last) & set(headings)


def test_many_merge_clusters_are_shown_a_page_at_a_time(tmp_path, embedder, monkeypatch):
    path = tmp_path / "bank.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add_many([{"text": f"Prefers {thing} in the morning", "namespace": "bob", "created_at": ago(d)}
                       for thing in ("tea", "coffee", "juice", "cocoa", "water", "milk", "yoghurt", "porridge", "toast",
                                     "eggs", "muesli", "fruit", "bacon", "pancakes", "waffles", "bagels", "croissants",
                                     "oatmeal", "cereal", "smoothies", "kefir", "granola")
                       for d in (30, 10)], dedupe=False)
    at = _app(path, monkeypatch, "dashboard/merges.py")
    clusters = [m.value for m in at.markdown if m.value.startswith("#### Cluster")]
    assert len(clusters) == 20 and any(s.key == "merges_page" for s in at.selectbox)
