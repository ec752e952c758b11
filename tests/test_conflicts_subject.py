"""The one candidate rule for contradictions (same subject), the supersede signals in English,
Swedish and Chinese, and the calibrated confidence, held to the curation set's test half."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pytest

from memory_core.curation import conflicts
from memory_core.curation.conflicts.subject import CONFIDENCE, confidence, evidence
from memory_core.models import Conflict, Memory


@pytest.mark.parametrize("older, newer", [
    ("Lives in Lisbon", "Moved to Porto in May"),
    ("Bor i Västerås", "Flyttade till Örebro i våras"),
    ("住在广州", "上个月搬到了杭州"),
    ("Is vegan", "Eats fish again"),
    ("Plays the cello in an orchestra", "Gave up the cello"),
    ("Spelar golf på somrarna", "Har slutat spela golf"),
    ("每天早上喝豆浆", "不再喝豆浆了"),
])
def test_same_subject_pairs_are_candidates(older: str, newer: str) -> None:
    assert conflicts.same_subject(older, newer) is not None


@pytest.mark.parametrize("older, newer", [
    ("Is vegan", "Likes recipes with few ingredients"),          # one topic (food), two subjects
    ("Gillar att resa med tåg", "Föredrar hotell nära centrum"),
    ("喜欢喝绿茶", "每周去两次健身房"),
])
def test_a_shared_topic_is_not_a_subject(older: str, newer: str) -> None:
    assert conflicts.same_subject(older, newer) is None


@pytest.mark.parametrize("older, newer", [
    ("Gave his sister a book", "Took his dog to the vet"),        # a shared pronoun is no subject
    ("Asked about the opening hours", "Complained about the noise"),
    ("Lånade ut sitt kort", "Tappade sitt pass"),
])
def test_pronouns_and_small_words_are_not_a_subject(older: str, newer: str) -> None:
    assert conflicts.same_subject(older, newer) is None


def test_different_categories_are_not_one_subject() -> None:
    assert conflicts.same_subject("Lives in Lisbon", "Moved to Porto", "profile", "profile") is not None
    assert conflicts.same_subject("Lives in Lisbon", "Moved to Porto", "profile", "event") is None


@pytest.mark.parametrize("older, newer, signal", [
    ("Smokes after lunch", "Quit smoking last winter", "stop"),
    ("Plays chess", "No longer plays chess", "stop"),
    ("Lives in Lisbon", "Moved to Porto", "move"),
    ("Prefers window seats", "Now prefers aisle seats", "switch"),
    ("Stopped climbing", "Climbs again on Fridays", "again"),
    ("Röker", "Har slutat röka", "stop"),
    ("Äter kött", "Äter inte kött längre", "stop"),
    ("Bor i Lund", "Flyttade till Malmö", "move"),
    ("Slutade med löpning", "Springer igen", "again"),
    ("每天跑步", "不再跑步了", "stop"),
    ("学日语", "放弃学日语了", "stop"),
    ("住在北京", "搬到了上海", "move"),
    ("戒了咖啡", "又开始喝咖啡了", "again"),
])
def test_supersede_signals_in_three_languages(older: str, newer: str, signal: str) -> None:
    assert signal in conflicts.supersede_signals(older, newer)


def test_again_is_a_signal_only_after_a_habit_stopped() -> None:
    assert "again" not in conflicts.supersede_signals("Went to the dentist in May", "Went to the dentist again")
    assert "again" not in conflicts.supersede_signals("五月看了牙医", "八月又去看了牙医")
    assert "again" in conflicts.supersede_signals("Quit yoga", "Does yoga again")


def test_a_move_that_carries_out_a_plan_is_no_signal() -> None:
    # The plan carried out is a progression; a move away from a home still counts.
    assert "move" not in conflicts.supersede_signals("Plans to move to Oslo", "Moved to Oslo in May")
    assert "move" not in conflicts.supersede_signals("Plans to move to Oslo", "Flyttade till Oslo i maj")
    assert "move" in conflicts.supersede_signals("Lives in Oslo", "Moved to Bergen")
    assert "move" in conflicts.supersede_signals("Bor i Malmö", "去年搬到了哥本哈根")


@pytest.mark.parametrize("older, newer, counts", [
    ("Lives in Umeå", "Moved the company's servers to a data centre in Luleå", False),  # a thing moved
    ("Bor i Umeå", "Flyttade hästen till ett stall i Luleå", False),
    ("住在于默奥", "把钢琴搬到了吕勒奥的新家", False),
    ("Lives in Umeå", "His daughter moved to Luleå", False),  # someone else moved
    ("Bor i Umeå", "Dottern flyttade till Luleå", False),
    ("住在于默奥", "女儿搬到了吕勒奥", False),
    ("Grew up in Umeå", "Moved to Luleå", False),  # a home in the past
    ("Växte upp i Umeå", "Flyttade till Luleå", False),
    ("在于默奥长大", "搬到了吕勒奥", False),
    ("The shop's warehouse is in Umeå", "Moved the shop's warehouse to Luleå", True),  # the thing it names
    ("Lageret ligger i Umeå", "Flyttade lageret till Luleå", True),
    ("Lives in Umeå", "Moved to Luleå with the kids", True),  # the person's own move
    ("Bor i Umeå", "Flyttade hem till Luleå", True),
    ("住在于默奥", "搬回吕勒奥了", True),
])
def test_a_move_counts_when_it_replaces_what_the_older_says(older: str, newer: str, counts: bool) -> None:
    assert ("move" in conflicts.supersede_signals(older, newer)) is counts


@pytest.mark.parametrize("older,newer,slot", [
    ("Föredrar kaffe på morgonen", "现在更喜欢喝绿茶，不喝咖啡了", "drink"),
    ("每周上两次钢琴课", "Gave up the piano lessons last autumn", "music"),
    ("Writes code in VS Code", "Har bytt till Neovim som editor", "tools"),
    ("Läser nästan bara deckare", "现在只看科幻小说", "reading"),
    ("Hosts the side project on Heroku", "Flyttade sidoprojektet till Hetzner", "hosting"),
])
def test_one_subject_is_one_slot_in_every_language(older: str, newer: str, slot: str) -> None:
    # Two memories in two languages share no word: the slot read in each language is what makes them one subject.
    shared = conflicts.same_subject(older, newer)
    assert shared is not None and slot in shared.slots


def test_a_signal_the_older_memory_carries_does_not_count() -> None:
    assert "stop" not in conflicts.supersede_signals("Quit smoking in March", "Quit smoking for good")


def test_confidence_follows_the_evidence_table() -> None:
    older, newer = "Watches anime every evening", "Stopped watching anime"
    shared = conflicts.same_subject(older, newer)
    assert shared is not None and len(shared.words) >= 2
    cell = evidence(True, older, newer, shared)
    assert cell == (True, "stop", False, True)  # the rule, a stop signal ("stopped"), no slot, two words
    assert confidence(True, older, newer, shared) == CONFIDENCE[cell]
    assert CONFIDENCE[cell] >= 0.8 > CONFIDENCE[(True, "-", False, False)]  # one shared word alone: not offered
    plain = conflicts.same_subject("Has a dog", "Has a cat")
    assert plain is not None and confidence(False, "Has a dog", "Has a cat", plain) == 0.0
    assert max(CONFIDENCE.values()) < conflicts.AUTO_BAR  # no rules verdict is applied without a person


def _memory(mid: int, text: str, at: datetime, category: str = "fact") -> Memory:
    return Memory(id=mid, text=text, namespace="n", kind="explicit", category=category, importance=0.5,
                  created_at=at, updated_at=at, last_accessed_at=None, access_count=0, status="active",
                  content_hash=str(mid))


def _find(older: str, newer: str) -> list[dict]:
    t0 = datetime(2026, 1, 1)
    memories = {1: _memory(1, older, t0), 2: _memory(2, newer, t0 + timedelta(days=90))}
    vectors = np.eye(2, dtype=np.float32)  # the rule reads the words; nearness is the caller's part
    return conflicts.find([(1, 2)], np.array([1, 2]), vectors, memories, set())


def test_find_judges_only_pairs_about_one_subject() -> None:
    [row] = _find("Lives in Lisbon", "Moved to Porto in May")
    assert row["kind"] in ("value_change", "switch") and row["confidence"] >= conflicts.OFFER_FLOOR
    assert _find("Is vegan", "Likes recipes with few ingredients") == []
    assert _find("Has a dog", "Has a cat") == []
    assert _find("Is considering a trip to Peru", "Booked flights to Lima") == []


def test_an_auto_rule_needs_the_automatic_bar() -> None:
    [row] = _find("Drinks tea every morning", "Stopped drinking tea")
    t0 = datetime(2026, 1, 1)
    a, b = _memory(1, "Drinks tea every morning", t0), _memory(2, "Stopped drinking tea", t0 + timedelta(days=90))
    conflict = Conflict(id=1, namespace="n", a=a, b=b, kind=row["kind"], evidence=row["evidence"],
                        confidence=row["confidence"], suggestion=row["suggestion"], path="rules", status="open",
                        resolution=None, detected_at=t0)
    assert row["suggestion"] == "newer_wins"
    assert conflicts.auto_rule(conflict) is None  # below AUTO_BAR: offered, not applied
    assert conflicts.auto_rule(conflict, min_confidence=row["confidence"]) == "newer_wins"


@pytest.fixture(scope="module")
def held_out() -> dict:
    from bench.curation_quality import set_conflicts
    from memory_core.embedding.embedder import DEFAULT_MODEL

    return set_conflicts(DEFAULT_MODEL, "test")


def test_held_out_contradictions_reach_the_goal(held_out: dict) -> None:
    offered = held_out["offered"]["all"]
    assert offered["precision"] >= 0.8 and offered["recall"] >= 0.7, offered  # issue 40's goal
    for lang in ("en", "sv", "zh"):
        assert held_out["offered"][lang]["precision"] >= 0.8, (lang, held_out["offered"][lang])


def test_held_out_calibration_offered_at_0_8_is_right_80_percent(held_out: dict) -> None:
    for conf, row in held_out["calibration"].items():
        if float(conf) >= 0.8:
            assert row["right"] >= 0.8 * row["offered"], (conf, row)
    assert held_out["auto"]["all"]["found"] == 0


def test_the_confidence_table_is_the_one_fitted_on_the_dev_halves() -> None:
    from bench.curation_quality import fit_confidence
    from memory_core.embedding.embedder import DEFAULT_MODEL

    assert fit_confidence(DEFAULT_MODEL) == CONFIDENCE  # refit (--fit) after changing a rule or the set


@pytest.mark.parametrize("older, newer, same", [
    ("Likes green tea", "Stopped drinking coffee", False),
    ("Gillar grönt te", "Har slutat dricka kaffe", False),
    ("喜欢喝绿茶", "不再喝咖啡了", False),
    ("Plays tennis on Sundays", "Quit football", False),
    ("Drinks coffee every morning", "Stopped drinking coffee", True),  # the thing stopped is the one named
    ("Dricker kaffe varje morgon", "Har slutat dricka kaffe", True),
    ("Lives in Uppsala", "Moved to Gothenburg last month", True),  # a move replaces whatever filled the slot
    ("Drinks coffee every morning", "不再喝咖啡了", True),  # across languages the slot stands
    ("Spelar schack varje kväll", "Har gett upp schacket", True),  # a definite form names the same thing
    ("每天骑自行车", "不再开车了", False),  # a shared last character names a kind, not the thing
])
def test_a_stop_is_about_the_thing_it_names(older: str, newer: str, same: bool) -> None:
    assert (conflicts.same_subject(older, newer) is not None) is same
