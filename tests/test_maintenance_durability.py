"""Maintenance by durability: a default run expires transient memories once their time has passed
and never expires a durable one for age or disuse (it lists it for review); seed 004's age and
importance rule is an explicit option. A whole run can be undone, exactly; a run killed between two
of its operations leaves the bank consistent; bad plan values are refused and change nothing."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from bench.checks import store_invariants
from memory_core import MemoryBank, StateError, ValidationError
from memory_core.curation.maintenance import MaintenancePlan

ROOT = Path(__file__).resolve().parent.parent
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)  # a Monday


def ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


# key, text, days old, last recalled (days ago or None), pinned, expired by a default run at NOW
CASES = [
    ("cold", "Has a cold today.", 4, None, False, True),            # a day's state, 4 days on
    ("cold_new", "Has a headache today.", 1, None, False, False),    # a day's state, still its day
    ("oncall", "Is on call this week.", 15, None, False, True),       # a week's state, two weeks on
    ("oncall_new", "Working from the Oslo office this week.", 8, None, False, False),
    ("flight", "Flies to Tokyo on 20 November.", 30, None, False, True),     # its date is past
    ("flight_new", "Flies to Rome on 5 December.", 30, None, False, False),  # its date is ahead
    ("log", "Asked how to rebase a branch.", 40, None, False, True),         # a log, old and unused
    ("log_used", "Asked how to squash commits.", 40, 5, False, False),       # a log recalled lately
    ("log_young", "Asked which time zone Lisbon is in.", 10, None, False, False),
    ("pinned", "Has a sore throat today.", 10, None, True, False),           # pinned: never touched
    ("peanuts", "Allergic to peanuts.", 900, None, False, False),            # durable: review
    ("leipzig", "Moved to Leipzig in 2019.", 400, 300, False, False),        # durable: review
    ("vegan", "Är vegan sedan 2017.", 500, 10, False, False),                # durable, used lately
    ("hometown", "老家在湖南长沙。", 30, None, False, False),                  # durable, young
]
REVIEW = {"peanuts", "leipzig"}


def build(bank: MemoryBank) -> dict[str, int]:
    ids = bank.add_many([{"text": text, "namespace": "a", "created_at": ago(days), "importance": 0.3,
                          "last_accessed_at": None if used is None else ago(used), "pinned": pinned}
                         for _, text, days, used, pinned, _ in CASES])
    return {c[0]: i for c, i in zip(CASES, ids)}


def content(bank: MemoryBank) -> str:
    out = io.StringIO()
    bank.export_jsonl(out)
    return "\n".join(sorted(out.getvalue().splitlines()))


def test_a_default_run_expires_transient_memories_whose_time_has_passed(bank: MemoryBank):
    ids = build(bank)
    report = bank.maintain(now=NOW, steps=["cleanup"])
    expired = {k for k, i in ids.items() if bank.get(i).status == "archived"}
    assert expired == {c[0] for c in CASES if c[5]}
    by_id = {c.memory_ids[0]: c for c in report.changes if c.action in ("expire", "review")}
    for key in expired:
        change = by_id[ids[key]]
        assert change.action == "expire" and change.group_id is not None
        assert change.why["durability"] == "transient" and change.why["age_days"] > 0
        assert "transient" in change.detail and "created" in change.detail
    reviews = {k for k, i in ids.items() if i in by_id and by_id[i].action == "review"}
    assert reviews == REVIEW
    assert all(bank.get(ids[k]).status == "active" for k in REVIEW)
    assert report.counts["expired"] == len(expired) and report.counts["review"] == len(REVIEW)


def test_no_durable_memory_is_expired_however_old_and_unused(bank: MemoryBank):
    ids = build(bank)
    durable = [i for i in ids.values() if bank.get(i).durability == "durable"]
    bank.maintain(now=NOW + timedelta(days=3650), steps=["cleanup"])
    assert all(bank.get(i).status == "active" for i in durable)
    # Everything transient and unpinned is gone ten years on.
    assert all(bank.get(i).status == "archived" for k, i in ids.items()
               if bank.get(i).durability == "transient" and k != "pinned")


# text, category, importance, archived by a default cleanup when 40 days old and unused
WRITER_CASES = [
    ("A customer from Brightwater Dental reported that invoices show the wrong VAT rate.", "other", 0.5, True),
    ("Ärende 3312: Bageri Norrsken kan inte logga in.", "other", 0.5, True),
    ("客户明辉牙科反馈发票上的增值税率不对。", "other", 0.5, True),
    ("The new café downstairs sells decent croissants.", "other", 0.1, True),   # rated as small talk
    ("Nya fiket på hörnet har bra croissanter.", "other", 0.1, True),
    ("楼下新开的咖啡店可颂还不错。", "other", 0.1, True),
    ("The new bakery downstairs sells decent croissants.", "other", 0.5, False),  # the default: kept
    ("Thinks open-plan offices are overrated.", "other", 0.1, False),           # an opinion lasts
    ("Tycker att öppna kontorslandskap är överskattade.", "other", 0.1, False),
    ("觉得开放式办公室被高估了。", "other", 0.1, False),
    ("Birthday is on 2 August.", "other", 0.1, False),                           # a birthday is no date
    ("Fyller år den 2 augusti.", "other", 0.1, False),
    ("生日是8月2日。", "other", 0.1, False),
    ("Bought an e-bike instead of a second car.", "decision", 0.1, False),      # an event filed as lasting
]


def test_logs_and_small_talk_go_and_what_lasts_stays_in_three_languages(bank: MemoryBank):
    ids = bank.add_many([{"text": t, "namespace": "a", "category": c, "importance": imp, "created_at": ago(40)}
                         for t, c, imp, _ in WRITER_CASES])
    report = bank.maintain(now=NOW, steps=["cleanup"])
    archived = {t for (t, *_), i in zip(WRITER_CASES, ids) if bank.get(i).status == "archived"}
    assert archived == {t for t, _, _, gone in WRITER_CASES if gone}
    # Each expiry says why: the rule's reading of the memory.
    reasons = {c.memory_ids[0]: c.why["reason"] for c in report.changes if c.action == "expire"}
    assert any("small talk" in r for r in reasons.values()) and any("log" in r for r in reasons.values())


def test_seed_004s_rule_is_an_explicit_option(bank: MemoryBank):
    ids = build(bank)
    plan = MaintenancePlan(expire_rule="age_importance")
    report = bank.maintain(now=NOW, steps=["cleanup"], plan=plan)
    # Old (over 180 days), importance under 0.7, unused for 180 days: durable or not.
    assert {k for k, i in ids.items() if bank.get(i).status == "archived"} == {"peanuts", "leipzig"}
    assert report.counts["review"] == 0
    assert bank.maintenance_runs(include_dry_runs=False)[0]["plan"]["expire_rule"] == "age_importance"


def test_a_dry_run_lists_the_same_rows_and_changes_nothing(bank: MemoryBank):
    build(bank)
    before = content(bank)
    dry = bank.maintain(now=NOW, steps=["cleanup"], dry_run=True)
    assert content(bank) == before
    real = bank.maintain(now=NOW, steps=["cleanup"])
    rows = lambda r: [(c.action, c.memory_ids, c.detail) for c in r.changes]  # noqa: E731
    assert rows(dry) == rows(real)


@pytest.mark.parametrize("changes", [
    {"expire_rule": "oldest_first"}, {"day_state_days": -1}, {"week_state_days": "14"},
    {"after_date_days": float("nan")}, {"transient_after_days": True}, {"expire_action": "shred"},
])
def test_bad_plan_values_are_refused_and_change_nothing(bank: MemoryBank, changes):
    build(bank)
    before = content(bank), len(bank.maintenance_runs())
    with pytest.raises(ValidationError, match=next(iter(changes))):
        bank.maintain(now=NOW, steps=["cleanup"], plan=MaintenancePlan(**changes))
    assert (content(bank), len(bank.maintenance_runs())) == before


def test_undo_of_a_whole_run_restores_exactly_what_it_changed(bank: MemoryBank):
    ids = build(bank)
    dupes = bank.add_many([{"text": "Prefers dark mode in every editor", "namespace": "a", "created_at": ago(d)}
                           for d in (40, 20)], dedupe=False)
    before = content(bank)
    report = bank.maintain(now=NOW, steps=["cleanup", "merge"])
    assert report.counts["expired"] > 0 and report.counts["merges"] == 1
    assert content(bank) != before
    undos = bank.undo_maintenance_run(report.run_id)
    assert len(undos) == len({c.group_id for c in report.changes if c.group_id is not None})
    after = content(bank)
    strip = lambda text: [line for line in text.splitlines()]  # noqa: E731
    assert strip(after) == strip(before), "the undo restores every memory as it was"
    assert all(bank.get(i).status == "active" for i in [*ids.values(), *dupes])
    assert bank.maintenance_runs(include_dry_runs=False)[0]["report"]["undone"]["groups"] == undos
    with pytest.raises(StateError, match="already undone"):
        bank.undo_maintenance_run(report.run_id)
    dry = bank.maintain(now=NOW, steps=["cleanup"], dry_run=True)
    with pytest.raises(StateError, match="dry run"):
        bank.undo_maintenance_run(dry.run_id)


def test_undo_of_a_run_is_refused_whole_when_a_memory_changed_since(bank: MemoryBank):
    ids = build(bank)
    report = bank.maintain(now=NOW, steps=["cleanup"])
    bank.restore(ids["cold"])  # an operator brought one back by hand
    state = content(bank)
    with pytest.raises(StateError, match=f"memory {ids['cold']} changed"):
        bank.undo_maintenance_run(report.run_id)
    assert content(bank) == state
    assert bank.get(ids["log"]).status == "archived"  # nothing of the run was undone


_KILLED_RUN = textwrap.dedent("""
    import os, signal, sys
    from datetime import datetime, timezone
    from memory_core import MemoryBank

    def progress(done, total, label):
        if label == "applied expire":  # the expiry is written; the merge is next
            os.kill(os.getpid(), signal.SIGKILL)

    bank = MemoryBank.open(sys.argv[1])
    bank.maintain(now=datetime(2026, 11, 30, 12, tzinfo=timezone.utc), steps=["cleanup", "merge"], progress=progress)
    print("not killed")
