"""Concurrency soak: the dashboard and three agent processes on one bank (short version).

`python -m bench.soak --seconds 120` is the full run (figures in RELIABILITY.md); here 15 s: three
agent processes add, recall and give feedback, the dashboard's pages run through AppTest in
their own process, and a real `streamlit run app.py` is polled over HTTP. No error reaches a
caller, no write is lost, every wait for the file stays under the bound, the dashboard answers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_three_agents_and_the_dashboard_share_a_bank(tmp_path):
    out = tmp_path / "soak.json"
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    run = subprocess.run([sys.executable, "-m", "bench.soak", "--seconds", "15", "--out", str(out)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert out.exists(), run.stderr[-3000:]
    r = json.loads(out.read_text())
    assert r["errors"] == 0, r["error_samples"]
    assert r["lost_writes"] == []
    assert all(r["ops"][k] > 0 for k in ("add", "recall", "feedback")), r["ops"]
    assert r["lock_waits"]["max_s"] is None or r["lock_waits"]["max_s"] < r["lock_waits"]["bound_s"]
    assert r["dashboard"]["page_runs"] >= 1 and r["dashboard"]["problem_count"] == 0, r["dashboard"]["problems"]
    assert r["http"]["polls"] > 0 and r["http"]["ok"] == r["http"]["polls"], r["http"]
    assert run.returncode == 0, run.stdout + run.stderr[-2000:]
