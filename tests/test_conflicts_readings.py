"""How the same-subject rule reads a memory: in the pair's language, in its own and, where it holds
Chinese characters, in Chinese too. A Chinese memory that names a product ("换成了 MacBook") is
detected as English by its Latin letters; an English memory beside a Swedish one is still English.
Without these readings such pairs lose their slot or their supersede signal and are never offered."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pytest

from memory_core.curation import conflicts
from memory_core.embedding.embedder import E5_MODEL, get_embedder, model_defaults
from memory_core.models import Memory


def _memory(mid: int, text: str, at: datetime) -> Memory:
    return Memory(id=mid, text=text, namespace="n", kind="explicit", category="fact", importance=0.5,
                  created_at=at, updated_at=at, last_accessed_at=None, access_count=0, status="active",
                  content_hash=str(mid))


def _find(older: str, newer: str, across: bool = False) -> list[dict]:
    """The pair judged as a scan judges it, with real e5 vectors (cross-language pairs vouched for)."""
    t0 = datetime(2026, 1, 1)
    memories = {1: _memory(1, older, t0), 2: _memory(2, newer, t0 + timedelta(days=60))}
    vectors = np.asarray(get_embedder(E5_MODEL).encode([older, newer]))
    return conflicts.find([(1, 2)], np.array([1, 2]), vectors, memories, set(),
                          to_reference=model_defaults(E5_MODEL).to_reference, across={(1, 2)} if across else ())


@pytest.mark.parametrize("older, newer, signal", [
    ("Eats meat", "Doesn't eat meat any more", "stop"),       # "n't" follows a letter: no word boundary
    ("Plays golf", "Does not play golf anymore", "stop"),
    ("Bor i Lund", "Moved to Malmö in June", "move"),         # English beside Swedish, read as English too
    ("用Windows笔记本", "换成了MacBook", "switch"),             # Chinese with Latin letters, read as Chinese too
    ("用安卓手机", "换了一部iPhone", "switch"),                 # 换了: replaced
])
def test_signals_are_read_in_every_language_the_text_is_in(older: str, newer: str, signal: str) -> None:
    assert signal in conflicts.supersede_signals(older, newer)


def test_slots_of_chinese_with_latin_letters() -> None:
    assert "device" in conflicts.slots("用的是iPhone")
    assert "device" in conflicts.slots("平时用Windows")


def test_a_hometown_is_not_where_someone_lives() -> None:
    assert "residence" in conflicts.slots("住在青岛")
    assert "residence" not in conflicts.slots("老家在青岛")
    assert _find("老家在青岛", "搬到了公司附近的公寓") == []
    [row] = _find("住在青岛", "搬到了公司附近的公寓")
    assert row["confidence"] >= conflicts.OFFER_FLOOR  # a move is offered; its confidence is the fitted cell's


def test_a_pair_across_languages_with_a_slot_and_a_signal_is_offered_as_a_switch() -> None:
    [row] = _find("Dricker öl varje fredag", "不再喝酒了", across=True)
    assert row["kind"] == "switch" and row["confidence"] >= 0.8
    assert "alcohol" in row["evidence"]
    # Across languages without a shared slot, a negation on one side stays a low-confidence review.
    rows = _find("Spelar gitarr varje kväll", "Stopped going to the gym", across=True)
    assert all(r["confidence"] < 0.8 for r in rows)
