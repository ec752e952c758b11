"""The Tune page: live what-if ranking, threshold, stacked bars that add up to Hit.score, presets."""

from __future__ import annotations

import base64
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from memory_core import MemoryBank, ScoringParams
from memory_core.embedding.embedder import model_defaults

APP = str(Path(__file__).resolve().parent.parent / "app.py")
PAGE = "dashboard/tune.py"
QUERY = "what food does she like for dinner"
# The threshold the Tune page draws for QUERY: the default's, moved for an English question on the
# default model (scoring.for_language).
HELD = ScoringParams().threshold + model_defaults(None).language_threshold.get("en", 0.0)


@pytest.fixture
def tune_bank(tmp_path, embedder, monkeypatch):
    """A small bank (its own path per test: AppTest shares the cached bank per path) with a logged recall."""
    path = tmp_path / "tune.duckdb"
    now = datetime.now(timezone.utc)
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add("Prefers vegetarian food for dinner", namespace="alice", importance=0.3, category="preference")
        bank.add("Her daughter is called Mia", namespace="alice", importance=1.0, category="fact",
                 created_at=now - timedelta(days=120))
        bank.add("Moved to Berlin in August", namespace="alice", importance=0.5)
        bank.add("Is learning to play the cello", namespace="alice", importance=0.6,
                 created_at=now - timedelta(days=30))
        bank.add("Works night shifts", namespace="bob")
        bank.recall("vegetarian dinner ideas", namespace="alice")  # logged, counts accesses
        bank.recall("where does she live", namespace="alice")
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    return path


def open_tune(query: str | None = QUERY) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page(PAGE).run()
    assert not at.exception
    if query:
        at.text_input(key="tune_query").input(query).run()
        assert not at.exception
    return at


def chart(at: AppTest) -> dict:
    charts = at.get("plotly_chart")
    assert charts, "no plotly chart on the page"
    return json.loads(charts[-1].proto.spec)


def values(x) -> list[float]:
    if isinstance(x, dict) and "bdata" in x:  # plotly's typed-array encoding
        return np.frombuffer(base64.b64decode(x["bdata"]), dtype=np.dtype(x["dtype"])).tolist()
    return [float(v) for v in x]


def bar_totals(at: AppTest) -> dict[int, float]:
    """Memory id → the sum of its stacked bar segments."""
    totals: dict[int, float] = {}
    for trace in chart(at)["data"]:
        for label, x in zip(trace["y"], values(trace["x"])):
            mid = int(label.split("#", 1)[1].split()[0])
            totals[mid] = totals.get(mid, 0.0) + x
    return totals


def frames(at: AppTest) -> tuple:
    """The candidate table, then the active preset's top k and these settings' top k."""
    values_ = [d.value for d in at.dataframe]
    i = next(i for i, v in enumerate(values_) if "total" in v.columns)
    return values_[i], values_[i + 1], values_[i + 2]


def ranking(at: AppTest) -> list[int]:
    return list(frames(at)[0]["id"])


def set_sliders(at: AppTest, **values_: float) -> AppTest:
    for field, value in values_.items():
        at.slider(key=f"tune_{field}").set_value(value)
    at.run()
    assert not at.exception
    return at


def snapshot(path) -> tuple:
    with MemoryBank.open(path) as bank:
        counts = {m.id: (m.access_count, m.last_accessed_at) for m in bank.memories(namespace=None, limit=100)}
        return counts, bank.retrievals(limit=100), bank.stats()["change_seq"]


def test_page_renders_with_the_active_preset(tune_bank):
    at = open_tune(query=None)
    assert at.title[0].value == "Tune recall"
    assert at.selectbox(key="tune_preset").value == "default"
    assert at.slider(key="tune_alpha").value == pytest.approx(0.7)
    assert at.slider(key="tune_k").value == 5
    assert "vegetarian dinner ideas" in at.selectbox(key="tune_logged").options
    at = open_tune()
    assert len(ranking(at)) == 4
    assert chart(at)["layout"]["shapes"][0]["x0"] == pytest.approx(HELD)  # the threshold line, for its language


