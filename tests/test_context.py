"""A memory's context: text that situates it (the conversation around it), matched by recall's
lexical index alongside the text but never shown as the memory, kept through export and import,
and erased by a hard delete."""

from __future__ import annotations

import io
import json
from datetime import datetime, timezone

import duckdb
import pytest

from conftest import downgrade
from memory_core import MemoryBank, ScoringParams
from memory_core.errors import ValidationError
from memory_core.storage.schema import MIGRATIONS

NOW = datetime(2026, 1, 10, tzinfo=timezone.utc)
T = datetime(2026, 1, 1, tzinfo=timezone.utc)

TURNS = [
    ("Melanie: How was the support group you went to?", None),
    ("Caroline: It was so powerful, I felt accepted.", "Melanie: How was the support group you went to?"),
    ("Melanie: I ran a charity race last Sunday.", None),
    ("Caroline: Wow, that sounds amazing! How far?", "Melanie: I ran a charity race last Sunday."),
    ("Melanie: I painted a sunset over the lake.", None),
]


def _add(bank: MemoryBank) -> list[int]:
    return bank.add_many([{"text": t, "context": c, "namespace": "conv", "created_at": T} for t, c in TURNS])


def test_a_reply_is_found_by_the_words_of_the_turn_it_answers(bank):
    """"It was so powerful" says nothing about a support group; its context does. Recall finds
    it for a question about the support group, and shows the reply's own text only."""
    ids = _add(bank)
    lexical_only = ScoringParams(alpha=1, beta=0, gamma=0, delta=0, lexical_weight=1, lexical_below_floor=1,
                                 threshold=0, k=5)
    hits = bank.recall("How did Caroline feel at the support group?", namespace="conv", params=lexical_only,
                       now=NOW, record=False)
    assert hits[0].memory.id == ids[1]
    assert hits[0].memory.text == TURNS[1][0]
    assert hits[0].memory.context == TURNS[1][1]
    # Without the context the reply shares only the speaker's name with the question.
    with MemoryBank.open(bank.path.with_name("plain.duckdb"), embedder=bank.embedder) as plain:
        plain_ids = plain.add_many([{"text": t, "namespace": "conv", "created_at": T} for t, _ in TURNS])
        plain_hits = plain.recall("How did Caroline feel at the support group?", namespace="conv",
                                  params=lexical_only, now=NOW, record=False)
        assert plain_hits[0].memory.id != plain_ids[1]


def test_context_survives_edits_reopen_and_export_import(bank, bank_path, embedder):
    ids = _add(bank)
    bank.update(ids[1], text="Caroline: It was powerful; she felt accepted.")
    assert bank.get(ids[1]).context == TURNS[1][1]
    bank.close()
    with MemoryBank.open(bank_path, embedder=embedder) as reopened:
        hits = reopened.recall("support group", namespace="conv", now=NOW, record=False, threshold=0, k=5)
        assert ids[1] in [h.memory.id for h in hits]
        out = io.StringIO()
        reopened.export_jsonl(out)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["context"] for r in rows] == [c for _, c in TURNS]
    with MemoryBank.open(bank_path.with_name("copy.duckdb"), embedder=embedder) as copy:
        copy.import_jsonl(io.StringIO(out.getvalue()))
        assert copy.get(ids[3]).context == TURNS[3][1]


def test_hard_delete_erases_the_context_too(bank, bank_path):
    ids = _add(bank)
    bank.forget(ids[3], hard=True)
    assert bank.get(ids[3]).context is None
    bank.close()
    con = duckdb.connect(str(bank_path), read_only=True)
    try:
        assert con.execute("SELECT context FROM memories WHERE id = ?", [ids[3]]).fetchone()[0] is None
        events = " ".join(str(r) for r in con.execute("SELECT before, after FROM events WHERE memory_id = ?",
                                                      [ids[3]]).fetchall())
        assert "charity race" not in events
    finally:
        con.close()


@pytest.mark.parametrize("bad", [42, ["a"], {"x": 1}, "turn\x00"])
def test_bad_context_is_refused_and_nothing_is_written(bank, bad):
    with pytest.raises(ValidationError, match="context"):
        bank.add_many([{"text": "Ok", "namespace": "conv"}, {"text": "Fine", "context": bad, "namespace": "conv"}])
    assert bank.count("conv") == 0
    assert bank.add("Ok", namespace="conv", detect_conflicts=False) and bank.count("conv") == 1


def test_blank_context_counts_as_none(bank):
    mid = bank.add_many([{"text": "Ok", "context": "   ", "namespace": "conv"}])[0]
    assert bank.get(mid).context is None


def test_a_bank_from_before_context_gains_the_column(tmp_path, embedder):
    """A version-2 bank opens, migrates, keeps its memories and takes memories with context."""
    path = tmp_path / "v2.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        old = bank.add("Prefers tea", namespace="n", detect_conflicts=False)
    downgrade(path, 2)
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.get(old).context is None and bank.get(old).text == "Prefers tea"
        new = bank.add_many([{"text": "Switched to coffee", "context": "morning drinks", "namespace": "n"}])[0]
        assert bank.get(new).context == "morning drinks"
    assert "context" in " ".join(MIGRATIONS[5])


def test_memctl_add_takes_a_context(bank_path, embedder):
    from click.testing import CliRunner

    from memory_core.cli import cli

    result = CliRunner().invoke(cli, ["--bank", str(bank_path), "add", "Caroline: So powerful.", "-n", "conv",
                                      "--context", "Melanie: How was the support group?"])
    assert result.exit_code == 0, result.output
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        assert bank.get(int(result.output.strip())).context == "Melanie: How was the support group?"


def test_rows_added_to_a_loaded_index_are_found_by_their_context(bank):
    """A bank that already serves recall (its index loaded) indexes new rows' context at once."""
    bank.add("Likes hiking", namespace="conv", detect_conflicts=False)
    assert bank.recall("hiking", namespace="conv", record=False)  # the namespace index is loaded now
    lexical_only = ScoringParams(alpha=1, beta=0, gamma=0, delta=0, lexical_weight=1, lexical_below_floor=1,
                                 threshold=0, k=5)
    ids = bank.add_many([{"text": t, "context": c, "namespace": "conv", "created_at": T} for t, c in TURNS])
    hits = bank.recall("How did Caroline feel at the support group?", namespace="conv", params=lexical_only,
                       now=NOW, record=False)
    assert hits[0].memory.id == ids[1]
