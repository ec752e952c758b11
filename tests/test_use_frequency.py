"""Frequency that counts uses (issue 5): memories.use_count, kept by bank.feedback, and
ScoringParams.frequency_from = "uses" ranking by it.

use_count is how many recalls' answers used a memory (feedback decided it by given ids, citations
or similarity); access_count is how many recalls returned it. With frequency_from="uses" a memory
recalled often but never used gains nothing over one never recalled; other processes rank with
the new counts after feedback; an old bank's counts are rebuilt from its feedback on upgrade.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from conftest import downgrade
from memory_core import MemoryBank, ScoringParams, ValidationError
from memory_core.storage.schema import MIGRATIONS

T0 = datetime(2026, 1, 10, tzinfo=timezone.utc)
NOW = T0 + timedelta(days=5)
QUERY = "what does the user drink in the morning?"
# Relevance and frequency only, dense similarity only: two memories sharing one vector tie on
# everything but the count frequency reads.
USES = ScoringParams(alpha=0.5, beta=0.0, gamma=0.0, delta=0.5, lexical_weight=0.0, similarity_floor=0.0,
                     similarity_ceiling=1.0, frequency_base=0.0, frequency_step=0.25, k=2, threshold=0.0,
                     frequency_from="uses")
RETRIEVALS = USES.replace(frequency_from="retrievals")


def twins(bank: MemoryBank, embedder) -> tuple[int, int]:
    """Two equally relevant memories (same vector, importance and date); the later id is returned
    first, so a tie (broken by the smaller id) never puts it on top by accident."""
    vec = embedder.encode_one(QUERY)
    never, used = bank.add_many([
        {"text": "Drinks black coffee every morning", "namespace": "u", "importance": 0.5, "created_at": T0,
         "embedding": vec},
        {"text": "Drinks green tea every morning", "namespace": "u", "importance": 0.5, "created_at": T0,
         "embedding": vec},
    ])
    return used, never


def recall_both(bank: MemoryBank, times: int) -> list[int]:
    """Record ``times`` recalls returning both memories; their retrieval ids."""
    rids = []
    for _ in range(times):
        hits = bank.recall(QUERY, namespace="u", params=RETRIEVALS, now=NOW)
        assert len(hits) == 2
        rids.append(bank.last_retrieval_id)
    return rids


def uses_in_feedback(path: Path) -> dict[int, int]:
    """use_count as the feedback rows say it should be, read straight from the file."""
    import duckdb

    from memory_core.storage.duckdb import release_file

    release_file(path)  # the open bank of this process may keep the file between operations
    con = duckdb.connect(str(path), read_only=True)
    try:
        return dict(con.execute("SELECT memory_id, count(DISTINCT retrieval_id) FROM feedback_hits WHERE used "
                                "GROUP BY memory_id").fetchall())
    finally:
        con.close()


def test_feedback_counts_uses_by_given_ids_citations_and_similarity(bank):
    veg = bank.add("Prefers vegetarian food", namespace="alice", detect_conflicts=False)
    nuts = bank.add("Allergic to peanuts", namespace="alice", detect_conflicts=False)
    pan = bank.add("Owns a cast-iron pan from grandma", namespace="alice", detect_conflicts=False)

    def recall() -> int:
        assert len(bank.recall("what should I cook tonight?", namespace="alice", k=3, threshold=0.0)) == 3
        return bank.last_retrieval_id

    bank.feedback(recall(), used_ids=[veg, nuts])
    bank.feedback(recall(), answer=f"I left the peanuts out [m:{nuts}].")
    fb = bank.feedback(recall(), answer="As you like vegetarian dishes, make a mushroom risotto tonight.")
    assert fb.decided_by == "similarity" and fb.used_ids == [veg]
    got = {m: bank.get(m) for m in (veg, nuts, pan)}
    assert (got[veg].use_count, got[nuts].use_count, got[pan].use_count) == (2, 2, 0)
    assert all(m.access_count == 3 for m in got.values())  # every recall returned all three
    assert bank.usage_counts("alice") == {veg: 2, nuts: 2}
    assert got[veg].to_dict()["use_count"] == 2
    bank.flush()
    assert uses_in_feedback(bank.path) == {veg: 2, nuts: 2}


def test_replaced_feedback_takes_its_uses_back(bank, embedder):
    used, never = twins(bank, embedder)
    rid, other = recall_both(bank, 2)
    bank.feedback(rid, used_ids=[used])
    bank.feedback(other, used_ids=[used, never])
    assert (bank.get(used).use_count, bank.get(never).use_count) == (2, 1)
    fb = bank.feedback(rid, used_ids=[never])  # the answer used the other one after all
    assert fb.replaced
    assert (bank.get(used).use_count, bank.get(never).use_count) == (1, 2)
    bank.feedback(rid, helpful=True)  # replaced by feedback that decides nothing: no uses left for rid
    assert (bank.get(used).use_count, bank.get(never).use_count) == (1, 1)
    bank.feedback(other, answer="The weather in Lisbon is sunny this week.")  # uses nothing
    assert (bank.get(used).use_count, bank.get(never).use_count) == (0, 0)
    assert uses_in_feedback(bank.path) == {}


def test_uses_outrank_an_equally_relevant_memory_recalled_as_often_but_never_used(bank, embedder):
    used, never = twins(bank, embedder)
    for rid in recall_both(bank, 3):
        bank.feedback(rid, used_ids=[used])
    a, b = bank.get(used), bank.get(never)
    assert a.access_count == b.access_count == 3 and (a.use_count, b.use_count) == (3, 0)

    by_retrievals = bank.recall(QUERY, namespace="u", params=RETRIEVALS, now=NOW, record=False)
    freq = {h.memory.id: h.components["frequency"] for h in by_retrievals}
    assert freq[used] == freq[never] == pytest.approx(0.75)  # 3 recalls each
    assert by_retrievals[0].score == pytest.approx(by_retrievals[1].score)
    assert [h.memory.id for h in by_retrievals] == [never, used]  # a tie: the smaller id first

    by_uses = bank.recall(QUERY, namespace="u", params=USES, now=NOW, record=False)
    assert [h.memory.id for h in by_uses] == [used, never]
    assert by_uses[0].score > by_uses[1].score
    assert {h.memory.id: h.components["frequency"] for h in by_uses} == pytest.approx({used: 0.75, never: 0.0})
    assert by_uses[0].memory.use_count == 3  # the hit carries the count it was ranked by

    # The tuner's candidates select exactly what recall returns, under either setting.
    cands = bank.candidates([QUERY], "u", now=NOW)
    assert cands.select(USES) == [[used, never]] and cands.select(RETRIEVALS) == [[never, used]]


def test_another_bank_on_the_same_file_ranks_with_the_new_counts(bank_path, embedder):
    with MemoryBank.open(bank_path, embedder=embedder) as agent:
        used, never = twins(agent, embedder)
        rids = recall_both(agent, 2)
        agent.flush()
        with MemoryBank.open(bank_path, embedder=embedder) as dashboard:
            before = dashboard.recall(QUERY, namespace="u", params=USES, now=NOW, record=False)
            assert [h.memory.id for h in before] == [never, used]  # index loaded, nobody used yet
            for rid in rids:
                agent.feedback(rid, used_ids=[used])
            after = dashboard.recall(QUERY, namespace="u", params=USES, now=NOW, record=False)
            assert [h.memory.id for h in after] == [used, never]
            assert after[0].memory.use_count == 2
            agent.feedback(rids[0], used_ids=[never])  # replaced: one use each now
            again = dashboard.recall(QUERY, namespace="u", params=USES, now=NOW, record=False)
            assert {h.memory.id: h.memory.use_count for h in again} == {used: 1, never: 1}
            assert again[0].score == pytest.approx(again[1].score)
    with MemoryBank.open(bank_path, embedder=embedder) as reopened:  # from the saved index cache
        hits = reopened.recall(QUERY, namespace="u", params=USES, now=NOW, record=False)
        assert {h.memory.id: h.memory.use_count for h in hits} == {used: 1, never: 1}


CHILD = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from datetime import datetime
    from memory_core import MemoryBank, ScoringParams

    path, folder, query, now, params = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    params = ScoringParams.from_dict(json.loads(params))

    def ranking():
        hits = bank.recall(query, namespace="u", params=params, now=datetime.fromisoformat(now), record=False)
        return [[h.memory.id, h.memory.use_count, h.score] for h in hits]

    with MemoryBank.open(path, actor="child") as bank:
        first = ranking()  # the namespace index is loaded before the parent gives feedback
        (folder / "before.json").write_text(json.dumps(first))
        deadline = time.monotonic() + 120
        while not (folder / "go").exists():
            if time.monotonic() > deadline:
                raise SystemExit("no go")
            time.sleep(0.01)
        (folder / "after.json.tmp").write_text(json.dumps(ranking()))
        (folder / "after.json.tmp").replace(folder / "after.json")
    """
)


