"""The second multilingual set (bench/data/multilingual_second.json) has the shape its benchmark
reads: every fact in English, Chinese and Swedish with two questions per language naming the
namespace's person, a dev/test split by halves, and general questions no memory answers; and it
was written apart from the first set and the demo data (no text of theirs reused)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = json.loads((ROOT / "bench" / "data" / "multilingual_second.json").read_text(encoding="utf-8"))
LANGS = ("en", "zh", "sv")


def test_every_fact_is_in_three_languages_with_two_questions_each():
    ids = [f["id"] for f in DATA["facts"]]
    assert len(ids) == len(set(ids)) >= 40
    for fact in DATA["facts"]:
        assert set(fact["text"]) == set(LANGS) and all(fact["text"][lang].strip() for lang in LANGS)
        assert set(fact["questions"]) == set(LANGS)
        assert all(len(fact["questions"][lang]) == 2 for lang in LANGS), fact["id"]


def test_every_question_names_the_person_and_no_general_question_does():
    names = DATA["person"]["name"]
    assert set(names) == set(LANGS) and DATA["person"]["namespace"]
    for fact in DATA["facts"]:
        for lang in LANGS:
            assert all(names[lang] in q for q in fact["questions"][lang]), (fact["id"], lang)
    for lang in LANGS:
        assert len(DATA["general"][lang]) >= 20
        assert not any(names[lang] in q for q in DATA["general"][lang])


def test_dev_and_test_are_halves_by_odd_and_even_ids():
    for fact in DATA["facts"]:
        assert fact["split"] == ("dev" if fact["id"] % 2 else "test")
    dev = sum(f["split"] == "dev" for f in DATA["facts"])
    assert dev == len(DATA["facts"]) - dev


def test_no_text_is_taken_from_the_first_set_or_the_demo_data():
    first = json.loads((ROOT / "bench" / "data" / "multilingual.json").read_text(encoding="utf-8"))
    taken = {t for f in first["facts"] for t in f["text"].values()}
    taken |= {q for f in first["facts"] for qs in f["questions"].values() for q in qs}
    demo = " ".join(p.read_text(encoding="utf-8") for p in (ROOT / "memory_core" / "demo" / "data").glob("*")
                    if p.is_file() and p.suffix in (".json", ".jsonl", ".md", ".txt"))
    for fact in DATA["facts"]:
        for text in list(fact["text"].values()) + [q for qs in fact["questions"].values() for q in qs]:
            assert text not in taken and text not in demo, text
