"""Tenants stay apart: with namespace A selected, nothing of namespace B comes back, is counted or leaks.

Namespace "bob" mirrors "alice" on purpose (the same facts, near-duplicates, contradictions of
alice's memories), and every bob text carries the marker word ZANZIBAR. Each entry point (library
calls, CLI commands with --namespace, dashboard pages with alice selected) is asked about alice;
the marker must not appear, counts must be alice's, ids must be alice's. A merge or a conflict
across namespaces is refused and changes nothing.
"""

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner
from streamlit.testing.v1 import AppTest

from memory_core import MemoryBank, ValidationError
from memory_core.evaluation import metrics
from memory_core.cli import cli

APP = str(Path(__file__).resolve().parent.parent / "app.py")
MARK = "ZANZIBAR"
NOW = datetime.now(timezone.utc)
ALICE = [
    ("Drinks tea every morning", 0.8, "preference", 60),
    ("Switched from tea to coffee in the morning", 0.8, "preference", 3),
    ("Lives in Paris", 0.9, "profile", 200),
    ("Moved to Berlin in August", 0.9, "profile", 30),
    ("Prefers vegetarian food for dinner", 0.7, "preference", 20),
    ("Prefers vegetarian food for dinner.", 0.7, "preference", 10),
    ("Wants to run a marathon next year", 0.9, "goal", 15),
]


def _bob(text: str) -> str:
    return f"{text} {MARK}"


@pytest.fixture(scope="module")
def tenant_bank(store_kind, tmp_path_factory, embedder, request):
    """(path or URL, alice ids, bob ids), with recalls, conflicts and a merge logged in both namespaces."""
    if store_kind == "postgres":
        path = request.getfixturevalue("pg_databases")()  # dropped at the end of the run
    else:
        path = tmp_path_factory.mktemp("tenants") / "tenants.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        rows = []
        for ns, fn in (("alice", lambda t: t), ("bob", _bob)):
            rows += [{"text": fn(t), "namespace": ns, "importance": imp, "category": cat,
                      "created_at": NOW - timedelta(days=days)} for t, imp, cat, days in ALICE]
        ids = bank.add_many(rows)
        alice, bob = ids[: len(ALICE)], ids[len(ALICE):]
        for ns in ("alice", "bob"):
            bank.detect_conflicts(ns)
            for q in ("what does she drink in the morning", "where does she live", "dinner ideas"):
                bank.recall(q, namespace=ns)
        bank.merge([bob[4], bob[5]])  # a merge in bob's namespace only
        bank.add(_bob("Keeps bees on the roof"), namespace="bob", importance=0.9, category="profile")
    return path, alice, bob


def _open(tenant_bank, embedder) -> tuple[MemoryBank, set[int], set[int]]:
    path, alice, bob = tenant_bank
    bank = MemoryBank.open(path, embedder=embedder)
    bob_all = {m.id for m in bank.memories("bob", status=None, limit=None)}
    return bank, set(alice), bob_all


def _no_mark(value) -> None:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    assert MARK not in text, text[:2000]


def test_library_calls_keep_to_their_namespace(tenant_bank, embedder):
    bank, alice, bob = _open(tenant_bank, embedder)
    with bank:
        alice_all = {m.id for m in bank.memories("alice", status=None, limit=None)}
        assert alice_all and not alice_all & bob

        hits = bank.recall("tea coffee morning Paris Berlin dinner marathon bees", namespace="alice",
                           record=False, threshold=0.0, k=1000)
        assert {h.memory.id for h in hits} == {m.id for m in bank.memories("alice", limit=None)}
        _no_mark([h.to_dict() for h in hits])

        assert bank.count("alice", status=None) == len(alice_all)
        s = bank.stats("alice")
        assert s["total"] == len(alice_all) and sum(s["by_month"].values()) == len(alice_all)
        assert s["retrievals"] == 3 and s["open_conflicts"] == len(bank.conflicts("alice"))

        for c in bank.conflicts("alice", status=None):
            assert c.namespace == "alice" and {c.a.id, c.b.id} <= alice_all
        assert bank.merges("alice") == []  # bob's merge is bob's
        for cluster, preview in bank.plan_merges("alice"):
            assert set(cluster.ids) <= alice_all
            _no_mark(preview.text)
        assert set(bank.live_vectors("alice")[0].tolist()) <= alice_all

        buf = io.StringIO()
        n = bank.export_jsonl(buf, namespace="alice")
        assert n == len(alice_all)
        _no_mark(buf.getvalue())
        profile = bank.profile("alice")
        assert profile.memories and {m.id for m in profile.memories} <= alice_all
        _no_mark(profile.text())

        logged = bank.retrievals("alice", limit=None)
        assert len(logged) == 3 and all(r["namespace"] == "alice" for r in logged)
        assert {h["memory_id"] for r in logged for h in r["hits"]} <= alice_all
        _no_mark(logged)
        for frame in (metrics.usage_frame(bank, "alice"), metrics.hits_frame(bank, "alice"),
                      metrics.never_recalled(bank, "alice")):
            _no_mark(frame.to_json(default_handler=str))
        hits_df = metrics.hits_frame(bank, "alice")
        _no_mark(metrics.most_recalled(bank, hits_df).to_json(default_handler=str))
        assert metrics.summary(metrics.usage_frame(bank, "alice"))  # computed from alice's log alone
        _no_mark(metrics.feedback_metrics(bank, "alice"))
        assert bank.usage_summary("alice")["active"] == bank.count("alice")
        assert {m.id for m in bank.expiry_candidates(now=NOW + timedelta(days=2000), older_than_days=1,
                                                      below_importance=1.0, unused_days=0,
                                                      namespace="alice")} <= alice_all

        report = bank.maintain(dry_run=True, namespace="alice", steps=["cleanup", "merge"],
                               now=NOW + timedelta(days=400))
        for change in report.changes:
            assert change.namespace == "alice" and set(change.memory_ids) <= alice_all
        _no_mark(report.to_dict())