def test_the_threshold_label_sits_above_the_bars(tune_bank):
    """The label is drawn in the margin above the plot area: inside it, it covered the top bars."""
    layout = chart(open_tune())["layout"]
    [label] = [a for a in layout["annotations"] if "threshold" in a["text"]]
    assert label["text"] == f"threshold {HELD:.2f}"
    assert label["x"] == pytest.approx(HELD) and label["xref"] == "x"
    assert (label["yref"], label["y"], label["yanchor"]) == ("paper", 1, "bottom")  # above the plot area
    assert layout["margin"]["t"] >= 30  # with room for it


def test_a_logged_query_can_be_picked(tune_bank):
    at = open_tune(query=None)
    at.selectbox(key="tune_logged").select("vegetarian dinner ideas").run()
    assert not at.exception
    assert ranking(at)[0] == 1  # Prefers vegetarian food


def test_moving_weights_reorders_the_ranking_as_the_formula_says(tune_bank):
    at = open_tune()
    assert ranking(at)[0] == 1  # relevance dominates: vegetarian food
    set_sliders(at, alpha=0.0, beta=0.0, gamma=1.0, delta=0.0)
    ranked = ranking(at)
    assert ranked[0] == 2  # importance only: the most important memory (Mia, 1.0) first
    assert ranked == [2, 4, 3, 1]  # by importance 1.0, 0.6, 0.5, 0.3
    set_sliders(at, alpha=1.0, gamma=0.0)
    assert ranking(at)[0] == 1


def test_bar_totals_equal_hit_scores(tune_bank, embedder):
    at = open_tune()
    set_sliders(at, alpha=0.5, beta=0.3, gamma=0.4, delta=0.2, tier_hot=0.8, tier_warm=0.6, tier_cold=0.5,
                half_life_days=20.0)
    totals = bar_totals(at)
    table = frames(at)[0]
    with MemoryBank.open(tune_bank, embedder=embedder) as bank:
        p = bank.preset("default").replace(alpha=0.5, beta=0.3, gamma=0.4, delta=0.2, tier_hot=0.8, tier_warm=0.6,
                                           tier_cold=0.5, half_life_days=20.0, threshold=0.0, k=15)
        hits = bank.recall(QUERY, namespace="alice", params=p, record=False)
    assert set(totals) == {h.memory.id for h in hits} == set(table["id"])
    page_scores = dict(zip(table["id"], table["score"]))  # the page's Hit.score, unrounded
    for h in hits:
        assert totals[h.memory.id] == pytest.approx(page_scores[h.memory.id], rel=1e-12, abs=1e-12)
        # and the same as a recall made here (a few seconds later: recency moved a hair)
        assert totals[h.memory.id] == pytest.approx(h.score, abs=1e-6)
    assert all(h.components["tier"] < 1 for h in hits)  # the tier multiplier is inside the bars too


def test_threshold_at_max_empties_the_in_set(tune_bank, embedder):
    at = open_tune()
    assert frames(at)[0]["in"].any()
    set_sliders(at, threshold=1.0)
    table = frames(at)[0]
    assert len(table) == 4 and not table["in"].any()
    assert frames(at)[2].empty
    assert not frames(at)[1].empty
    assert any("leaves" in t.value for t in at.text)  # memory text shown as text, not markdown
    # every logged query the active preset returns something for comes back empty now
    with MemoryBank.open(tune_bank, embedder=embedder) as bank:
        answered = sum(bool(bank.recall(q, namespace="alice", record=False))
                       for q in ("vegetarian dinner ideas", "where does she live"))
    assert answered >= 1 and at.metric[-1].value == f"{answered} of 2"


