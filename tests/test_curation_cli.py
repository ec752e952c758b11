"""memctl's curation commands through click's CliRunner against real bank files in tmp_path:
conflicts detect/list/resolve, undo, merge plan/apply/undo, maintain, profile and ingest.

Every fixture requests the session ``embedder`` first, so the model is loaded once for the run
(the CLI opens banks with the process-wide cached embedder).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from memory_core.cli import cli


@pytest.fixture(scope="session")
def embedder():
    """all-MiniLM-L6-v2 rather than the default model: the merge plans these tests read were measured with it."""
    from memory_core.embedding.embedder import MINILM_MODEL, get_embedder

    return get_embedder(MINILM_MODEL)

NOW = "2026-11-30T12:00:00Z"


def memctl(imported_bank: Path, *args: str, ok: bool = True) -> Result:
    """Run ``memctl --bank BANK ARGS...``; a Python traceback is always a failure."""
    result = CliRunner().invoke(cli, ["--bank", str(imported_bank), *args])
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"memctl {' '.join(args)} raised {result.exception!r}:\n{result.output}")
    if ok:
        assert result.exit_code == 0, f"memctl {' '.join(args)} failed:\n{result.output}"
    return result


def one_error_line(result: Result) -> str:
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    return lines[0]


def export(imported_bank: Path) -> list[dict[str, Any]]:
    out = memctl(imported_bank, "export").stdout
    return sorted((json.loads(line) for line in out.splitlines() if line.strip()), key=lambda m: m["id"])


def show(imported_bank: Path, memory_id: int) -> dict[str, Any]:
    return json.loads(memctl(imported_bank, "show", str(memory_id), "--json").stdout)["memory"]


def conflicts_json(imported_bank: Path, status: str = "open") -> list[dict[str, Any]]:
    return json.loads(memctl(imported_bank, "conflicts", "list", "--status", status, "--json").stdout)


MEMORIES = [
    # ids follow the lines: 1..10
    {"text": "Prefers tea in the morning", "namespace": "alice", "importance": 0.7, "category": "preference",
     "created_at": "2025-03-01T08:00:00Z"},
    {"text": "Now prefers coffee in the morning", "namespace": "alice", "importance": 0.7, "category": "preference",
     "created_at": "2026-03-01T08:00:00Z"},
    {"text": "Works as a UX researcher in Stockholm", "namespace": "alice", "importance": 0.8, "category": "profile",
     "created_at": "2025-02-01T08:00:00Z"},
    {"text": "Goal is to run the Stockholm half marathon", "namespace": "alice", "importance": 0.8,
     "category": "goal", "created_at": "2026-05-01T08:00:00Z"},
    {"text": "Long run: 9 km at 6:40/km", "namespace": "alice", "importance": 0.2, "category": "other",
     "durability": "transient",  # a log of one run: it passes (no time word tells the rule so)
     "created_at": "2025-01-10T08:00:00Z"},
    {"text": "Plans to move to Berlin in March 2026", "namespace": "bob", "importance": 0.7, "category": "goal",
     "created_at": "2025-10-01T08:00:00Z"},
    {"text": "Planning to move to Berlin in March 2026", "namespace": "bob", "importance": 0.75, "category": "goal",
     "created_at": "2025-11-01T08:00:00Z"},
    {"text": "Works as a backend engineer", "namespace": "bob", "importance": 0.8, "category": "profile",
     "created_at": "2025-10-01T08:00:00Z"},
    {"text": "Prefers dark mode in every editor", "namespace": "bob", "importance": 0.6, "category": "preference",
     "created_at": "2026-10-01T08:00:00Z"},
    {"text": "Prefers dark mode in every editor", "namespace": "bob", "importance": 0.6, "category": "preference",
     "created_at": "2026-11-01T08:00:00Z"},
]
TEA, COFFEE, UX, GOAL, RUN_LOG, BERLIN1, BERLIN2, ENGINEER, DARK1, DARK2 = range(1, 11)


@pytest.fixture
def imported_bank(tmp_path: Path, embedder) -> Path:
    """A bank imported from JSON lines (import runs no conflict checks, so nothing is flagged yet)."""
    path = tmp_path / "banks" / "bank.duckdb"
    source = tmp_path / "memories.jsonl"
    source.write_text("".join(json.dumps(m) + "\n" for m in MEMORIES), encoding="utf-8")
    assert "imported 10" in memctl(path, "import", str(source)).stdout
    return path


@pytest.fixture
def no_llm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No LLM configured anywhere: no MEMCTL_LLM_*/OPENAI_* variables and no config file."""
    for name in ("MEMCTL_LLM_BASE_URL", "MEMCTL_LLM_MODEL", "MEMCTL_LLM_API_KEY", "MEMCTL_CONFIG",
                 "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


# -- conflicts and undo ------------------------------------------------------------------------


def test_conflicts_detect_list_resolve_and_undo(imported_bank: Path) -> None:
    assert memctl(imported_bank, "conflicts", "list").stdout.strip() == "no open conflicts"
    before = export(imported_bank)

    out = memctl(imported_bank, "conflicts", "detect").stdout
    assert "1 new conflict(s)" in out
    assert export(imported_bank) == before  # detecting flags, it changes no memory

    listed = memctl(imported_bank, "conflicts", "list").stdout
    assert "[alice] open" in listed and "suggests newer_wins" in listed
    assert f"#{TEA} explicit: Prefers tea in the morning" in listed
    assert f"#{COFFEE} explicit: Now prefers coffee in the morning" in listed
    [c] = conflicts_json(imported_bank)
    assert (c["a"]["id"], c["b"]["id"], c["status"]) == (TEA, COFFEE, "open")
    assert memctl(imported_bank, "conflicts", "list", "-n", "bob").stdout.strip() == "no open conflicts"
    # Detecting again finds nothing new.
    assert "0 new conflict(s)" in memctl(imported_bank, "conflicts", "detect").stdout

    out = memctl(imported_bank, "conflicts", "resolve", str(c["id"]), "newer_wins").stdout
    match = re.search(r"conflict (\d+): resolved \(newer_wins\); undo with: memctl undo (\d+)", out)
    assert match and int(match.group(1)) == c["id"]
    tea = show(imported_bank, TEA)
    assert (tea["status"], tea["superseded_by"]) == ("superseded", COFFEE)
    assert conflicts_json(imported_bank) == []
    assert [x["resolution"] for x in conflicts_json(imported_bank, "resolved")] == ["newer_wins"]
    after_detect = export(imported_bank)
    assert after_detect != before

    assert f"undid operation {match.group(2)}" in memctl(imported_bank, "undo", match.group(2)).stdout
    assert [m for m in export(imported_bank) if m["id"] == TEA][0]["status"] == "active"
    restored = export(imported_bank)
    assert [{k: v for k, v in m.items() if k != "updated_at"} for m in restored] == \
           [{k: v for k, v in m.items() if k != "updated_at"} for m in before]
    assert restored == before  # even the bookkeeping time is put back
    assert [x["id"] for x in conflicts_json(imported_bank)] == [c["id"]]


def test_undo_of_an_undo_and_a_second_undo_give_one_clear_line(imported_bank: Path) -> None:
    memctl(imported_bank, "conflicts", "detect")
    [c] = conflicts_json(imported_bank)
    out = memctl(imported_bank, "conflicts", "resolve", str(c["id"]), "newer_wins").stdout
    group = int(re.search(r"memctl undo (\d+)", out).group(1))
    memctl(imported_bank, "undo", str(group))
    before = export(imported_bank)

    assert "already undone" in one_error_line(memctl(imported_bank, "undo", str(group), ok=False))
    # The undo is the next operation; it is not undone, whether by operation or by event.
    assert "an undo cannot be undone" in one_error_line(memctl(imported_bank, "undo", str(group + 1), ok=False))
    history = json.loads(memctl(imported_bank, "show", str(TEA), "--json").stdout)["history"]
    assert [e["action"] for e in history] == ["add", "resolve_conflict", "undo"]
    undo_event = history[-1]["id"]
    assert "an undo cannot be undone" in one_error_line(memctl(imported_bank, "undo", "--event", str(undo_event),
                                                               ok=False))
    assert "no operation with group id 999" in one_error_line(memctl(imported_bank, "undo", "999", ok=False))
    usage = memctl(imported_bank, "undo", ok=False)
    assert usage.exit_code == 2 and "OPERATION_ID" in usage.output
    assert export(imported_bank) == before


def test_the_undo_of_a_dismissal_is_an_operation_too(imported_bank: Path) -> None:
    memctl(imported_bank, "conflicts", "detect")
    [c] = conflicts_json(imported_bank)
    out = memctl(imported_bank, "conflicts", "resolve", str(c["id"]), "dismiss").stdout
    group = int(re.search(r"memctl undo (\d+)", out).group(1))
    memctl(imported_bank, "undo", str(group))
    assert [x["id"] for x in conflicts_json(imported_bank)] == [c["id"]]  # open again
    assert "an undo cannot be undone" in one_error_line(memctl(imported_bank, "undo", str(group + 1), ok=False))


# -- merges ------------------------------------------------------------------------------------


def test_merge_plan_previews_and_changes_nothing(imported_bank: Path) -> None:
    before = export(imported_bank)
    out = memctl(imported_bank, "merge", "plan").stdout
    assert re.search(r"\[bob\] near duplicate, similarity >= 0\.\d\d", out) and f"[{BERLIN1}, {BERLIN2}]" in out
    assert f"[bob] exact duplicate" in out and f"[{DARK1}, {DARK2}]" in out
    assert "-> Prefers dark mode in every editor" in out
    assert "[alice]" not in out  # tea and coffee contradict; they are not duplicates
    assert export(imported_bank) == before
    assert memctl(imported_bank, "merge", "plan", "-n", "alice").stdout.strip() == "nothing to merge"


def test_merge_plan_apply_then_merge_undo(imported_bank: Path) -> None:
    before = export(imported_bank)
    out = memctl(imported_bank, "merge", "plan", "--apply").stdout
    match = re.search(r"merged 2 cluster\(s\); undo one with: memctl merge undo MERGE_ID \(ids (\d+), (\d+)\)", out)
    assert match, out
    after = {m["id"]: m for m in export(imported_bank)}
    assert {after[i]["status"] for i in (BERLIN1, BERLIN2, DARK1, DARK2)} == {"merged"}
    merged_ids = {after[i]["merged_into"] for i in (BERLIN1, BERLIN2, DARK1, DARK2)}
    assert len(merged_ids) == 2
    for mid in merged_ids:
        assert after[mid]["status"] == "active" and after[mid]["source"] == "merge"
    assert after[after[BERLIN1]["merged_into"]]["importance"] == 0.75  # the highest of the members

    for merge_id in match.groups():
        assert f"merge {merge_id} undone" in memctl(imported_bank, "merge", "undo", merge_id).stdout
    assert export(imported_bank) == before
    assert "already undone" in one_error_line(memctl(imported_bank, "merge", "undo", match.group(1), ok=False))
    assert "no merge with id 99" in one_error_line(memctl(imported_bank, "merge", "undo", "99", ok=False))


def test_merge_apply_ids_with_a_text(imported_bank: Path) -> None:
    out = memctl(imported_bank, "merge", "apply", str(UX), str(GOAL), "--text",
                 "UX researcher in Stockholm, training for the Stockholm half marathon").stdout
    match = re.search(r"merge (\d+): memory (\d+) = '(.*)'; undo with: memctl merge undo (\d+)", out)
    assert match and match.group(1) == match.group(4)
    merged = show(imported_bank, int(match.group(2)))
    assert merged["text"] == "UX researcher in Stockholm, training for the Stockholm half marathon"
    assert merged["namespace"] == "alice" and merged["importance"] == 0.8
    assert show(imported_bank, UX)["merged_into"] == merged["id"]
    # Bad merges: one clear line, nothing changed.
    before = export(imported_bank)
    assert "one namespace" in one_error_line(memctl(imported_bank, "merge", "apply", str(TEA), str(ENGINEER),
                                                    ok=False))
    assert "only live memories" in one_error_line(memctl(imported_bank, "merge", "apply", str(UX), str(TEA),
                                                         ok=False))
    assert "at least two" in one_error_line(memctl(imported_bank, "merge", "apply", str(TEA), ok=False))
    assert export(imported_bank) == before


# -- maintain ----------------------------------------------------------------------------------


def test_maintain_dry_run_prints_what_would_change_and_changes_nothing(imported_bank: Path) -> None:
    memctl(imported_bank, "conflicts", "detect")  # the open tea/coffee conflict: offered, never settled by default
    before = export(imported_bank)

    out = memctl(imported_bank, "maintain", "--dry-run", "--all", "--now", NOW).stdout

    assert f"cleanup: would expire [{RUN_LOG}] (alice): 'Long run: 9 km at 6:40/km'" in out
    assert "never recalled" in out
    assert "resolve_conflict" not in out  # below the automatic bar: it waits for an operator
    assert f"merge: would merge [{BERLIN1}, {BERLIN2}] (bob)" in out
    assert f"merge: would merge [{DARK1}, {DARK2}] (bob)" in out
    assert "undo:" not in out  # nothing was done
    # the durable memories a year old and never used are listed for review, never expired
    assert re.search(r"dry run \d+ \(cleanup, merge\): expired 1, review 7, merged 4, merges 2, superseded 0", out)
    assert "live 10," in out
    assert export(imported_bank) == before


def test_maintain_all_applies_and_reports_json(imported_bank: Path) -> None:
    memctl(imported_bank, "conflicts", "detect")
    dry = memctl(imported_bank, "maintain", "--dry-run", "--all", "--now", NOW).stdout
    previewed = sorted(re.findall(r"^(cleanup|merge): would (\w+) \[([\d, ]+)\]", dry, re.M))

    report = json.loads(memctl(imported_bank, "maintain", "--all", "--now", NOW, "--json").stdout)

    assert report["dry_run"] is False and report["steps"] == ["cleanup", "merge"]
    assert report["counts"] == {"expired": 1, "review": 7, "merged": 4, "merges": 2, "superseded": 0,
                                "conflicts_detected": 0}
    done = sorted((c["step"], c["action"], ", ".join(map(str, c["memory_ids"]))) for c in report["changes"])
    assert done == previewed  # the preview was exactly what happened
    assert all(c["group_id"] for c in report["changes"] if c["action"] != "review")  # a review changes nothing
    # 10 memories - 1 expired - 4 merged + 2 merges (the tea/coffee conflict stays open for an operator)
    assert report["stats"]["active"] == 7
    # Touched as of NOW: only the merged dark-mode memory (dated 2026-11-01, its newest member) is warm.
    assert report["stats"]["by_tier"] == {"hot": 0, "warm": 1, "cold": 6}
    after = {m["id"]: m for m in export(imported_bank)}
    assert after[RUN_LOG]["status"] == "archived" and after[TEA]["status"] == "active"
    # The expiry is undone with the id the report gives.
    [expiry] = [c for c in report["changes"] if c["action"] == "expire"]
    memctl(imported_bank, "undo", str(expiry["group_id"]))
    assert show(imported_bank, RUN_LOG)["status"] == "active"
    # Nothing is due a day later; --all is what forces a run.
    assert "nothing is due" in memctl(imported_bank, "maintain", "--now", "2026-12-01T12:00:00Z").stdout


def test_maintain_text_output_names_the_undo_of_each_change(imported_bank: Path) -> None:
    out = memctl(imported_bank, "maintain", "--step", "cleanup", "--now", NOW, "-n", "alice").stdout
    assert re.search(rf"cleanup: did expire \[{RUN_LOG}\] \(alice\): .*\[undo: memctl undo \d+\]", out)
    assert re.search(r"^run \d+ \(cleanup\): expired 1,", out, re.M)
    assert show(imported_bank, RUN_LOG)["status"] == "archived"
    assert show(imported_bank, DARK1)["status"] == "active"  # bob was not maintained, nor was merging


# -- profile -----------------------------------------------------------------------------------


def test_profile_prints_the_core_of_a_namespace(imported_bank: Path) -> None:
    out = memctl(imported_bank, "profile", "alice").stdout.splitlines()
    assert out == ["About: Works as a UX researcher in Stockholm",
                   "Goals: Goal is to run the Stockholm half marathon",
                   "Preferences: Now prefers coffee in the morning; Prefers tea in the morning"]
    data = json.loads(memctl(imported_bank, "profile", "bob", "--json").stdout)
    assert data["namespace"] == "bob"
    assert {m["id"] for m in data["memories"]} == {BERLIN1, BERLIN2, ENGINEER, DARK1, DARK2}
    assert data["memories"][0]["id"] == ENGINEER  # the most important first
    assert memctl(imported_bank, "profile", "nobody").stdout.strip() == "nothing important known about nobody yet"
    # The profile follows curation: a superseded preference drops out.
    memctl(imported_bank, "conflicts", "detect")
    [c] = conflicts_json(imported_bank)
    memctl(imported_bank, "conflicts", "resolve", str(c["id"]), "newer_wins")
    assert "Preferences: Now prefers coffee in the morning" in memctl(imported_bank, "profile", "alice").stdout.splitlines()


# -- ingest ------------------------------------------------------------------------------------

CONVERSATION = [
    {"role": "user", "content": "Hi! I work as a nurse in Uppsala and I really prefer tea in the morning.",
     "at": "2025-03-01T08:00:00Z"},
    {"role": "assistant", "content": "Nice to meet you!"},
    {"role": "user", "content": "You can reach me at anna.berg@example.com. I'm so tired today.",
     "at": "2025-03-01T08:05:00Z"},
]


def test_ingest_a_conversation_file(imported_bank: Path, tmp_path: Path) -> None:
    conv = tmp_path / "conversation.json"
    conv.write_text(json.dumps(CONVERSATION), encoding="utf-8")

    out = memctl(imported_bank, "ingest", str(conv), "-n", "anna").stdout

    assert "extracted 2 memories (rules:" in out
    added = [int(x) for x in re.findall(r"added #(\d+)", out)]
    assert len(added) == 2
    assert "skipped turn 1: assistant turn" in out and "redacted in turn 2: email" in out
    texts = {show(imported_bank, mid)["text"]: show(imported_bank, mid) for mid in added}
    assert set(texts) == {"Works as a nurse in Uppsala", "Prefers tea in the morning"}
    assert all(m["source"] == "conversation" and m["created_at"] == "2025-03-01T08:00:00+00:00"
               for m in texts.values())
    assert "anna.berg" not in json.dumps(export(imported_bank))

    # The same conversation again reinforces instead of duplicating; --json for tools.
    report = json.loads(memctl(imported_bank, "ingest", str(conv), "-n", "anna", "--json").stdout)
    assert report["added"] == [] and sorted(mid for mid, _ in report["reinforced"]) == sorted(added)
    assert report["extraction"]["path"] == "rules"
    assert len(report["extraction"]["memories"]) == 2
    assert sum(1 for m in export(imported_bank) if m["namespace"] == "anna") == 2

    # A contradiction is reported at once.
    later = tmp_path / "later.json"
    later.write_text(json.dumps([{"role": "user", "content": "I now prefer coffee in the morning.",
                                  "at": "2025-09-01T08:00:00Z"}]), encoding="utf-8")
    out = memctl(imported_bank, "ingest", str(later), "-n", "anna").stdout
    assert re.search(r"conflict #\d+: 'Prefers tea in the morning' vs 'Now prefers coffee in the morning' "
                     r"\(suggests newer_wins\)", out)


def test_ingest_bad_files_give_one_clear_line(imported_bank: Path, tmp_path: Path) -> None:
    before = export(imported_bank)
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    assert "is not a JSON file" in one_error_line(memctl(imported_bank, "ingest", str(broken), "-n", "anna", ok=False))
    robot = tmp_path / "robot.json"
    robot.write_text(json.dumps([{"role": "robot", "content": "beep"}]), encoding="utf-8")
    assert "role must be one of" in one_error_line(memctl(imported_bank, "ingest", str(robot), "-n", "anna", ok=False))
    assert export(imported_bank) == before


# -- --llm without a configured LLM ------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ["conflicts", "detect", "--llm"],
    ["merge", "plan", "--llm", "--apply"],
    ["maintain", "--all", "--llm", "--now", NOW],
    ["ingest", "CONVERSATION", "-n", "anna", "--llm"],
])
def test_llm_without_configuration_is_one_clear_line(imported_bank: Path, tmp_path: Path, no_llm, args) -> None:
    conv = tmp_path / "conversation.json"
    conv.write_text(json.dumps(CONVERSATION), encoding="utf-8")
    args = [str(conv) if a == "CONVERSATION" else a for a in args]
    before = export(imported_bank)

    result = memctl(imported_bank, *args, ok=False)

    assert result.exception is None or isinstance(result.exception, SystemExit)
    line = one_error_line(result)
    assert "no LLM is configured" in line and "MEMCTL_LLM_BASE_URL" in line
    assert export(imported_bank) == before
    assert conflicts_json(imported_bank, "all") == []