def test_merges_and_conflicts_across_namespaces_are_refused(tenant_bank, embedder):
    bank, alice, bob = _open(tenant_bank, embedder)
    a, b = sorted(alice)[0], min(bob)
    with bank:
        before = bank.stats()["change_seq"]
        with pytest.raises(ValidationError, match="one namespace"):
            bank.merge([a, b])
        with pytest.raises(ValidationError, match="one namespace"):
            bank.record_conflict(a, b, kind="switch", evidence="x", confidence=0.9, suggestion="newer_wins",
                                 path="rules")
        assert bank.stats()["change_seq"] == before
        assert bank.get(a).status == "active" and bank.get(b).status == "active"


def _memctl(path: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--bank", str(path), *args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("args", [
    ["recall", "tea coffee Paris Berlin dinner", "-n", "alice", "--json", "--dry-run", "--threshold", "0", "-k", "100"],
    ["export", "-", "-n", "alice"],
    ["stats", "-n", "alice", "--json"],
    ["conflicts", "list", "-n", "alice", "--status", "all", "--json"],
    ["merge", "plan", "-n", "alice"],
    ["maintain", "--dry-run", "--all", "-n", "alice", "--json", "--now", "2030-01-01"],
    ["profile", "alice", "--json"],
], ids=lambda a: " ".join(a[:2]))
def test_cli_commands_keep_to_their_namespace(tenant_bank, embedder, args):
    path, alice, _ = tenant_bank
    out = _memctl(path, *args)
    _no_mark(out)
    if args[0] == "stats":
        assert json.loads(out)["total"] == len(alice)
    if args[0] == "export":
        assert len([line for line in out.splitlines() if line.startswith("{")]) == len(alice)


def _everything(node) -> str:
    """Every element's content on the page (texts, tables as Arrow bytes, charts as JSON)."""
    out = [str(node.proto)] if getattr(node, "proto", None) is not None else []
    children = getattr(node, "children", None) or {}
    for child in children.values():
        out.append(_everything(child))
    return "\n".join(out)


@pytest.mark.parametrize("page", ["dashboard/browse.py", "dashboard/tune.py", "dashboard/conflicts.py", "dashboard/merges.py",
                                  "dashboard/maintenance.py", "dashboard/usage.py"])
def test_dashboard_pages_with_a_namespace_selected_show_only_it(tenant_bank, monkeypatch, page):
    path, alice, _ = tenant_bank
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    monkeypatch.delenv("MEMCTL_DASHBOARD_PASSWORD", raising=False)
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["namespace_choice"] = "alice"
    at.run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    dump = _everything(at._tree)
    assert "alice" in dump  # the page is about alice...
    assert MARK not in dump  # ...and shows nothing of bob
    # Buttons that compute more (a dry run, a merge plan) keep to the namespace too.
    for button in [b for b in at.button if b.label and any(w in b.label.lower() for w in ("dry run", "preview", "plan"))]:
        button.click().run()
        assert not at.exception, at.exception
        assert MARK not in _everything(at._tree)


def test_the_page_dump_would_see_another_namespace(tenant_bank, monkeypatch):
    """The control for the test above: with every namespace chosen, bob's marker is on the page."""
    path, _, _ = tenant_bank
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    monkeypatch.delenv("MEMCTL_DASHBOARD_PASSWORD", raising=False)
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["namespace_choice"] = "(all)"
    at.run()
    at.switch_page("dashboard/browse.py").run()
    assert not at.exception and MARK in _everything(at._tree)
