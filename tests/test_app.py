"""The dashboard's home page (Overview): the bank at a glance, an empty bank, a broken bank."""

from __future__ import annotations

import base64
import json
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from streamlit.testing.v1 import AppTest

from memory_core import MemoryBank

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_overview_shows_the_bank_at_a_glance(tmp_path, embedder, monkeypatch):
    path = tmp_path / "overview.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add("Prefers vegetarian food", namespace="alice", importance=0.8, category="preference")
        a = bank.add("Moved to Berlin in August", namespace="alice")
        bank.add("Works night shifts", namespace="bob")
        bank.forget(a)
        bank.recall("vegetarian food for dinner", namespace="alice")
        seq = bank.stats()["change_seq"]
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    m = metrics(at)
    assert m["active memories"] == "2" and m["namespaces"] == "2"
    assert m["recalls logged"] == "1" and m["open conflicts"] == "0"
    assert m["empty recalls"] == "0 (0%)"  # with its rate
    links = {p.proto.label: (p.proto.page, p.proto.query_string) for p in at.get("page_link")}
    assert links["See empty recalls"][0].endswith("recalls") and "results=empty" in links["See empty recalls"][1]
    assert links["Review conflicts"][0].endswith("conflicts")
    assert any("No hot memory means" in c.value for c in at.caption)  # the tier rule, explained
    assert len(at.get("plotly_chart")) == 5  # status, category, namespace, tier, growth
    text = " ".join(md.value for md in at.markdown)
    assert "No maintenance run yet." in text and "Active scoring preset" in text
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.stats()["change_seq"] == seq  # looking changes nothing


def test_overview_of_an_empty_bank_says_how_to_build_the_demo(tmp_path, embedder, monkeypatch):
    path = tmp_path / "empty.duckdb"
    MemoryBank.open(path, embedder=embedder).close()
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert metrics(at)["active memories"] == "0"
    assert "make demo" in at.info[0].value
    assert len(at.get("plotly_chart")) == 0


def test_app_explains_a_broken_bank(tmp_path, monkeypatch):
    broken = tmp_path / "broken.duckdb"
    broken.write_bytes(b"not a database" * 100)
    monkeypatch.setenv("MEMCTL_BANK", str(broken))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert "broken.duckdb" in at.error[0].value


def test_overview_counts_merge_candidates(tmp_path, embedder, monkeypatch):
    path = tmp_path / "dups.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add_many([{"text": "Plans to move to Berlin in March 2026", "namespace": "bob"},
                       {"text": "Planning to move to Berlin in March 2026", "namespace": "bob"},
                       {"text": "Has a dog called Pixel", "namespace": "bob"}])
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert any("**1** cluster(s) of near-duplicates could be merged: bob 1." in m.value for m in at.markdown)


def test_overview_leaves_large_namespaces_to_the_merges_page(tmp_path, embedder, monkeypatch):
    """Searching a large namespace for near-duplicates compares every pair (about a minute at
    100k memories): the home page does it only for small namespaces, loads no large one's
    index, and says where to search the large ones."""
    from memory_core.curation import merge

    path = tmp_path / "large.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add_many([{"text": "Plans to move to Berlin in March 2026", "namespace": "bob"},
                       {"text": "Planning to move to Berlin in March 2026", "namespace": "bob"}]
                      + [{"text": f"Ticket {i} was closed", "namespace": "support"} for i in range(6)]
                      + [{"text": "Ticket 0 was closed", "namespace": "support"}], dedupe=False)
    monkeypatch.setattr(merge, "LARGE_NAMESPACE", 5)  # support's 7 memories count as large here
    from memory_core.services.queries import Queries  # where a namespace's vectors are read (and its index loaded)

    loaded = []
    real = Queries.live_vectors
    monkeypatch.setattr(Queries, "live_vectors", lambda self, ns: loaded.append(ns) or real(self, ns))
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert loaded == ["bob"]
    assert any("**1** cluster(s) of near-duplicates could be merged: bob 1." in m.value for m in at.markdown)
    assert any("support (7 memories)" in c.value and "Merges page" in c.value for c in at.caption)


def _growth(at: AppTest) -> dict:
    """The growth chart's figure, as the page sends it to the browser."""
    [chart] = [c for c in at.get("plotly_chart") if "chart_growth" in c.proto.id]
    return json.loads(chart.proto.spec)


@pytest.mark.parametrize("months", [["2026-03"], ["2026-01", "2026-03"]])
def test_growth_by_month_reads_as_months_for_a_young_bank(tmp_path, embedder, monkeypatch, months):
    """One or two months of memories: the axis names the months (a date axis zoomed into hours
    between two bars, ticks like 23:59:59.9996), and a month without new memories is a zero bar."""
    path = tmp_path / "young.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add_many([{"text": f"Note {i} on the project", "namespace": "alice",
                        "created_at": datetime.fromisoformat(f"{month}-1{i}T12:00:00+00:00")}
                       for month in months for i in range(2)], dedupe=False)
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    fig = _growth(at)
    [bars] = fig["data"]
    assert fig["layout"]["xaxis"]["type"] == "category"
    expected = ["Mar 2026"] if len(months) == 1 else ["Jan 2026", "Feb 2026", "Mar 2026"]
    assert list(bars["x"]) == expected
    counts = bars["y"] if isinstance(bars["y"], list) else np.frombuffer(
        base64.b64decode(bars["y"]["bdata"]), dtype=np.dtype(bars["y"]["dtype"])).tolist()
    assert counts == ([2] if len(months) == 1 else [2, 0, 2])
