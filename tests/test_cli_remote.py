"""memctl against a running ``memctl serve``: ``--bank http://...`` with ``--token`` (or MEMCTL_TOKEN)
reaches the served bank through its REST API, scoped by the token, without loading the model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from memory_core.client import RemoteBank

ROOT = Path(__file__).parent.parent


def memctl(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = dict(os.environ, HF_HUB_OFFLINE="1", MEMCTL_WARM="0")
    environ.pop("MEMCTL_TOKEN", None)
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", "memory_core.cli", *args], capture_output=True, text=True,
                          env=environ, cwd=ROOT, timeout=300)


def test_add_and_recall_through_a_served_bank_with_a_token(served):
    added = memctl("--bank", served.url, "--token", served.tokens["alice"], "add",
                   "Keeps bees on the allotment", "-n", "alice")
    assert added.returncode == 0, added.stderr
    found = memctl("--bank", served.url, "--token", served.tokens["alice"], "recall", "does she keep bees?",
                   "-n", "alice", "--json", "--dry-run")
    assert found.returncode == 0, found.stderr
    assert "Keeps bees on the allotment" in [hit["memory"]["text"] for hit in json.loads(found.stdout)]


def test_the_token_may_come_from_the_environment(served):
    env = {"MEMCTL_TOKEN": served.tokens["bob"]}
    assert memctl("--bank", served.url, "add", "Rows on Sundays", "-n", "bob", env=env).returncode == 0
    found = memctl("--bank", served.url, "recall", "what does he do on sundays", "-n", "bob", "--json", env=env)
    assert found.returncode == 0, found.stderr
    assert "Rows on Sundays" in [hit["memory"]["text"] for hit in json.loads(found.stdout)]


def test_a_command_the_server_does_not_serve_says_where_to_run_it(served):
    run = memctl("--bank", served.url, "--token", served.tokens["root"], "stats")
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert "not served" in run.stderr and "--bank" in run.stderr


def test_a_missing_or_foreign_token_is_refused_in_one_line_and_changes_nothing(served):
    admin = RemoteBank(served.url, token=served.tokens["root"])
    before = admin.count(namespace="alice", status=None)
    no_token = memctl("--bank", served.url, "add", "Sneaked in", "-n", "alice")
    assert no_token.returncode == 1 and "Traceback" not in no_token.stderr
    assert "token" in no_token.stderr.lower()
    foreign = memctl("--bank", served.url, "--token", served.tokens["bob"], "add", "Sneaked in", "-n", "alice")
    assert foreign.returncode == 1 and "Traceback" not in foreign.stderr
    assert admin.count(namespace="alice", status=None) == before
    admin.close()


def test_a_token_with_a_bank_file_is_a_usage_error(tmp_path):
    run = memctl("--bank", str(tmp_path / "bank.duckdb"), "--token", "mct_x", "stats")
    assert run.returncode == 2 and "--bank http://" in run.stderr
    assert not (tmp_path / "bank.duckdb").exists()
    # MEMCTL_TOKEN left set for another bank does not stand in the way of a file
    ok = memctl("--bank", str(tmp_path / "bank.duckdb"), "stats", env={"MEMCTL_TOKEN": "mct_x"})
    assert ok.returncode == 0, ok.stderr
