"""bench/person_threshold.py on records in bench.multilingual's format: which questions read as
personal, and that the unanswered questions hold a personal threshold where general ones alone
would let it fall (a smoke test on hand-made scores: no model, no figures)."""

from __future__ import annotations

from bench import person_threshold as pt

DATA = {"person": {"name": {"en": "Ines", "zh": "伊内丝", "sv": "Ines"}},
        "unanswered": [{"id": 1, "near": 1}, {"id": 2, "near": 1}]}


def _result() -> dict:
    """Per language: two answered personal questions (one per half) scoring 0.30 against a threshold
    of 0.35, two unanswered personal ones at 0.32 (one returned today), two general ones far below."""
    records, general, unanswered = [], [], []
    questions = {"en": "What is Ines allergic to?", "zh": "伊内丝对什么过敏？", "sv": "Vad är Ines allergisk mot?"}
    for lang, q in questions.items():
        for fact in (1, 2):
            records.append({"fact": fact, "q": lang, "m": lang, "question": q, "threshold": 0.35, "got": fact,
                            "score": 0.30})
        for uid, score in ((1, 0.32), (2, 0.36)):
            unanswered.append({"id": uid, "lang": lang, "question": q, "score": score, "threshold": 0.35, "got": 1})
        for _ in range(2):
            general.append({"lang": lang, "question": "How tall is the Eiffel Tower?", "score": 0.1, "threshold": 0.35})
    return {"records": records, "general": general, "unanswered": unanswered}


def test_personal_reads_first_person_and_the_subject_name():
    assert pt.personal("What's my dentist's name?", "en", None)
    assert pt.personal("Vad heter min tandläkare?", "sv", None) and pt.personal("我的牙医叫什么？", "zh", None)
    assert pt.personal("Where does Maya live?", "en", "Maya") and pt.personal("Var bor Mayas bror?", "sv", "Maya")
    assert not pt.personal("Why is the sky blue?", "en", None) and not pt.personal("Imagine a dog", "en", None)


def test_unanswered_questions_hold_the_personal_threshold():
    sets = {"one": pt.table(_result(), DATA)}
    chosen = pt.choose(sets, empty=0.9)
    assert (chosen["two"]["personal"], chosen["one"]["personal"]) == (0.0, 0.0)
    loose = chosen["two, general only"]
    assert loose["personal"] <= -0.05 and loose["dev"]["one"]["hit1_thr"]["en"] == 1.0
    assert loose["dev"]["one"]["unanswered_empty"]["en"] == 0.0
    apart = pt.separation(sets)
    assert apart["one"]["auc"]["en"] == 0.0 and apart["one"]["near_share"]["en"] == 1.0
    assert "general only" in pt.report(chosen)