def test_k_limits_the_in_set_and_replay_counts_no_change_at_the_active_settings(tune_bank):
    at = open_tune()
    assert at.metric[-1].value == "0 of 2"
    set_sliders(at, threshold=0.0, k=2)
    table = frames(at)[0]
    assert list(table["in"]) == [True, True, False, False]


def test_save_preset_then_make_it_active(tune_bank, embedder):
    before = snapshot(tune_bank)[:2]
    at = open_tune()
    set_sliders(at, alpha=0.2, gamma=0.9, threshold=0.3)
    at.text_input(key="tune_save_name").input("importance-first").run()
    at.button(key="tune_save").click().run()
    assert not at.exception
    assert "Saved preset 'importance-first'" in at.success[0].value
    with MemoryBank.open(tune_bank, embedder=embedder) as bank:
        saved = bank.presets()["importance-first"]
        assert (saved.alpha, saved.gamma, saved.threshold) == (0.2, 0.9, 0.3)
        assert bank.active_preset()[0] == "default"
    assert "importance-first" in at.selectbox(key="tune_preset").options

    at.selectbox(key="tune_activate_name").select("importance-first").run()
    at.button(key="tune_activate").click().run()
    assert not at.exception
    assert "'importance-first' is now active" in at.success[0].value
    with MemoryBank.open(tune_bank, embedder=embedder) as bank:
        assert bank.active_preset()[0] == "importance-first"
        event = bank.events(limit=1)[0]
        assert event.action == "set_active_preset" and event.after == {"name": "importance-first"}
    # tuning and preset changes never touch access counts or the retrieval log
    assert snapshot(tune_bank)[:2] == before


def test_saving_a_builtin_name_shows_a_readable_error(tune_bank):
    at = open_tune()
    at.text_input(key="tune_save_name").input("default").run()
    at.button(key="tune_save").click().run()
    assert not at.exception
    assert any("built-in" in e.value for e in at.error)


def test_switching_preset_loads_its_values(tune_bank):
    at = open_tune()
    at.selectbox(key="tune_preset").select("generative-agents").run()
    assert not at.exception
    assert at.slider(key="tune_alpha").value == pytest.approx(0.6)
    assert at.slider(key="tune_k").value == 3
    assert at.slider(key="tune_threshold").value == pytest.approx(0.43)  # generative-agents on e5's scale


def test_using_the_page_changes_no_access_counts_or_retrievals(tune_bank):
    before = snapshot(tune_bank)
    at = open_tune()
    set_sliders(at, alpha=0.1, beta=0.9, threshold=0.0, k=1)
    at.selectbox(key="tune_logged").select("vegetarian dinner ideas").run()
    at.date_input(key="tune_as_of").set_value(datetime.now(timezone.utc).date() - timedelta(days=60)).run()
    assert not at.exception
    assert 1 not in ranking(at)  # created today: unseen as of 60 days ago
    assert snapshot(tune_bank) == before


# -- labels, live metrics, tuning from labels, replay ------------------------------------------------


def mark(at: AppTest, memory_id: int, choice: str) -> AppTest:
    radio = next(r for r in at.radio if r.key and r.key.startswith("tune_mark_") and r.key.endswith(f"_{memory_id}"))
    radio.set_value(choice).run()
    assert not at.exception
    return at


