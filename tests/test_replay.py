"""Replay: logged recalls re-run under candidate settings, as of their own time, without side effects."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from click.testing import CliRunner

from memory_core import MemoryBank, ScoringParams
from memory_core.evaluation import tuning
from memory_core.cli import cli

T0 = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
# Frequency and last-access recency would make a replay today differ from the logged run (the logged
# recalls themselves counted accesses); without them the logged settings must reproduce the log.
LOGGED = ScoringParams(delta=0.0, k=2, threshold=0.3)


@pytest.fixture
def logged_bank(bank):
    ids = {
        "veg": bank.add("Prefers vegetarian food", namespace="alice", created_at=T0 - timedelta(days=40)),
        "mia": bank.add("Her daughter is called Mia", namespace="alice", importance=0.9,
                        created_at=T0 - timedelta(days=200)),
        "berlin": bank.add("Moved to Berlin in August", namespace="alice", created_at=T0 - timedelta(days=10)),
        "cello": bank.add("Is learning to play the cello", namespace="alice", created_at=T0 + timedelta(days=20)),
        "night": bank.add("Works night shifts", namespace="bob", created_at=T0 - timedelta(days=5)),
    }
    asks = [("alice", "what food do I like?", T0), ("alice", "what is my daughter called?", T0 + timedelta(days=1)),
            ("alice", "which instrument am I learning?", T0 + timedelta(days=30)),
            ("alice", "what's the capital of Australia?", T0 + timedelta(days=31)),
            ("bob", "when do I work?", T0 + timedelta(days=2))]
    for ns, q, at in asks:
        bank.recall(q, namespace=ns, params=LOGGED, now=at)
    bank.recall("hello there", namespace="alice", params=LOGGED, now=T0 + timedelta(days=3), gate=True)  # declined
    bank.label("alice", "what food do I like?", ids["veg"], as_of=T0)
    bank.label("alice", "what is my daughter called?", ids["mia"])  # unpinned: matches any moment
    bank.import_labels([{"namespace": "alice", "query": "what's the capital of Australia?", "relevant": []}])
    return bank, ids


def snapshot(bank: MemoryBank) -> tuple:
    counts = {m.id: (m.access_count, m.last_accessed_at) for m in bank.memories(namespace=None, status=None,
                                                                                limit=None)}
    return counts, bank.retrievals(limit=None), bank.stats()["change_seq"]


def test_replaying_the_logged_settings_reproduces_the_log_and_changes_nothing(logged_bank):
    bank, _ = logged_bank
    before = snapshot(bank)
    report = tuning.replay(bank, LOGGED)
    assert report.replayed == 5 and report.skipped == 1  # the gate declined one turn: nothing to compare
    assert report.changed == report.newly_empty == report.newly_nonempty == 0
    for row in report.rows:
        assert row["after"] == row["before"]
    assert report.labeled == 3
    assert report.deltas() == {"precision": 0.0, "recall": 0.0, "empty_rate": 0.0, "f_beta": 0.0}
    assert snapshot(bank) == before  # no access counted, no retrieval logged


def test_a_closed_threshold_empties_every_result_and_reports_the_deltas(logged_bank):
    bank, _ = logged_bank
    before = snapshot(bank)
    report = tuning.replay(bank, LOGGED.replace(threshold=1.0))
    nonempty = sum(bool(r["before"]) for r in report.rows)
    assert nonempty > 0
    assert report.changed == report.newly_empty == nonempty
    assert all(r["after"] == [] for r in report.rows)
    assert report.after.recall == 0.0 and report.after.empty_rate == 1.0
    assert report.deltas()["recall"] == -report.before.recall
    assert snapshot(bank) == before


def test_each_recall_is_replayed_as_of_its_own_time(logged_bank):
    bank, ids = logged_bank
    report = tuning.replay(bank, LOGGED.replace(threshold=0.0, k=10))
    by_query = {r["query"]: r for r in report.rows}
    # the cello memory was written 20 days after T0: a recall at T0 cannot see it, one at T0 + 30 days can
    assert ids["cello"] not in by_query["what food do I like?"]["after"]
    assert ids["cello"] in by_query["which instrument am I learning?"]["after"]
    assert ids["night"] not in by_query["what food do I like?"]["after"]  # bob's memory, not alice's


def test_date_range_and_namespace_narrow_the_replay(logged_bank):
    bank, _ = logged_bank
    report = tuning.replay(bank, LOGGED, since=T0 + timedelta(hours=1), until=T0 + timedelta(days=2, hours=1))
    assert sorted(r["query"] for r in report.rows) == ["what is my daughter called?", "when do I work?"]
    assert tuning.replay(bank, LOGGED, namespace="bob").replayed == 1


def test_memctl_replay(logged_bank):
    bank, _ = logged_bank
    bank.save_preset("closed", LOGGED.replace(threshold=1.0))
    path = bank.path
    before = snapshot(bank)
    bank.close()
    runner = CliRunner()
    result = runner.invoke(cli, ["--bank", str(path), "replay", "--preset", "closed", "--since", "2026-02-01",
                                 "--until", "2026-12-31"])
    assert result.exit_code == 0, result.output
    assert "5 logged recalls replayed under 'closed' (nothing recorded); 1 skipped" in result.output
    assert "newly empty:" in result.output and "on 3 labeled recalls:" in result.output
    out = json.loads(runner.invoke(cli, ["--bank", str(path), "replay", "--preset", "closed", "--json"]).stdout)
    assert out["newly_empty"] == out["changed"] > 0
    result = runner.invoke(cli, ["--bank", str(path), "replay", "--preset", "nope"])
    assert result.exit_code == 1 and "no preset named 'nope'" in result.output
    with MemoryBank.open(path) as again:
        assert snapshot(again) == before
