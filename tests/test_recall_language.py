"""Recall calibrated per question language: the bank's model reads English, Swedish and Chinese
questions closer to or further from every memory (``ModelDefaults.language_threshold``), so the
threshold a question is held to moves with its language, while the order within a question is the
blend's; recall and the Tune page's candidates go through the same calibration
(scoring.for_language). Real bank, the default model."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone

import pytest

from memory_core import MemoryBank
from memory_core.embedding.embedder import model_defaults
from memory_core.index.scoring import PRESETS, for_language
from memory_core.language.text import detect_language

CREATED = datetime(2026, 3, 1, tzinfo=timezone.utc)
NOW = datetime(2026, 3, 8, tzinfo=timezone.utc)
MEMORIES = ["Mildly allergic to hazelnuts", "Works as a nurse at the city hospital",
            "Lätt allergisk mot hasselnötter", "Jobbar som sjuksköterska på stadens sjukhus",
            "对榛子轻微过敏", "在市医院当护士"]
QUESTIONS = {"en": "What am I allergic to?", "sv": "Vad är jag allergisk mot?", "zh": "我对什么过敏？"}


@pytest.fixture(scope="module")
def bank(tmp_path_factory, embedder):
    with MemoryBank.open(tmp_path_factory.mktemp("language") / "bank.duckdb", embedder=embedder) as b:
        b.add_many([{"text": t, "namespace": "me", "created_at": CREATED} for t in MEMORIES])
        yield b


def test_the_questions_are_read_as_their_languages():
    assert {lang: detect_language(q) for lang, q in QUESTIONS.items()} == {lang: lang for lang in QUESTIONS}


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_stays_valid_under_every_offset(name):
    p = PRESETS[name]
    for offset in (-0.5, -0.02, 0.03, 0.5, 2.0, *model_defaults(None).language_threshold.values()):
        q = for_language(p, offset)
        assert dataclasses.replace(q, threshold=p.threshold) == p  # only the threshold moves
        if p.threshold == 0:
            assert q is p  # "the top k, whatever their scores" stays so in every language
        else:
            assert 0 <= q.threshold <= 1
            assert q.threshold == pytest.approx(min(max(p.threshold + offset, 0.0), 1.0))
    assert for_language(p, 0.0) is p


def test_the_default_model_holds_swedish_questions_to_a_lower_threshold(bank):
    offsets = model_defaults(bank.model).language_threshold
    assert set(offsets) <= {"en", "zh", "sv"}
    assert offsets.get("sv", 0.0) < 0 <= min(offsets.get("en", 0.0), offsets.get("zh", 0.0))


@pytest.mark.parametrize("lang", list(QUESTIONS))
def test_a_questions_language_moves_its_threshold_not_its_ranking(bank, lang):
    """The hits are the blend's order whatever the language; a memory is returned when it clears
    the preset's threshold moved by the question's language, and only then."""
    p = bank.active_preset()[1].replace(k=len(MEMORIES))
    question = QUESTIONS[lang]
    everything = bank.recall(question, namespace="me", params=p.replace(threshold=0.0), now=NOW, record=False)
    cand = bank.candidates([question], namespace="me", now=NOW)
    scores = dict(zip((int(i) for i in cand.ids), cand.scores(p)[0]))
    assert [h.score for h in everything] == pytest.approx([scores[h.memory.id] for h in everything])
    assert MEMORIES.index(everything[0].memory.text) in (0, 2, 4)  # an allergy memory, whatever its language
    offset = model_defaults(bank.model).language_threshold.get(lang, 0.0)
    held = bank.calibrated(p, question).threshold
    assert held == pytest.approx(p.threshold + offset)
    # A threshold just above one hit's score in the preset's terms: the language decides whether it stays.
    edge = everything[0].score - offset / 2
    hits = bank.recall(question, namespace="me", params=p.replace(threshold=edge), now=NOW, record=False)
    kept = [h.memory.id for h in everything if h.score >= edge + offset]
    assert [h.memory.id for h in hits] == kept
    assert (everything[0].memory.id in kept) == (offset <= 0)
    assert cand.select(p.replace(threshold=edge))[0] == kept


def test_the_tune_pages_candidates_select_what_recall_returns_at_the_threshold(bank):
    """The threshold slider means what it shows: for questions in three languages at once, the
    candidates keep exactly the memories recall keeps at the preset's threshold."""
    p = bank.active_preset()[1]
    questions = list(QUESTIONS.values()) + ["What is the capital of Peru?", "Vad heter Perus huvudstad?"]
    selected = bank.candidates(questions, namespace="me", now=NOW).select(p)
    for question, ids in zip(questions, selected):
        hits = bank.recall(question, namespace="me", params=p, now=NOW, record=False)
        assert [h.memory.id for h in hits] == ids, question



def test_when_every_memory_reads_below_the_floor_the_closest_meaning_still_ranks_first(bank):
    """Clipped at the floor, every memory's relevance reads 0 and their scores are equal: the one
    whose meaning is closest to the question comes first, not the oldest."""
    p = bank.active_preset()[1].replace(similarity_floor=0.95, similarity_ceiling=1.0, lexical_weight=0.0,
                                        threshold=0.0, k=len(MEMORIES))
    for question in QUESTIONS.values():
        hits = bank.recall(question, namespace="me", params=p, now=NOW, record=False)
        assert len({round(h.score, 12) for h in hits}) == 1  # all tied
        cand = bank.candidates([question], namespace="me", now=NOW)
        cosine = dict(zip((int(i) for i in cand.ids), cand.similarity[0]))
        assert [h.memory.id for h in hits] == sorted(cosine, key=lambda i: (-cosine[i], i))
        assert MEMORIES.index(hits[0].memory.text) in (0, 2, 4)  # an allergy memory