def test_marking_results_writes_labels_and_shows_live_metrics(tune_bank, embedder):
    at = open_tune()
    assert any("label set 'default' is empty" in i.value for i in at.info)
    before = snapshot(tune_bank)[:2]
    mark(at, 1, "relevant")
    mark(at, 3, "not relevant")
    with MemoryBank.open(tune_bank, embedder=embedder) as bank:
        [q] = bank.labels(set_name="default")
        assert (q.namespace, q.query, q.relevant, q.irrelevant, q.as_of) == ("alice", QUERY, (1,), (3,), None)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["precision@k"] != "n/a" and "recall@k" in metrics
    # at the active settings, the live figures are the library's evaluation of the set
    from memory_core.evaluation import tuning
    with MemoryBank.open(tune_bank, embedder=embedder) as bank:
        expected = tuning.prepare(bank, bank.labels(set_name="default")).evaluate(bank.active_preset()[1])
    assert metrics["precision@k"] == f"{expected.precision:.3f}"
    assert metrics["recall@k"] == f"{expected.recall:.3f}"
    # the figures follow the sliders: a closed threshold returns nothing, so recall drops to 0
    set_sliders(at, threshold=1.0)
    assert {m.label: m.value for m in at.metric}["recall@k"] == "0.000"
    mark(at, 1, "unlabeled")
    with MemoryBank.open(tune_bank, embedder=embedder) as bank:
        assert bank.labels()[0].relevant == () and bank.labels()[0].irrelevant == (3,)
    assert snapshot(tune_bank)[:2] == before  # labeling counts no access and logs no recall


def test_tune_button_proposes_then_save_and_activate_are_separate_clicks(tune_bank, embedder):
    with MemoryBank.open(tune_bank, embedder=embedder) as bank:
        bank.import_labels([
            {"namespace": "alice", "query": "what food does she like for dinner", "relevant": [1]},
            {"namespace": "alice", "query": "vegetarian dinner ideas", "relevant": [1]},
            {"namespace": "alice", "query": "what is her daughter's name", "relevant": [2]},
            {"namespace": "alice", "query": "which instrument is she learning", "relevant": [4]},
            {"namespace": "alice", "query": "what's the capital of Australia?", "relevant": []},
            {"namespace": "alice", "query": "how far is the moon?", "relevant": []},
        ], set_name="team")
        # threshold 0 returns five memories for every turn, the off-topic ones too: there is room to improve
        bank.set_active_preset("weighted-recall")
    at = open_tune()
    at.selectbox(key="tune_label_set").select("team").run()
    at.number_input(key="tune_folds").set_value(2).run()
    at.number_input(key="tune_trials").set_value(20).run()
    at.button(key="tune_run").click().run()
    assert not at.exception
    assert any("on held-out folds" in m.value for m in at.markdown)
    scores = next(d.value for d in at.dataframe if "f_beta" in d.value.columns)
    assert list(scores[""]) == ["proposal (held out)", "active weighted-recall"]
    assert scores["f_beta"][0] >= scores["f_beta"][1]
    with MemoryBank.open(tune_bank, embedder=embedder) as bank:
        assert bank.active_preset()[0] == "weighted-recall" and "tuned-f0.5" not in bank.presets()
    assert at.button(key="tune_proposal_activate").disabled  # nothing saved yet, nothing to activate
    at.button(key="tune_proposal_save").click().run()
    assert not at.exception
    assert "It is not active" in at.success[0].value
    with MemoryBank.open(tune_bank, embedder=embedder) as bank:
        assert "tuned-f0.5" in bank.presets() and bank.active_preset()[0] == "weighted-recall"
    at.button(key="tune_proposal_activate").click().run()
    assert not at.exception
    with MemoryBank.open(tune_bank, embedder=embedder) as bank:
        assert bank.active_preset()[0] == "tuned-f0.5"


def test_replay_panel_reports_changes_without_side_effects(tune_bank):
    before = snapshot(tune_bank)
    at = open_tune()
    set_sliders(at, threshold=1.0)
    at.button(key="tune_replay_run").click().run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["recalls replayed"] == "2"
    # at threshold 1 every logged recall that returned something comes back empty
    with MemoryBank.open(tune_bank, read_only=True) as bank:
        answered = sum(bool(r["hits"]) for r in bank.retrievals(limit=None))
    assert answered >= 1 and metrics["become empty"] == metrics["results that change"] == str(answered)
    rows = next(d.value for d in at.dataframe if "logged" in d.value.columns)
    assert set(rows["now"]) == {"(empty)"}
    assert snapshot(tune_bank) == before


