"""examples/langgraph_agent.py runs end to end, offline, as a user would start it: the agent's
memories land in the bank and its recalls are logged, and an off-topic question recalls nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from memory_core import MemoryBank

ROOT = Path(__file__).resolve().parent.parent


def test_the_langgraph_agent_example_runs_offline(tmp_path) -> None:
    bank_path = tmp_path / "agent.duckdb"
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "langgraph_agent.py"), "--bank", str(bank_path),
                           "--json"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    turns = [json.loads(line) for line in done.stdout.splitlines()]
    by_message = {(t["user"], t["message"]): t for t in turns}
    fish = by_message[("alice", "Do I eat fish? Thinking of dinner.")]
    assert [m["text"] for m in fish["memories"]] == ["I am vegetarian and never eat fish."]
    assert fish["reply"] == "None: you never eat fish. How about a lentil curry?"
    race = by_message[("alice", "Which race am I training for?")]
    assert [m["text"] for m in race["memories"]] == ["I am training for the Oslo marathon in June."]
    assert by_message[("bob", "Do I eat fish? Thinking of dinner.")]["memories"] == []
    assert by_message[("alice", "What is the capital of Australia?")]["memories"] == []

    with MemoryBank.open(bank_path) as bank:  # what the dashboard shows
        assert bank.namespaces() == [("users.alice.memories", 2)]
        assert {m.text for m in bank.memories("users.alice.memories")} == \
            {"I am vegetarian and never eat fish.", "I am training for the Oslo marathon in June."}
        logged = bank.retrievals("users.alice.memories", limit=None)
        assert len(logged) == 3 and sum(r["n_results"] for r in logged) == 2
