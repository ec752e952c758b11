"""The curation benchmark's labelled pairs (bench/data/conflicts.json, duplicates.json): their shape,
how many pairs each kind holds per language, and that the dev/test split is by case, so a threshold
chosen on dev never saw a translation of a test pair."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parent.parent / "bench" / "data"
LANGS = ("en", "sv", "zh")
CONFLICT_KINDS = ("contradiction", "same_subject_both_true", "progression", "two_events", "same_topic_other_subject")
DUPLICATE_KINDS = ("duplicate", "progression", "two_events", "same_subject_other_fact", "contradiction")


def _load(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def conflicts() -> dict[str, Any]:
    return _load("conflicts.json")


@pytest.fixture(scope="module")
def duplicates() -> dict[str, Any]:
    return _load("duplicates.json")


def _check_shape(data: dict[str, Any], kinds: tuple[str, ...], texts: tuple[str, str]) -> None:
    assert set(data) == {"about", "kinds", "pairs"}
    assert tuple(data["kinds"]) == kinds
    ids = [p["id"] for p in data["pairs"]]
    assert len(ids) == len(set(ids)), "pair ids are unique"
    for p in data["pairs"]:
        assert set(p) == {"id", "case", "kind", "subject", "lang", "split", *texts}, p["id"]
        assert p["kind"] in kinds, p["id"]
        assert p["split"] in ("dev", "test"), p["id"]
        langs = p["lang"].split("-")
        assert len(langs) in (1, 2) and all(lang in LANGS for lang in langs), p["id"]
        assert len(langs) == 1 or langs[0] != langs[1], p["id"]
        first, second = (p[t] for t in texts)
        assert isinstance(first, str) and isinstance(second, str) and first.strip() and second.strip(), p["id"]
        assert first != second, p["id"]


def _check_language(data: dict[str, Any], texts: tuple[str, str]) -> None:
    # Chinese pairs are written in Chinese, the others are not; Swedish ones use Swedish words.
    for p in data["pairs"]:
        for lang, text in zip(p["lang"].split("-") * (2 if "-" not in p["lang"] else 1), (p[t] for t in texts)):
            has_han = any("\u4e00" <= ch <= "\u9fff" for ch in text)
            assert has_han == (lang == "zh"), (p["id"], text)


def _check_split(data: dict[str, Any]) -> None:
    split_of_case: dict[str, str] = {}
    for p in data["pairs"]:
        assert split_of_case.setdefault(p["case"], p["split"]) == p["split"], f"case {p['case']} spans both halves"
    halves = Counter(split_of_case.values())
    assert abs(halves["dev"] - halves["test"]) <= len(split_of_case) * 0.1


def test_conflicts_shape(conflicts: dict[str, Any]) -> None:
    _check_shape(conflicts, CONFLICT_KINDS, ("older", "newer"))
    _check_language(conflicts, ("older", "newer"))


def test_conflicts_counts_per_kind_and_language(conflicts: dict[str, Any]) -> None:
    counts = Counter((p["kind"], p["lang"]) for p in conflicts["pairs"])
    for kind in CONFLICT_KINDS:
        for lang in LANGS:
            assert counts[(kind, lang)] >= 30, (kind, lang)
    across = sum(n for (kind, lang), n in counts.items() if kind == "contradiction" and "-" in lang)
    assert across >= 6, "a few contradictions across two languages"


def test_conflicts_split_by_case(conflicts: dict[str, Any]) -> None:
    _check_split(conflicts)
    per_half = Counter((p["kind"], p["lang"], p["split"]) for p in conflicts["pairs"] if "-" not in p["lang"])
    for kind in CONFLICT_KINDS:
        for lang in LANGS:
            assert per_half[(kind, lang, "dev")] >= 15 and per_half[(kind, lang, "test")] >= 15, (kind, lang)


def test_contradictions_carry_supersede_signals(conflicts: dict[str, Any]) -> None:
    # The supersede signals appear in each language's newer memories, so the rules are tested on them.
    signals = {"en": ("moved", "quit", "gave up", "no longer", "now prefers", "again", "switched"),
               "sv": ("flyttade", "har slutat", "inte längre", "igen", "numera", "bytt"),
               "zh": ("搬到", "不再", "放弃", "又开始", "换成", "戒")}
    for lang, words in signals.items():
        newer = [p["newer"].lower() for p in conflicts["pairs"] if p["kind"] == "contradiction" and p["lang"] == lang]
        for word in words:
            assert any(word in text for text in newer), (lang, word)


def test_duplicates_shape(duplicates: dict[str, Any]) -> None:
    _check_shape(duplicates, DUPLICATE_KINDS, ("a", "b"))
    _check_language(duplicates, ("a", "b"))


def test_duplicates_counts_per_kind_and_language(duplicates: dict[str, Any]) -> None:
    counts = Counter((p["kind"], p["lang"]) for p in duplicates["pairs"])
    for kind in DUPLICATE_KINDS:
        for lang in LANGS:
            assert counts[(kind, lang)] >= 30, (kind, lang)
    across = sum(n for (kind, lang), n in counts.items() if kind == "duplicate" and "-" in lang)
    assert across >= 20, "cross-language duplicates"


def test_duplicates_split_by_case_and_agree_with_conflicts(duplicates: dict[str, Any],
                                                          conflicts: dict[str, Any]) -> None:
    _check_split(duplicates)
    in_conflicts = {p["case"]: p["split"] for p in conflicts["pairs"]}
    shared = [p for p in duplicates["pairs"] if p["case"] in in_conflicts]
    assert shared, "the hard negatives share their cases with conflicts.json"
    assert all(in_conflicts[p["case"]] == p["split"] for p in shared)