def test_frequency_from_control_ranks_by_uses_and_is_saved_with_the_preset(tune_bank, embedder):
    """The δ-frequency choice beside the sliders: "uses" ranks by what feedback said the answers used,
    and a preset saved from the page keeps it."""
    with MemoryBank.open(tune_bank, embedder=embedder) as bank:
        recalled = {m.id: m.access_count for m in bank.memories(namespace="alice", limit=None)}
        logged = bank.retrievals(namespace="alice", limit=None)
        returned = {h["memory_id"] for r in logged for h in r["hits"]}
        # the returned memory that ranks last by retrievals (fewest recalls, then the larger id) is used
        used = min(returned, key=lambda mid: (recalled[mid], -mid))
        rid = next(r["id"] for r in logged if used in {h["memory_id"] for h in r["hits"]})
        bank.feedback(rid, used_ids=[used])
    at = open_tune()
    assert at.radio(key="tune_frequency_from").value == "retrievals"
    set_sliders(at, alpha=0.0, beta=0.0, gamma=0.0, delta=1.0)  # frequency alone decides
    table = frames(at)[0]
    for mid, part in zip(table["id"], table["δ·frequency"]):  # default base 0.5, step 0.1
        assert part == pytest.approx(min(1.0, 0.5 + 0.1 * recalled[mid]))
    at.radio(key="tune_frequency_from").set_value("uses").run()
    assert not at.exception
    table = frames(at)[0]
    assert ranking(at)[0] == used
    for mid, part in zip(table["id"], table["δ·frequency"]):
        assert part == pytest.approx(0.6 if mid == used else 0.5)
    at.text_input(key="tune_save_name").input("by-uses").run()
    at.button(key="tune_save").click().run()
    assert not at.exception
    with MemoryBank.open(tune_bank, embedder=embedder) as bank:
        assert bank.presets()["by-uses"].frequency_from == "uses"
    at.selectbox(key="tune_preset").select("by-uses").run()
    assert at.radio(key="tune_frequency_from").value == "uses"
    at.selectbox(key="tune_preset").select("generative-agents").run()
    assert at.radio(key="tune_frequency_from").value == "retrievals"


def test_a_large_namespace_loads_under_a_progress_bar(tmp_path, embedder, monkeypatch):
    """The first ranking of a large namespace loads its index under a progress bar that names the
    namespace and its size and fills up; the ranking follows, and the next query (index loaded)
    shows no bar."""
    import dashboard.common
    import streamlit as st
    from bench._util import unit_vectors
    from memory_core.curation import merge
    from streamlit.delta_generator import DeltaGenerator

    n = 300
    path = tmp_path / "large.duckdb"
    vectors = unit_vectors(n, embedder.dim, seed=5)
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add_many([{"text": f"dinner idea number {i}", "namespace": "alice", "embedding": vectors[i]}
                       for i in range(n)])
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    monkeypatch.setattr(dashboard.common, "LOAD_PROGRESS_MIN", 100)  # 300 memories count as large here
    monkeypatch.setattr(merge, "LARGE_NAMESPACE", 100)  # and the home page leaves them alone
    shown = []
    real, real_st = DeltaGenerator.progress, st.progress

    def progress(self, value, text=None):  # the bar's updates
        shown.append((value, text))
        return real(self, value, text=text)

    def st_progress(value, text=None):  # the bar's creation (st.progress is bound at import)
        shown.append((value, text))
        return real_st(value, text=text)

    monkeypatch.setattr(DeltaGenerator, "progress", progress)
    monkeypatch.setattr(st, "progress", st_progress)
    at = open_tune("dinner idea")
    assert shown, "no progress bar while the namespace's index loaded"
    assert shown[0] == (0.0, f"Loading the index of alice ({n} memories)…")
    assert shown[-1][0] == pytest.approx(1.0)
    assert [v for v, _ in shown] == sorted(v for v, _ in shown)
    assert len(ranking(at)) > 0
    shown.clear()
    at.text_input(key="tune_query").input("another dinner idea").run()
    assert not at.exception
    assert shown == [] and len(ranking(at)) > 0