def _wait(path: Path, child: subprocess.Popen, log: Path, limit: float = 180.0) -> object:
    deadline = time.monotonic() + limit
    while not path.exists():
        if child.poll() is not None or time.monotonic() > deadline:
            child.kill()
            pytest.fail(f"the child process did not write {path.name}:\n{log.read_text(errors='replace')}")
        time.sleep(0.05)
    return json.loads(path.read_text())


@pytest.mark.slow
def test_another_process_ranks_with_the_uses_feedback_recorded(bank_path, embedder, tmp_path):
    with MemoryBank.open(bank_path, embedder=embedder) as agent:
        used, never = twins(agent, embedder)
        rids = recall_both(agent, 2)
        agent.flush()
        folder = tmp_path / "child"
        folder.mkdir()
        script, log = folder / "child.py", folder / "child.log"
        script.write_text(CHILD)
        env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1]),
                                                           env.get("PYTHONPATH")]))
        with open(log, "w") as out:
            child = subprocess.Popen([sys.executable, str(script), str(bank_path), str(folder), QUERY,
                                      NOW.isoformat(), USES.to_json()], stdout=out, stderr=subprocess.STDOUT,
                                     env=env, cwd=folder)
        try:
            before = _wait(folder / "before.json", child, log)
            assert [r[0] for r in before] == [never, used] and [r[1] for r in before] == [0, 0]
            for rid in rids:
                agent.feedback(rid, used_ids=[used])
            (folder / "go").touch()
            after = _wait(folder / "after.json", child, log)
        finally:
            child.wait(timeout=120)
    assert child.returncode == 0, log.read_text(errors="replace")
    assert [r[0] for r in after] == [used, never]
    assert {r[0]: r[1] for r in after} == {used: 2, never: 0}
    assert after[0][2] > after[1][2]


