"""The server's write queue: adds that arrive while a group is written are embedded meanwhile.

memory_core.server.writes: one writer thread stores every row waiting as a group; a second thread
embeds the rows that arrive while it writes, so the model overlaps the store work. What a user
relies on: each add is stored once, with the vector its text gets from the bank's model, whichever
thread embedded it, and a row the model cannot take gets its own error.
"""

from __future__ import annotations

import io
import json
import threading
import time
from concurrent.futures import Future

import numpy as np

from memory_core import MemoryBank
from memory_core.server.writes import WriteQueue

TEXTS = ["Alice plays the cello on Sundays", "用户每天早上喝绿茶", "Jag cyklar till jobbet varje dag",
         "Bob is allergic to peanuts", "Carol moved to Lisbon in May"]


def stored_vectors(bank: MemoryBank) -> dict[str, np.ndarray]:
    out = io.StringIO()
    bank.export_jsonl(out, include_embeddings=True)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    return {r["text"]: np.asarray(r["embedding"], dtype=np.float32) for r in rows}


def hold_first_group(queue: WriteQueue) -> tuple[threading.Event, threading.Event]:
    """Keep the writer busy with the first group it takes until ``release`` is set; ``writing`` is
    set once it holds that group."""
    release, writing = threading.Event(), threading.Event()
    write_group = queue.write_group

    def slow_first_group(group: list) -> None:
        if not writing.is_set():
            writing.set()
            assert release.wait(30)
        write_group(group)

    queue.write_group = slow_first_group  # type: ignore[method-assign]
    return release, writing


def test_adds_arriving_while_a_group_is_written_are_embedded_meanwhile(tmp_path, embedder) -> None:
    with MemoryBank.open(tmp_path / "bank.duckdb", embedder=embedder) as bank:
        queue = WriteQueue(bank)
        release, writing = hold_first_group(queue)
        try:
            first = queue.submit({"text": "Dan works night shifts", "namespace": "n", "embedding": None})
            assert writing.wait(30)
            later = [queue.submit({"text": t, "namespace": "n", "embedding": None}) for t in TEXTS]
            for _ in range(300):  # the embedder takes them while the writer is held
                if queue.embedded_early == len(TEXTS):
                    break
                time.sleep(0.1)
            assert queue.embedded_early == len(TEXTS)
            release.set()
            ids = [f.result(30).id for f in [first, *later]]
        finally:
            release.set()
            queue.close()
        assert len(set(ids)) == len(TEXTS) + 1
        assert queue.rows_written == len(TEXTS) + 1
        assert queue.groups_written == 2  # the held group, then everything that arrived meanwhile
        vectors = stored_vectors(bank)
        model = bank.embedder.encode(TEXTS)
        for text, vec in zip(TEXTS, model):
            assert float(vectors[text] @ vec) > 0.999  # the vector the writer itself would store


def test_adds_one_after_another_are_each_stored_once_with_their_models_vector(tmp_path, embedder) -> None:
    """A client that waits for each add: the next add may be embedded while the writer still
    checks the last one for contradictions; each is its own group, stored once."""
    with MemoryBank.open(tmp_path / "bank.duckdb", embedder=embedder) as bank:
        queue = WriteQueue(bank)
        try:
            for text in TEXTS:
                queue.add({"text": text, "namespace": "n"})
        finally:
            queue.close()
        assert queue.groups_written == queue.rows_written == len(TEXTS)
        assert sorted(m.text for m in bank.memories(namespace="n")) == sorted(TEXTS)
        vectors = stored_vectors(bank)
        for text, vec in zip(TEXTS, bank.embedder.encode(TEXTS)):
            assert float(vectors[text] @ vec) > 0.999


def test_a_row_the_model_cannot_embed_gets_its_own_error_and_the_others_are_stored(tmp_path, embedder) -> None:
    with MemoryBank.open(tmp_path / "bank.duckdb", embedder=embedder) as bank:
        queue = WriteQueue(bank)
        release, writing = hold_first_group(queue)
        try:
            queue.submit({"text": "Erin keeps bees", "namespace": "n"})
            assert writing.wait(30)
            bad: Future = queue.submit({"text": "broken \ud800 text", "namespace": "n"})
            good = queue.submit({"text": "Frank speaks Finnish", "namespace": "n"})
            release.set()
            assert good.result(30).text == "Frank speaks Finnish"
            error = bad.exception(30)
        finally:
            release.set()
            queue.close()
        assert error is not None and ("surrogate" in str(error).lower() or "unicode" in str(error).lower())
        assert {m.text for m in bank.memories(namespace="n")} == {"Erin keeps bees", "Frank speaks Finnish"}
