"""Each memory's language (en, sv, zh), read from its text when it is written: stored so Browse
filters and counts by it, kept true by edits, and read for an existing bank by its migration."""

from __future__ import annotations

import duckdb
import pytest

from conftest import downgrade
from memory_core import MemoryBank, ValidationError

TEXTS = {"Allergic to peanuts": "en", "Bor i Malmö sedan i fjol": "sv", "对花生过敏": "zh",
         "Har en katt som heter Sigge och två barn": "sv"}


def test_written_filtered_and_counted(bank: MemoryBank):
    ids = bank.add_many([{"text": t, "namespace": "a"} for t in TEXTS])
    bank.add("Drinks no coffee", namespace="b")
    assert bank.stats("a")["by_language"] == {"sv": 2, "en": 1, "zh": 1}
    assert {m.text for m in bank.memories("a", language="sv")} == {t for t, lang in TEXTS.items() if lang == "sv"}
    assert bank.count(None, language="en") == 2
    assert bank.languages() == {"en": 0.4, "sv": 0.4, "zh": 0.2}
    bank.forget(ids[2])
    assert bank.stats("a")["by_language"] == {"sv": 2, "en": 1}  # counts are of active memories


def test_an_edit_of_the_text_reads_it_again(bank: MemoryBank):
    mid = bank.add("Bor i Malmö sedan i fjol", namespace="a")
    bank.update(mid, text="住在马尔默")
    assert [m.id for m in bank.memories("a", language="zh")] == [mid]
    assert bank.count("a", language="sv") == 0
    group = bank.history(mid)[-1].group_id
    bank.undo_group(group)
    assert [m.id for m in bank.memories("a", language="sv")] == [mid]


def test_an_unknown_language_is_a_clear_error(bank: MemoryBank):
    bank.add("Allergic to peanuts", namespace="a")
    with pytest.raises(ValidationError, match="language must be one of"):
        bank.memories("a", language="fi")


def test_an_existing_bank_is_read_by_the_migration(tmp_path, embedder):
    path = tmp_path / "old.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add_many([{"text": t, "namespace": "a"} for t in TEXTS])
    downgrade(path, 11)
    con = duckdb.connect(str(path))
    assert "language" not in [r[0] for r in con.execute("DESCRIBE memories").fetchall()]
    con.close()
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.stats("a")["by_language"] == {"sv": 2, "en": 1, "zh": 1}
