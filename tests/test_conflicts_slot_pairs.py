"""Candidate pairs by subject slot: two memories about one slot (where someone lives, their pets) are
judged however far apart in meaning, on an add and in a maintenance scan, in English, Swedish and
Chinese; two memories in one slot that are both true are not offered."""

from __future__ import annotations

import numpy as np
import pytest

from memory_core.curation import conflicts

# Other things one person said, in each language: they sit nearer in meaning to each memory of a
# pair than the pair's other memory does, so nearness alone would not pair them.
OTHERS = {
    "en": ["Works as a nurse at the hospital", "Enjoys old jazz records", "Has two children", "Takes the bus to work",
           "Reads crime novels", "Prefers tea to coffee", "Birthday is in March", "Learning to play the guitar",
           "Bakes sourdough bread on weekends", "Allergic to peanuts"],
    "sv": ["Jobbar som sjuksköterska på sjukhuset", "Gillar gamla jazzskivor", "Har två barn", "Tar bussen till jobbet",
           "Läser deckare", "Föredrar te framför kaffe", "Fyller år i mars", "Lär sig spela gitarr",
           "Bakar surdegsbröd på helgerna", "Allergisk mot jordnötter"],
    "zh": ["在医院当护士", "喜欢老爵士唱片", "有两个孩子", "坐公交车上班", "爱看推理小说", "喜欢喝茶不喜欢咖啡",
           "生日在三月", "在学弹吉他", "周末烤酸面包", "对花生过敏"],
}

MOVED = [("en", "Lives in Uppsala", "Moved to Gothenburg last month"),
         ("sv", "Bor i Uppsala", "Flyttade till Göteborg förra månaden"),
         ("zh", "住在乌普萨拉", "上个月搬到了哥德堡")]
BOTH_TRUE = [("en", "Has a dog named Rex", "Has a cat called Misse"),
             ("sv", "Har en hund som heter Rex", "Har en katt som heter Misse"),
             ("zh", "养了一只狗叫旺财", "还养了一只猫叫咪咪")]


def _fill(bank, lang: str, older: str, newer: str) -> tuple[int, int]:
    a = bank.add(older, namespace=lang)
    for text in OTHERS[lang]:
        bank.add(text, namespace=lang)
    return a, bank.add(newer, namespace=lang)


def _offered(bank, lang: str) -> set[tuple[int, int]]:
    return {(c.a.id, c.b.id) for c in bank.conflicts(namespace=lang)}


@pytest.mark.parametrize("lang, older, newer", MOVED)
def test_a_move_far_apart_in_meaning_is_offered_on_add(bank, lang: str, older: str, newer: str) -> None:
    a, b = _fill(bank, lang, older, newer)
    assert (a, b) in _offered(bank, lang)


def test_nearness_alone_would_not_pair_them(bank) -> None:
    # The English pair is far apart in meaning: only its slot makes it a candidate.
    a, b = _fill(bank, "en", *MOVED[0][1:])
    ids, vectors = bank.live_vectors("en")
    band = conflicts.candidate_band(bank.model_defaults.on_model)
    assert (a, b) not in conflicts.pairs_to_judge(ids, vectors, band=band)
    slots = {int(m): conflicts.slots(t) for m, t in zip(ids, [bank.get(int(m)).text for m in ids])}
    assert (a, b) in conflicts.pairs_to_judge(ids, vectors, band=band, slots=slots)


@pytest.mark.parametrize("lang, older, newer", MOVED)
def test_a_move_far_apart_in_meaning_is_found_by_a_scan(bank, lang: str, older: str, newer: str) -> None:
    a = bank.add(older, namespace=lang, detect_conflicts=False)
    for text in OTHERS[lang]:
        bank.add(text, namespace=lang, detect_conflicts=False)
    b = bank.add(newer, namespace=lang, detect_conflicts=False)
    assert (a, b) in {(c.a.id, c.b.id) for c in bank.detect_conflicts(lang)}


@pytest.mark.parametrize("lang, older, newer", BOTH_TRUE)
def test_two_true_facts_in_one_slot_are_not_offered(bank, lang: str, older: str, newer: str) -> None:
    a, b = _fill(bank, lang, older, newer)
    assert (a, b) not in _offered(bank, lang)
    assert (a, b) not in {(c.a.id, c.b.id) for c in bank.detect_conflicts(lang)}
    assert conflicts.slots(older) & conflicts.slots(newer)  # one slot: the pair was a candidate


def test_an_add_reads_the_slot_index_not_the_namespace(bank) -> None:
    # The second add's slot pairs come from the index the first add built: a memory added since
    # is indexed as it is added, and one archived since is no longer paired.
    first = bank.add("Lives in Uppsala", namespace="en")
    bank.forget(first)
    second = bank.add("Lives in Lund", namespace="en")
    moved = bank.add("Moved to Gothenburg last month", namespace="en")
    offered = _offered(bank, "en")
    assert (second, moved) in offered
    assert not any(first in pair for pair in offered)


def test_a_memory_edited_into_a_slot_is_paired_by_it(bank) -> None:
    # The slot index follows an edit: a memory that now says where she lives is paired with a move.
    a = bank.add("Prefers window seats on trains", namespace="en")
    for text in OTHERS["en"]:
        bank.add(text, namespace="en")
    bank.update(a, text="Lives in Uppsala")
    b = bank.add("Moved to Gothenburg last month", namespace="en")
    assert (a, b) in _offered(bank, "en")


def test_one_slot_neighbour_is_in_another_language() -> None:
    # Four English memories of one slot sit nearer each other than the Chinese one does: given the
    # languages, each still meets the nearest memory of the other language, and no more neighbours.
    angles = np.radians([0, 10, 20, 30, 80])
    vectors = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)
    ids = np.arange(1, 6)
    slots = {int(m): frozenset({"drink"}) for m in ids}
    languages = {1: "en", 2: "en", 3: "en", 4: "en", 5: "zh"}
    assert (1, 5) not in conflicts.slot_pairs(ids, vectors, slots, memory_ids=[1])
    drawn = conflicts.slot_pairs(ids, vectors, slots, memory_ids=[1], languages=languages)
    assert (1, 5) in drawn and len(drawn) == conflicts.SLOT_NEIGHBOURS
    one_language = {m: "en" for m in languages}
    assert conflicts.slot_pairs(ids, vectors, slots, languages=one_language) == conflicts.slot_pairs(ids, vectors, slots)
