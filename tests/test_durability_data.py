"""The durability set (bench/data/durability.json): memories in English, Swedish and Chinese labelled
durable or transient. Rules are chosen on its dev half and reported on its test half, so its shape,
counts and split are checked here: a broken file would quietly bend every figure measured on it."""

from __future__ import annotations

import json
from collections import Counter
from datetime import date, datetime
from pathlib import Path

import pytest

from memory_core.models import CATEGORIES, KINDS

DATA = Path(__file__).resolve().parent.parent / "bench" / "data" / "durability.json"
LANGUAGES = ("en", "sv", "zh")
LABELS = ("durable", "transient")
FIELDS = {"id", "lang", "text", "label", "why", "category", "kind", "split"}


@pytest.fixture(scope="module")
def data() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


def test_top_level_shape(data: dict) -> None:
    assert set(data) == {"about", "written_at", "labels", "cases"}
    assert "demo" in data["about"]  # says where it was not drawn from
    assert datetime.fromisoformat(data["written_at"]).tzinfo is not None
    assert set(data["labels"]) == set(LABELS)
    assert not set(data["labels"]["durable"]) & set(data["labels"]["transient"])


def test_each_case_is_well_formed(data: dict) -> None:
    written = datetime.fromisoformat(data["written_at"]).date()
    for case in data["cases"]:
        assert FIELDS <= set(case) <= FIELDS | {"ends", "importance"}, case
        assert case["lang"] in LANGUAGES, case
        assert case["label"] in LABELS, case
        assert case["why"] in data["labels"][case["label"]], case
        assert case["category"] in CATEGORIES, case
        assert case["kind"] in KINDS, case
        assert case["split"] in ("dev", "test"), case
        assert isinstance(case["text"], str) and case["text"].strip() == case["text"] and case["text"], case
        assert case["id"].startswith(f"{case['lang']}-{case['label'][0]}"), case
        if "importance" in case:  # the writer's rating; absent means the default an agent gets
            assert isinstance(case["importance"], float) and 0 <= case["importance"] <= 1, case
        if "ends" in case:
            assert case["label"] == "transient", case  # a durable fact has no end date
            assert date.fromisoformat(case["ends"]) >= written, case


def test_ids_and_texts_are_unique(data: dict) -> None:
    ids = [c["id"] for c in data["cases"]]
    texts = [c["text"].casefold() for c in data["cases"]]
    assert len(set(ids)) == len(ids)
    assert len(set(texts)) == len(texts)


def test_at_least_forty_per_language_and_label(data: dict) -> None:
    counts = Counter((c["lang"], c["label"]) for c in data["cases"])
    for lang in LANGUAGES:
        for label in LABELS:
            assert counts[lang, label] >= 40, (lang, label, counts[lang, label])


def test_split_halves_each_language_and_label(data: dict) -> None:
    counts = Counter((c["lang"], c["label"], c["split"]) for c in data["cases"])
    for lang in LANGUAGES:
        for label in LABELS:
            dev, test = counts[lang, label, "dev"], counts[lang, label, "test"]
            assert abs(dev - test) <= 1, (lang, label, dev, test)


def test_hard_cases_are_present(data: dict) -> None:
    """Both halves hold the cases a rule on time words alone gets wrong: durable facts that name a
    time, transient ones that name none, and transient ones a writer tagged with a durable category."""
    by_split = {s: [c for c in data["cases"] if c["split"] == s] for s in ("dev", "test")}
    time_words = {"en": ("20", "since", "last", "this", "every", "today"),
                  "sv": ("20", "sedan", "förra", "varje", "i år", "i fjol", "idag", "i veckan"),
                  "zh": ("20", "上周", "今年", "去年", "每周", "今天")}
    for split, cases in by_split.items():
        for lang in LANGUAGES:
            durable_timed = [c for c in cases if c["lang"] == lang and c["label"] == "durable"
                             and any(w in c["text"].casefold() for w in time_words[lang])]
            assert len(durable_timed) >= 3, (split, lang)
            untimed = [c for c in cases if c["lang"] == lang and c["label"] == "transient" and "ends" not in c]
            assert len(untimed) >= 5, (split, lang)
            dated = [c for c in cases if c["lang"] == lang and "ends" in c]
            assert len(dated) >= 5, (split, lang)
            tagged = [c for c in cases if c["lang"] == lang and c["label"] == "transient"
                      and c["category"] in ("goal", "decision", "difficulty")]
            assert tagged, (split, lang)
            inferred = [c for c in cases if c["lang"] == lang and c["kind"] == "inferred"]
            assert inferred, (split, lang)
