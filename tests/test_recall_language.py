"""Recall calibrated per question language: the bank's model reads Swedish, English and Chinese
questions on scales of their own (``ModelDefaults.language_shift``), so one threshold leaves general
questions empty in each language alike; recall and the Tune page's candidates rank through the same
calibration (scoring.for_language). Real bank, the default model."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
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
def test_every_preset_stays_valid_under_every_shift(name):
    p = PRESETS[name]
    for shift in (-0.3, -0.025, 0.05, 0.3, *model_defaults(None).language_shift.values()):
        q = for_language(p, shift)
        assert 0 <= q.similarity_floor < q.similarity_ceiling <= 1
        assert (q.threshold, q.lexical_weight, q.alpha) == (p.threshold, p.lexical_weight, p.alpha)
        # Where there is room, the scale moves by the shift itself (an affine calibration).
        if 0 <= p.similarity_floor + shift and p.similarity_ceiling + shift <= 1:
            assert q.similarity_floor == pytest.approx(p.similarity_floor + shift)
            assert q.similarity_ceiling == pytest.approx(p.similarity_ceiling + shift)
    assert for_language(p, 0.0) is p


def test_the_default_model_reads_swedish_questions_on_a_lower_scale(bank):
    shift = model_defaults(bank.model).language_shift
    assert set(shift) <= {"en", "zh", "sv"}
    assert shift.get("sv", 0.0) < 0


@pytest.mark.parametrize("lang", list(QUESTIONS))
def test_recall_scores_a_question_on_its_languages_scale(bank, lang):
    """The top hit's score is the blend under the preset moved by the question's language: a
    Swedish question's relevance is read up; a language without a shift is read as set."""
    p = bank.active_preset()[1].replace(threshold=0.0, k=len(MEMORIES))
    question = QUESTIONS[lang]
    hits = bank.recall(question, namespace="me", params=p, now=NOW, record=False)
    cand = bank.candidates([question], namespace="me", now=NOW)
    calibrated = cand.scores(p)[0]
    got = {int(i): float(s) for i, s in zip(cand.ids, calibrated)}
    assert [h.memory.id for h in hits] == cand.select(p)[0]
    assert [h.score for h in hits] == pytest.approx([got[h.memory.id] for h in hits])
    assert MEMORIES.index(hits[0].memory.text) in (0, 2, 4)  # an allergy memory, whatever its language
    cand.shifts = None  # the same question read on the preset's own scale
    plain = cand.scores(p)[0]
    top = int(np.argmax(calibrated))
    shift = model_defaults(bank.model).language_shift.get(lang, 0.0)
    assert np.sign(calibrated[top] - plain[top]) == -np.sign(shift)


def test_the_tune_pages_candidates_select_what_recall_returns_at_the_threshold(bank):
    """The threshold slider means what it shows: for questions in three languages at once, the
    candidates keep exactly the memories recall keeps at the preset's threshold."""
    p = bank.active_preset()[1]
    questions = list(QUESTIONS.values()) + ["What is the capital of Peru?", "Vad heter Perus huvudstad?"]
    selected = bank.candidates(questions, namespace="me", now=NOW).select(p)
    for question, ids in zip(questions, selected):
        hits = bank.recall(question, namespace="me", params=p, now=NOW, record=False)
        assert [h.memory.id for h in hits] == ids, question