def test_merge_sums_use_counts_like_access_counts(bank, embedder):
    used, never = twins(bank, embedder)
    for rid in recall_both(bank, 2):
        bank.feedback(rid, used_ids=[used, never])
    bank.feedback(recall_both(bank, 1)[0], used_ids=[used])
    record = bank.merge([used, never], text="Drinks green tea or black coffee every morning")
    merged = bank.get(record.merged_id)
    assert merged.use_count == 3 + 2 and merged.access_count == 3 + 3
    bank.undo_merge(record.id)
    assert (bank.get(used).use_count, bank.get(never).use_count) == (3, 2)


def test_export_and_import_keep_use_counts(bank, embedder, tmp_path):
    used, never = twins(bank, embedder)
    bank.feedback(recall_both(bank, 1)[0], used_ids=[used])
    dump = tmp_path / "dump.jsonl"
    bank.export_jsonl(dump)
    rows = {r["id"]: r for r in map(json.loads, dump.read_text().splitlines())}
    assert rows[used]["use_count"] == 1 and rows[never]["use_count"] == 0
    with MemoryBank.open(tmp_path / "copy.duckdb", embedder=embedder) as copy:
        copy.import_jsonl(dump)
        assert copy.get(used).use_count == 1 and copy.get(never).use_count == 0
        with pytest.raises(ValidationError):
            copy.add_many([{"text": "Bad count", "use_count": -1}])
        assert copy.count(None) == 2


def test_a_schema_5_bank_upgrades_and_backfills_use_counts_from_feedback(bank_path, embedder):
    with MemoryBank.open(bank_path, embedder=embedder) as old:
        used, never = twins(old, embedder)
        first, second, third = recall_both(old, 3)
        old.feedback(first, used_ids=[used, never])
        old.feedback(second, used_ids=[used])
        old.feedback(third, answer="The weather in Lisbon is sunny this week.")  # uses nothing
    downgrade(bank_path, 5)
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        assert (bank.get(used).use_count, bank.get(never).use_count) == (2, 1)
        hits = bank.recall(QUERY, namespace="u", params=USES, now=NOW, record=False)
        assert [h.memory.id for h in hits] == [used, never]
        bank.feedback(third, used_ids=[never])  # counts keep moving after the upgrade
        assert (bank.get(used).use_count, bank.get(never).use_count) == (2, 2)
    assert "use_count" in " ".join(MIGRATIONS[6])


