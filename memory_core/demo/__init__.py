"""The demo set, and :func:`build`, the one way to build the demo bank.

The demo is data, shipped inside the package (``memory_core/demo/data/``, described in its
README.md) so an installed ``memctl demo`` finds it:

* ``memories.jsonl``: 753 memories an agent kept about four users, in the format
  :meth:`MemoryBank.import_jsonl` reads;
* ``queries.jsonl``: 440 user turns sent to the agent over the same months, sorted by ``at``;
* ``truth.json``: the answer key, naming memories and turns by their 1-based line numbers.

:func:`build` imports the memories into an open bank, replays the turns as its recall history
(with a simulated agent's feedback), records the contradictions it finds and labels the turns
from the answer key, so every dashboard page has something to show. ``memctl demo`` and the
tests' demo bank both call it. May import: ``errors`` and the façade (``bank``), whose
operations it drives as an operator's tools would.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..errors import ValidationError

if TYPE_CHECKING:
    from ..bank import MemoryBank

DATA: Path = Path(__file__).resolve().parent / "data"
MEMORIES: Path = DATA / "memories.jsonl"
QUERIES: Path = DATA / "queries.jsonl"
TRUTH: Path = DATA / "truth.json"
LABEL_SET = "demo"

PathLike = str | os.PathLike[str]
Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``; the stages, in order: "import", "replay", "conflicts"."""


def read_jsonl(path: PathLike) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, one per non-blank line."""
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def memories(path: PathLike = MEMORIES) -> list[dict[str, Any]]:
    """The demo memories as rows (line N is ``memories()[N - 1]``)."""
    return read_jsonl(path)


def queries(path: PathLike = QUERIES) -> list[dict[str, Any]]:
    """The demo recall history: ``{"namespace", "query", "at"}`` per turn, in the order asked."""
    return read_jsonl(path)


def truth(path: PathLike = TRUTH) -> dict[str, Any]:
    """The answer key (see data/README.md for its sections)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def labels(key: dict[str, Any], turns: list[dict[str, Any]], line_to_id: dict[int, int],
           live: set[int] | None = None) -> list[dict[str, Any]]:
    """Label rows (what :meth:`MemoryBank.import_labels` reads) from the answer key ``key``.

    Each turn becomes a query pinned to the moment it was asked; its relevant memories are the
    answer key's lines mapped to bank ids. Memories not in ``live`` (archived ones, which recall
    never returns) are left out, so a turn about only such memories expects nothing.
    """
    out = []
    for entry in key["queries"]:
        asked = turns[entry["line"] - 1]
        rel = sorted({line_to_id[line] for line in entry["relevant_lines"]
                      if line in line_to_id and (live is None or line_to_id[line] in live)})
        out.append({"namespace": entry["namespace"], "query": entry["query"], "relevant": rel, "irrelevant": [],
                    "as_of": asked["at"], "set": LABEL_SET})
    return out


@dataclass(frozen=True)
class DemoReport:
    """What :func:`build` did."""

    memories: int                 # memories the import added
    namespaces: int               # namespaces in the bank afterwards
    recalls: int                  # turns replayed as recalls
    conflicts: int                # contradictions detection recorded
    labeled: int                  # turns labeled (label set "demo"); 0 without an answer key
    line_to_id: dict[int, int] = field(repr=False)  # line of the memories file (1-based) -> memory id


def build(bank: MemoryBank, *, memories: PathLike = MEMORIES, queries: PathLike = QUERIES,
          truth: PathLike | None = None, replay: bool = True, detect_conflicts: bool = True,
          progress: Progress | None = None) -> DemoReport:
    """Build the demo into ``bank``: import ``memories``, replay ``queries``, label from ``truth``.

    ``truth`` defaults to the bundled answer key when ``memories`` and ``queries`` are the bundled
    files (it fits no others), and to no labels otherwise. The replay recalls each turn as of its
    own ``at`` (so access counts and the retrieval log look lived-in) and, for turns the answer
    key describes, gives a simulated agent's feedback: the answer used the returned memories the
    key marks relevant. ``replay=False`` and ``detect_conflicts=False`` leave those steps out (a
    bank with only memories and labels, as evaluation tests want). The bank need not be empty:
    the answer key's lines are mapped to the ids the import gave them.
    """
    for path in (memories, queries):
        if not Path(path).is_file():
            raise ValidationError(f"demo data {path} is missing")
    bundled = Path(memories).resolve() == MEMORIES and Path(queries).resolve() == QUERIES
    if truth is None and bundled:
        truth = TRUTH
    turns = read_jsonl(queries)
    key = _answer_key(truth, turns) if truth is not None else None

    total = sum(1 for line in open(memories, encoding="utf-8") if line.strip())
    report = bank.import_jsonl(memories, progress=_steps(progress, "import", total))
    line_to_id = dict(enumerate(report.ids, start=1))  # the answer key names memories by line

    recalls = _replay(bank, turns, key, line_to_id, progress) if replay else 0
    found = 0
    if detect_conflicts:
        names = [ns for ns, n in bank.namespaces() if n]
        step = _steps(progress, "conflicts", len(names))
        for ns in names:
            found += len(bank.detect_conflicts(ns))
            step(1)
    labeled = 0
    if key is not None:
        live = {m.id for m in bank.get_many(list(line_to_id.values())).values() if m.status == "active"}
        labeled = bank.import_labels(labels(key, turns, line_to_id, live))
    return DemoReport(memories=report.added, namespaces=len(bank.namespaces()), recalls=recalls,
                      conflicts=found, labeled=labeled, line_to_id=line_to_id)


def _answer_key(path: PathLike, turns: list[dict[str, Any]]) -> dict[str, Any]:
    """The answer key at ``path``, checked to describe the turns being replayed."""
    if not Path(path).is_file():
        raise ValidationError(f"demo answer key {path} is missing")
    key = truth(path)
    described = len(key.get("queries", []))
    if described != len(turns):
        raise ValidationError(f"the answer key {path} describes {described} queries, "
                              f"the queries file has {len(turns)}")
    return key


def _replay(bank: MemoryBank, turns: list[dict[str, Any]], key: dict[str, Any] | None,
            line_to_id: dict[int, int], progress: Progress | None) -> int:
    """Recall every turn as of its time; returns how many were replayed."""
    relevant = {int(q["line"]): {line_to_id[int(i)] for i in q.get("relevant_lines") or [] if int(i) in line_to_id}
                for q in (key or {}).get("queries", [])}
    step = _steps(progress, "replay", len(turns))
    for line, q in enumerate(turns, start=1):
        hits = bank.recall(q["query"], namespace=q["namespace"], now=q["at"], gate=bool(q.get("gate", False)))
        if hits and line in relevant:
            # A simulated agent's feedback: its answer used the returned memories the answer key
            # marks relevant, so the Usage page has a usage rate out of the box.
            returned = {h.memory.id for h in hits}
            bank.feedback(bank.last_retrieval_id, used_ids=sorted(returned & relevant[line]), at=q["at"])
        step(1)
    return len(turns)


def _steps(progress: Progress | None, stage: str, total: int) -> Callable[[int], None]:
    """A ``step(n)`` callback that reports ``stage``'s running count to ``progress``."""
    done = 0

    def step(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(stage, done, total)

    step(0)  # the stage has started
    return step