def test_weights_are_said_to_be_normalised_and_nothing_changed_shows_no_delta(tune_bank, embedder):
    with MemoryBank.open(tune_bank, embedder=embedder) as bank:
        [veg] = bank.memories("alice", contains="vegetarian")
        bank.label("alice", QUERY, veg.id)  # a label set, so the page shows its metrics
    at = open_tune()
    [note] = [c.value for c in at.caption if "divide the weights by their sum" in c.value]
    p = ScoringParams()
    total = p.alpha + p.beta + p.gamma + p.delta
    assert f"α {p.alpha / total:.2f}" in note and f"β {p.beta / total:.2f}" in note
    spec = chart(at)
    assert all(label.split()[1] in ("in", "out") for label in spec["data"][0]["y"])  # words beside the colour
    assert at.metric and all(m.delta in (None, "") for m in at.metric)  # the active preset against itself


def test_a_preset_saved_on_another_model_is_flagged(tune_bank, embedder):
    from memory_core.embedding.embedder import MINILM_MODEL

    with MemoryBank.open(tune_bank, embedder=embedder) as bank:
        bank.save_preset("mine", ScoringParams().replace(threshold=0.3))
    at = open_tune(query=None)
    at.selectbox(key="tune_preset").set_value("mine").run()
    assert not at.warning
    with MemoryBank.open(tune_bank) as bank:
        bank.reembed(MINILM_MODEL)
    at = open_tune(query=None)
    at.selectbox(key="tune_preset").set_value("mine").run()
    assert any("was set on multilingual-e5-small" in w.value for w in at.warning)


def test_the_models_cosine_and_its_own_rank_stand_beside_the_blend(tune_bank, embedder):
    """Item 5 of issue 38: the operator sees the cosine each candidate starts from, its rank by cosine
    alone, and how many of the top k the blend and the cosine agree on."""
    at = open_tune()
    table = frames(at)[0]
    query = embedder.encode([QUERY], kind="query")[0]
    for mid, text, cosine in zip(table["id"], table["text"], table["cosine"]):
        assert cosine == pytest.approx(float(embedder.encode([text])[0] @ query), abs=1e-5)
    by_cosine = table.sort_values("cosine", ascending=False)
    assert list(by_cosine["cosine rank"]) == [1, 2, 3, 4]
    assert "agree on 4" in caption(at, "the model's cosine alone")  # k 5 holds all four memories

    set_sliders(at, alpha=0.0, beta=0.0, gamma=1.0, delta=0.0, k=1)  # importance alone: Mia first
    table = frames(at)[0]
    blend_top, cosine_top = int(table[table["rank"] == 1]["id"].iloc[0]), int(by_cosine["id"].iloc[0])
    assert (blend_top, cosine_top) == (2, 1)
    line = caption(at, "the model's cosine alone")
    mia_cosine_rank = int(table[table["id"] == 2]["cosine rank"].iloc[0])
    assert "Of the top 1, the blend and the model's cosine alone agree on 0." in line
    assert f"brings in #2 (cosine rank {mia_cosine_rank})" in line
    blend_rank_1 = int(table[table["id"] == 1]["rank"].iloc[0])
    assert f"would return #1 (blend rank {blend_rank_1})" in line


def caption(at: AppTest, needle: str) -> str:
    [line] = [c.value for c in at.caption if needle in c.value]
    return line


def test_the_cosine_ranks_follow_a_memory_added_while_the_page_is_open(tune_bank, embedder):
    """The cosine order is kept across slider moves, but not past a change to the namespace."""
    at = open_tune()
    with MemoryBank.open(tune_bank, embedder=embedder) as bank:
        new = bank.add("Loves vegetarian lasagne for dinner", namespace="alice")
    set_sliders(at, k=6)
    table = frames(at)[0]
    assert new in set(table["id"]) and sorted(table["cosine rank"]) == [1, 2, 3, 4, 5]