@pytest.mark.parametrize("bad", ["use", "USES", "", None, 1, True])
def test_bad_frequency_from_is_refused_and_changes_nothing(bank, embedder, bad):
    used, never = twins(bank, embedder)
    with pytest.raises(ValidationError, match="frequency_from"):
        ScoringParams(frequency_from=bad)
    with pytest.raises(ValidationError, match="frequency_from"):
        USES.replace(frequency_from=bad)
    with pytest.raises(ValidationError, match="frequency_from"):
        ScoringParams.from_dict({**USES.to_dict(), "frequency_from": bad})
    before = (bank.presets(), bank.active_preset(), bank.retrievals(limit=None))
    with pytest.raises(ValidationError, match="frequency_from"):
        bank.save_preset("broken", ScoringParams.from_dict({"frequency_from": bad}))
    assert (bank.presets(), bank.active_preset(), bank.retrievals(limit=None)) == before
    assert bank.get(used).access_count == 0


def test_presets_round_trip_frequency_from_and_old_presets_default_to_retrievals(bank):
    bank.save_preset("by-uses", ScoringParams().replace(frequency_from="uses"))
    assert bank.preset("by-uses").frequency_from == "uses"
    assert ScoringParams.from_dict(json.loads(USES.to_json())) == USES
    old = json.loads(ScoringParams().to_json())
    del old["frequency_from"]  # a preset saved before the setting existed
    assert ScoringParams.from_dict(old).frequency_from == "retrievals"
    assert ScoringParams().frequency_from == "retrievals"  # the default keeps today's behaviour
    with pytest.raises(ValidationError, match="use_count"):  # blend cannot count uses it was not given
        from memory_core.index.scoring import blend
        blend(USES, similarity=np.ones(1), lexical=np.zeros(1), created=np.zeros(1), last_access=np.full(1, np.nan),
              importance=np.zeros(1), access_count=np.zeros(1), now=0.0)


def test_the_tuner_tries_frequency_from_uses_when_the_labels_need_it(bank, embedder):
    """Labels say the memory the answers used is the relevant one: only frequency_from="uses" can
    tell the twins apart, so the tuner (starting from "retrievals") proposes it, the same way for a
    given seed."""
    from memory_core.evaluation import tuning

    used, never = twins(bank, embedder)
    for rid in recall_both(bank, 2):
        bank.feedback(rid, used_ids=[used])
    for q in (QUERY, "morning drink", "what do I have for breakfast to drink", "hot drinks"):
        bank.label("u", q, used, relevant=True)
        bank.label("u", q, never, relevant=False)
    labeled = tuning.prepare(bank, bank.labels(namespace="u"), now=NOW)
    base = RETRIEVALS.replace(k=1)
    assert labeled.evaluate(base).precision == 0.0  # the tie goes to the smaller id: the unused twin
    result = tuning.tune(labeled, base, folds=2, trials=20, seed=4)
    assert result.proposal.frequency_from == "uses" and result.changes["frequency_from"] == ("retrievals", "uses")
    assert result.fit.precision == 1.0 and result.cv_mean > result.cv_base_mean
    again = tuning.tune(labeled, base, folds=2, trials=20, seed=4)
    assert again.proposal == result.proposal and again.cv == result.cv


def test_memctl_saves_a_uses_preset_and_shows_use_counts(bank_path, embedder):
    from click.testing import CliRunner

    from memory_core.cli import cli

    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        used, _ = twins(bank, embedder)
        bank.feedback(recall_both(bank, 1)[0], used_ids=[used])
    run = lambda *args: CliRunner().invoke(cli, ["--bank", str(bank_path), *args])  # noqa: E731
    saved = run("preset", "save", "by-use", "--set", "frequency_from=uses")
    assert saved.exit_code == 0, saved.output
    listed = run("preset", "list")
    assert next(line for line in listed.output.splitlines() if "by-use" in line).endswith("frequency-from=uses")
    refused = run("preset", "save", "often", "--set", "frequency_from=often")
    assert refused.exit_code != 0 and "frequency_from" in refused.output
    shown = run("show", str(used))
    assert shown.exit_code == 0 and any(line.split() == ["use_count:", "1"] for line in shown.output.splitlines())
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        assert bank.preset("by-use").frequency_from == "uses" and "often" not in bank.presets()
