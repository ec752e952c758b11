"""Contradictions across languages (issue 31): "Jag äter inte kött" / "I eat meat again" share no
word the rules can read a topic by, yet an operator should see them side by side.

On a model whose vectors are comparable across languages (``ModelDefaults.across_languages``:
multilingual-e5-small, the default), a pair in two languages with exactly one side negated (by its
own language's negators) is offered for review as ``cross_language``, when the two memories are
each other's nearest memory in the other's language. Real banks (DuckDB files, the real models):
the check on add and the maintenance scan both find it; MiniLM (English only) never does; pairs in
one language keep the rules they had. Where a pair's not being flagged is the point, the test first
checks that detection judged the pair at all (it is among the candidates), so the test fails if
the rule or the gate it is about stopped holding.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memory_core import MemoryBank
from memory_core.curation import conflicts
from memory_core.curation.conflicts import MemoryView, judge_rules, negated_across_languages
from memory_core.curation.conflicts.subject import ACROSS_NEGATION, CONFIDENCE
from memory_core.embedding.embedder import E5_MODEL, MINILM_MODEL, get_embedder, model_defaults

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=timezone.utc)
SV_NO_MEAT = "Jag äter inte kött"
EN_MEAT = "I eat meat again"


def ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


@pytest.fixture
def e5_bank(tmp_path):
    with MemoryBank.open(tmp_path / "b.duckdb", embedder=get_embedder(E5_MODEL)) as bank:
        yield bank


@pytest.fixture
def minilm_bank(tmp_path):
    with MemoryBank.open(tmp_path / "b.duckdb", embedder=get_embedder(MINILM_MODEL)) as bank:
        yield bank


def add_in_order(bank: MemoryBank, texts: list[str], namespace: str = "u") -> list[int]:
    """Add one at a time, oldest first (each add runs the contradiction check)."""
    return [bank.add(t, namespace=namespace, created_at=ago(len(texts) - i)) for i, t in enumerate(texts)]


def store_quietly(bank: MemoryBank, texts: list[str], namespace: str = "u") -> list[int]:
    """Store without any check (add_many judges nothing), for the maintenance scan to find."""
    return bank.add_many([{"text": t, "namespace": namespace, "created_at": ago(len(texts) - i)}
                          for i, t in enumerate(texts)])


def flagged(bank: MemoryBank, namespace: str = "u") -> dict[frozenset[int], str]:
    return {frozenset((c.a.id, c.b.id)): c.kind for c in bank.conflicts(namespace=namespace, status=None)}


def judged(bank: MemoryBank, namespace: str = "u") -> set[frozenset[int]]:
    """The pairs detection judges at all in ``namespace`` (near enough in meaning)."""
    band = conflicts.candidate_band(bank.model_defaults.on_model)
    return {frozenset(p) for p in conflicts.pairs_to_judge(*bank.live_vectors(namespace), band=band)}


def test_the_models_say_whether_their_vectors_meet_across_languages() -> None:
    assert model_defaults(E5_MODEL).across_languages
    assert not model_defaults(MINILM_MODEL).across_languages


def test_the_swedish_english_pair_is_flagged_for_review_on_add(e5_bank) -> None:
    sv, _docker, en = add_in_order(e5_bank, [SV_NO_MEAT, "Deploys the backend with Docker", EN_MEAT])
    found = e5_bank.conflicts(namespace="u")
    assert [(c.a.id, c.b.id) for c in found] == [(sv, en)]
    conflict = found[0]
    assert conflict.kind == "cross_language"
    assert conflict.confidence == CONFIDENCE[ACROSS_NEGATION]  # the fitted cell of a negation across languages
    assert conflict.suggestion == "review"
    assert conflict.path == "rules"
    assert "in different languages (Swedish / English), one negated" in conflict.evidence
    # Never resolved by the automatic policy: review means an operator looks.
    assert conflicts.auto_rule(conflict) is None


def test_the_maintenance_scan_finds_it(e5_bank) -> None:
    sv, en = store_quietly(e5_bank, [SV_NO_MEAT, EN_MEAT])
    assert e5_bank.conflicts(namespace="u", status=None) == []
    preview = e5_bank.maintain(now=NOW, steps=["cleanup"], dry_run=True)
    assert e5_bank.conflicts(namespace="u", status=None) == []
    report = e5_bank.maintain(now=NOW, steps=["cleanup"])
    assert flagged(e5_bank) == {frozenset((sv, en)): "cross_language"}
    assert preview.to_dict()["counts"]["conflicts_detected"] == report.to_dict()["counts"]["conflicts_detected"] == 1
    # A second scan knows the pair: nothing new.
    e5_bank.maintain(now=NOW + timedelta(days=8), steps=["cleanup"])
    assert len(e5_bank.conflicts(namespace="u", status=None)) == 1


def test_a_chinese_english_pair_is_flagged(e5_bank) -> None:
    zh, en = add_in_order(e5_bank, ["我不喝咖啡", "I drink coffee every morning"])
    assert flagged(e5_bank) == {frozenset((zh, en)): "cross_language"}
    assert "(Chinese / English)" in e5_bank.conflicts(namespace="u")[0].evidence


@pytest.mark.parametrize("texts", [
    (SV_NO_MEAT, EN_MEAT),
    # MiniLM puts this pair close enough to be judged (and the English-only model's cosine across
    # languages means nothing): only the model's flag keeps it from being flagged.
    ("Jag äter inte sushi", "I eat sushi every week"),
], ids=["meat", "sushi"])
def test_the_english_only_model_flags_no_pair_across_languages(minilm_bank, tmp_path, texts) -> None:
    add_in_order(minilm_bank, list(texts))
    store_quietly(minilm_bank, list(texts), namespace="scan")
    minilm_bank.maintain(now=NOW, steps=["cleanup"])
    assert flagged(minilm_bank) == {}
    assert flagged(minilm_bank, "scan") == {}
    # The same pair on the multilingual model is flagged: the difference is the model's.
    with MemoryBank.open(tmp_path / "e5.duckdb", embedder=get_embedder(E5_MODEL)) as e5:
        ids = add_in_order(e5, list(texts))
        assert flagged(e5) == {frozenset(ids): "cross_language"}


def test_the_sushi_pair_is_judged_under_minilm(minilm_bank) -> None:
    """What makes the MiniLM case above able to fail: detection does judge the pair."""
    ids = store_quietly(minilm_bank, ["Jag äter inte sushi", "I eat sushi every week"])
    assert frozenset(ids) in judged(minilm_bank)


def test_pairs_in_one_language_keep_their_rules(e5_bank) -> None:
    # A Swedish flip with a change word: the polarity rule, as before.
    old, new = add_in_order(e5_bank, [SV_NO_MEAT, "Jag äter kött igen"])
    assert flagged(e5_bank) == {frozenset((old, new)): "polarity"}
    # One side negated, one language, no rule fires: not a conflict, whatever the gate would say.
    no_meat, fish = add_in_order(e5_bank, [SV_NO_MEAT, "Jag äter fisk"], namespace="fish")
    assert frozenset((no_meat, fish)) in judged(e5_bank, "fish")
    assert flagged(e5_bank, "fish") == {}


@pytest.mark.parametrize("older, newer", [
    (SV_NO_MEAT, "Jag äter kött igen"), (SV_NO_MEAT, "Jag äter fisk"), ("I never drink coffee", "I drink tea every morning"),
    ("我不喝咖啡", "我现在每天喝咖啡"), ("Doesn't eat meat", "Eats meat again now"),
])
def test_one_language_verdicts_do_not_depend_on_the_cross_language_gate(older, newer) -> None:
    a = MemoryView(1, older, ago(60), "explicit")
    b = MemoryView(2, newer, ago(1), "explicit")
    assert judge_rules(a, b, across_languages=True) == judge_rules(a, b)
    assert judge_rules(a, b, across_languages=True).kind != "cross_language"


def test_only_the_nearest_memory_in_the_other_language_is_flagged(e5_bank) -> None:
    """"Buys meat at the butcher" is near enough to the Swedish negation to be judged, and not negated,
    but "I eat meat again" is closer: only that pair is each other's nearest across the languages."""
    texts = [SV_NO_MEAT, EN_MEAT, "Deploys the backend with Docker", "Buys meat at the butcher"]
    sv, en, _docker, butcher = add_in_order(e5_bank, texts)
    assert flagged(e5_bank) == {frozenset((sv, en)): "cross_language"}
    # The maintenance scan agrees on a namespace stored without checks.
    sv2, en2, _docker2, butcher2 = store_quietly(e5_bank, texts, namespace="scan")
    assert frozenset((sv2, butcher2)) in judged(e5_bank, "scan")
    e5_bank.maintain(now=NOW, steps=["cleanup"])
    assert flagged(e5_bank, "scan") == {frozenset((sv2, en2)): "cross_language"}