""")


def test_a_run_killed_between_its_operations_leaves_the_bank_consistent(tmp_path, embedder):
    path = tmp_path / "bank.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        ids = build(bank)
        dupes = bank.add_many([{"text": "Prefers dark mode in every editor", "namespace": "a",
                                "created_at": ago(d)} for d in (40, 20)], dedupe=False)
        bank.recall("dark mode", namespace="a", now=NOW, record=False)  # a saved index, as a served bank has
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-c", _KILLED_RUN, str(path)], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == -9 and "not killed" not in run.stdout, run.stderr[-2000:]
    assert store_invariants(path) == []
    with MemoryBank.open(path, embedder=embedder) as bank:
        expired = {k for k, i in ids.items() if bank.get(i).status == "archived"}
        assert expired == {c[0] for c in CASES if c[5]}  # the expiry, whole
        assert [bank.get(i).status for i in dupes] == ["active", "active"]  # the merge, not at all
        assert bank.maintenance_runs() == []  # the run never finished, so it is not in the log
        hits = {h.memory.id for h in bank.recall("cold today", namespace="a", now=NOW, k=20, threshold=0)}
        assert ids["cold"] not in hits and ids["cold_new"] in hits  # the index agrees with the store
        # The expiry is one operation an operator can undo; a new run finishes the work.
        [event] = [e for e in bank.history(ids["cold"]) if e.action != "add"]
        bank.undo_group(event.group_id)
        assert bank.get(ids["cold"]).status == "active"
        again = bank.maintain(now=NOW, steps=["cleanup", "merge"])
        assert again.counts["merges"] == 1 and bank.get(ids["cold"]).status == "archived"


def test_rows_left_out_of_a_preview_are_not_applied(bank: MemoryBank):
    from memory_core.curation import maintenance

    ids = build(bank)
    dry = bank.maintain(now=NOW, steps=["cleanup"], dry_run=True)
    keys = [maintenance.row_key(c) for c in dry.changes if c.action == "expire"]
    assert f"expire:{ids['cold']}" in keys
    work = maintenance.plan_run(bank, now=NOW, steps=["cleanup"])
    work.keep_only([k for k in keys if k != f"expire:{ids['cold']}"])
    report = bank.apply_maintenance(work)
    assert bank.get(ids["cold"]).status == "active" and bank.get(ids["log"]).status == "archived"
    assert report.counts["expired"] == len(keys) - 1
    assert f"expire:{ids['cold']}" not in [maintenance.row_key(c) for c in report.changes]
    assert report.counts["review"] == len(REVIEW)  # review rows stay: they change nothing


def test_memctl_maintain_takes_the_rule_and_undo_run_undoes_a_run(tmp_path, embedder):
    from click.testing import CliRunner

    from memory_core.cli import cli

    path = tmp_path / "cli.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        ids = build(bank)
    run = lambda *args: CliRunner().invoke(cli, ["--bank", str(path), *args])  # noqa: E731
    seed = run("maintain", "--step", "cleanup", "--now", NOW.isoformat(), "--rule", "age_importance", "--dry-run")
    assert seed.exit_code == 0, seed.output
    assert f"would expire [{ids['peanuts']}]" in seed.output  # seed 004's rule: durable or not
    real = run("maintain", "--step", "cleanup", "--now", NOW.isoformat())
    assert real.exit_code == 0, real.output
    assert f"would expire [{ids['peanuts']}]" not in real.output and f"review [{ids['peanuts']}]" in real.output
    with MemoryBank.open(path, embedder=embedder) as bank:
        [applied] = bank.maintenance_runs(include_dry_runs=False)
        assert bank.get(ids["cold"]).status == "archived"
    undone = run("undo-run", str(applied["id"]))
    assert undone.exit_code == 0 and f"maintenance run {applied['id']} undone" in undone.output, undone.output
    again = run("undo-run", str(applied["id"]))
    assert again.exit_code != 0 and "already undone" in again.output
    bad = run("maintain", "--rule", "oldest")
    assert bad.exit_code != 0
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.get(ids["cold"]).status == "active"


def test_the_benchmark_on_the_durability_set_archives_no_durable_case():
    """bench/maintenance_quality.py's first measure, run whole: a default cleanup 60 days on archives
    no durable case of the dev half (where the rule is chosen), in any language, and most transient
    ones; on the held-out test half what it archives is right at least 0.95 of the time in every
    language (the bar for a change made without a person), and no more than one durable case each."""
    from bench.maintenance_quality import durability_set

    result = durability_set()
    for split, languages in result["splits"].items():
        assert set(languages) == {"en", "sv", "zh", "all"}
        for lang, row in languages.items():
            assert row["transient_archived_share"] >= 0.9, (split, lang)
            if split == "dev":
                assert row["durable_archived"] == 0, (split, lang)
            elif lang != "all":
                archived = row["durable_archived"] + row["transient_archived"]
                assert row["durable_archived"] <= 1 and row["transient_archived"] / archived >= 0.95, (split, lang)
