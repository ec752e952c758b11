"""A cold ``memctl`` loads only what its command needs: commands that embed nothing never import
the model's runtime, the server's stack, the dashboard's or the PostgreSQL driver for a bank file.

Each command runs in a real subprocess, which reports ``sys.modules`` as it exits; the test
checks which heavy packages are among them (not how long it took: timings are BENCHMARKS.md's).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core import MemoryBank

ROOT = Path(__file__).resolve().parent.parent

# What no command below may import. The model runs on onnxruntime (or torch); scipy came in
# through bm25s's package import only for its stop word lists.
HEAVY = ("torch", "sentence_transformers", "transformers", "onnxruntime", "psycopg", "psycopg_pool", "fastapi",
         "starlette", "uvicorn", "mcp", "streamlit", "plotly", "scipy", "httpx")

_REPORT = """
import atexit, json, os, sys
atexit.register(lambda: sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n"
                                         + "ONE_SHOT " + os.environ.get("MEMORY_CORE_ONE_SHOT", "0") + "\\n"))
sys.argv = ["memctl"] + sys.argv[1:]
from memory_core.cli import main
main()
"""


def loaded(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``memctl ARGS`` in a fresh interpreter; its result and the modules it imported (packages
    and submodules by their dotted names)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MEMCTL_WARM": "0", "HF_HUB_OFFLINE": "1"}
    run = subprocess.run([sys.executable, "-c", _REPORT, *args], capture_output=True, text=True, env=env,
                         timeout=120, cwd=ROOT)
    line = [x for x in run.stderr.splitlines() if x.startswith("MODULES ")]
    assert line, run.stderr
    return run, set(json.loads(line[-1][len("MODULES "):]))


@pytest.fixture(scope="module")
def bank_file(tmp_path_factory, embedder) -> tuple[Path, int]:
    path = tmp_path_factory.mktemp("cold") / "bank.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        mid = bank.add("Prefers tea to coffee", namespace="alice")
    return path, mid


@pytest.mark.parametrize("command", [["stats"], ["stats", "--json"], ["show", "ID"], ["--help"], ["recall", "--help"],
                                     ["preset", "list"]])
def test_a_command_that_embeds_nothing_loads_no_heavy_package(bank_file, command):
    path, mid = bank_file
    run, modules = loaded("--bank", str(path), *[str(mid) if a == "ID" else a for a in command])
    assert run.returncode == 0, run.stderr
    assert not modules & set(HEAVY), f"memctl {' '.join(command)} imported {sorted(modules & set(HEAVY))}"


def test_a_cold_recall_loads_the_models_runtime_only(bank_file):
    """The probe is honest: a command that embeds (recall, in process) does load the model's runtime,
    ONNX Runtime, and nothing of torch's (the built model's key reads torch's version, not torch)."""
    path, _ = bank_file
    run, modules = loaded("--bank", str(path), "recall", "tea", "-n", "alice", "--dry-run")
    assert run.returncode == 0, run.stderr
    assert "Prefers tea" in run.stdout
    assert "onnxruntime" in modules
    assert not modules & {"torch", "transformers", "sentence_transformers", "scipy", "psycopg", "fastapi", "httpx"}


# What finding contradictions, planning merges and distilling conversations bring: their rule tables,
# the LLM client. A recall judges none of it.
CURATION = ("memory_core.curation.conflicts", "memory_core.curation.extract", "memory_core.curation.merge",
            "memory_core.language.llm", "memory_core.language.rules.conflict_patterns",
            "memory_core.language.rules.extract_patterns")


def test_a_cold_recall_loads_no_curation_rules(bank_file):
    """A cold recall answers without importing the conflict, extraction or merge engines (their rule
    tables and the LLM client); a command that curates does import them, so the probe can fail."""
    path, _ = bank_file
    run, modules = loaded("--bank", str(path), "recall", "tea", "-n", "alice", "--dry-run")
    assert run.returncode == 0, run.stderr
    assert "Prefers tea" in run.stdout
    assert not modules & set(CURATION), f"a cold recall imported {sorted(modules & set(CURATION))}"
    run, modules = loaded("--bank", str(path), "conflicts", "detect", "-n", "alice")
    assert run.returncode == 0, run.stderr
    assert "memory_core.curation.conflicts" in modules


def _one_shot(run: subprocess.CompletedProcess[str]) -> bool:
    return [x for x in run.stderr.splitlines() if x.startswith("ONE_SHOT ")][-1] == "ONE_SHOT 1"


def test_a_cold_recall_runs_lean_model_sessions_and_bulk_work_does_not(bank_file, tmp_path):
    """A call that embeds a text and exits keeps no pre-packed weights (a third of the session's
    memory); an import embeds in bulk and keeps them, for speed."""
    path, _ = bank_file
    run, _ = loaded("--bank", str(path), "recall", "tea", "-n", "alice", "--dry-run")
    assert run.returncode == 0 and _one_shot(run)
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"text": "Walks to work", "namespace": "bob"}) + "\n")
    run, _ = loaded("--bank", str(path), "import", str(rows))
    assert run.returncode == 0, run.stderr
    assert not _one_shot(run)


def test_lean_sessions_give_the_same_vectors(monkeypatch):
    """What a cold call stores or asks with is what any other face computes, bit for bit."""
    import numpy as np

    from memory_core.cli import warm
    from memory_core.embedding import e5, onnx

    assert warm.ONE_SHOT_ENV == onnx.ONE_SHOT_ENV
    texts = ["Mildly allergic to cashews", "老家在成都", "Jag äter inte kött"]
    encoder = e5.build_encoder()
    packed = encoder.encode(texts, e5.QUERY_PREFIX)
    monkeypatch.setenv(onnx.ONE_SHOT_ENV, "1")
    lean = e5.E5Encoder(encoder.path, e5.E5File.read(e5.weights_path()), encoder.tokenizer)
    assert np.array_equal(lean.encode(texts, e5.QUERY_PREFIX), packed)