def test_a_swedish_negation_beside_an_unrelated_english_memory_is_not_flagged(e5_bank) -> None:
    add_in_order(e5_bank, [SV_NO_MEAT, "Deploys the backend with Docker", "Takes the train to work"])
    e5_bank.maintain(now=NOW, steps=["cleanup"])
    assert flagged(e5_bank) == {}


@pytest.mark.parametrize("older, newer", [
    (SV_NO_MEAT, "I don't eat meat"),                         # both negated
    ("我不喝咖啡", "I never drink coffee"),                     # both negated
    ("Jag äter kött", EN_MEAT),                               # neither
    ("我每天早上喝咖啡", "I drink coffee every morning"),         # neither
], ids=["sv-en-both", "zh-en-both", "sv-en-neither", "zh-en-neither"])
def test_both_sides_negated_or_neither_is_not_flagged(e5_bank, older, newer) -> None:
    ids = add_in_order(e5_bank, [older, newer])
    assert frozenset(ids) in judged(e5_bank)
    assert flagged(e5_bank) == {}
    e5_bank.maintain(now=NOW, steps=["cleanup"])
    assert flagged(e5_bank) == {}


@pytest.mark.parametrize("older, newer, expected", [
    (SV_NO_MEAT, EN_MEAT, True),
    ("Jag ogillar inte kaffe", "I like coffee", False),       # "inte" cancels "ogillar": not negated
    ("Han har slutat röka", "He smokes every day", True),
    # An English title in a Swedish memory negates nothing in Swedish.
    ("Jag tittar på Never Have I Ever varje kväll", "I watch TV every night", False),
    (SV_NO_MEAT, "I don't eat meat", False),
    (SV_NO_MEAT, "Jag äter kött igen", False),               # one language
])
def test_negation_is_read_by_each_sides_own_language(older, newer, expected) -> None:
    assert (negated_across_languages(older, newer) is not None) is expected


