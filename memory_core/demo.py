"""The demo set: where its data files live, and readers for them.

The demo is data, shipped inside the package (``memory_core/demo_data/``, described in its
README.md) so an installed ``memctl demo`` finds it:

* ``memories.jsonl``: 753 memories an agent kept about four users, in the format
  :meth:`MemoryBank.import_jsonl` reads;
* ``queries.jsonl``: 440 user turns sent to the agent over the same months, sorted by ``at``;
* ``truth.json``: the answer key, naming memories and turns by their 1-based line numbers.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

DATA: Path = Path(__file__).resolve().parent / "demo_data"
MEMORIES: Path = DATA / "memories.jsonl"
QUERIES: Path = DATA / "queries.jsonl"
TRUTH: Path = DATA / "truth.json"


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, one per non-blank line."""
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def memories(path: str | os.PathLike[str] = MEMORIES) -> list[dict[str, Any]]:
    """The demo memories as rows (line N is ``memories()[N - 1]``)."""
    return read_jsonl(path)


def queries(path: str | os.PathLike[str] = QUERIES) -> list[dict[str, Any]]:
    """The demo recall history: ``{"namespace", "query", "at"}`` per turn, in the order asked."""
    return read_jsonl(path)


def truth(path: str | os.PathLike[str] = TRUTH) -> dict[str, Any]:
    """The answer key (see demo_data/README.md for its sections)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))