def test_the_conflicts_page_shows_it_like_any_other(tmp_path, monkeypatch) -> None:
    from streamlit.testing.v1 import AppTest

    path = tmp_path / "page.duckdb"
    with MemoryBank.open(path, embedder=get_embedder(E5_MODEL)) as bank:
        sv, en = add_in_order(bank, [SV_NO_MEAT, EN_MEAT])
        (conflict,) = bank.conflicts(namespace="u")
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    app = str(Path(__file__).resolve().parent.parent / "app.py")
    at = AppTest.from_file(app, default_timeout=90).run()
    at.switch_page("dashboard/conflicts.py").run()
    assert not at.exception, at.exception
    assert f"#### Conflict {conflict.id} · cross_language" in [m.value for m in at.markdown]
    texts = [t.value for t in at.text]
    assert SV_NO_MEAT in texts and EN_MEAT in texts
    assert any("in different languages (Swedish / English)" in t for t in texts)
    assert "Suggested rule: **review**" in [m.value for m in at.markdown]
    # Review favours no rule: every resolution is the operator's, none is drawn as the suggestion.
    assert all(at.button(key=f"resolve-{conflict.id}-{rule}").proto.type == "secondary"
               for rule in ("newer_wins", "explicit_wins", "keep_both", "dismiss"))
    at.button(key=f"resolve-{conflict.id}-keep_both").click().run()
    assert not at.exception, at.exception
    with MemoryBank.open(path, embedder=get_embedder(E5_MODEL)) as bank:
        assert bank.conflict(conflict.id).status in ("resolved", "acknowledged")
        assert bank.get(sv).status == bank.get(en).status == "active"


def test_the_gate_gives_up_on_a_long_walk_rather_than_read_a_whole_namespace(e5_bank, monkeypatch) -> None:
    """The walk from the Swedish memory to its nearest English one passes another Swedish memory;
    with no walk allowed the pair is left unflagged (never flagged on a guess)."""
    sv, fish, en = store_quietly(e5_bank, [SV_NO_MEAT, "Jag äter inte fisk", EN_MEAT])
    ids, vectors = e5_bank.live_vectors("u")
    texts = lambda mids: {m: e5_bank.get(m).text for m in mids}  # noqa: E731
    pair = (min(sv, en), max(sv, en))
    assert pair in conflicts.across_language_pairs([pair], ids, vectors, texts)
    monkeypatch.setattr(conflicts.candidates, "ACROSS_WALK", 0)
    assert conflicts.across_language_pairs([pair], ids, vectors, texts) == set()
