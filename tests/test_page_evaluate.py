"""The Evaluate page (AppTest through app.py's navigation): run an ablation against the stand-in LLM
server with a progress bar, list past runs with their rates, drill case by case with texts shown as
text, and say clearly when no LLM is configured."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from llm_server import ablation_responder
from memory_core import MemoryBank, ScoringParams

APP = str(Path(__file__).resolve().parent.parent / "app.py")
KNOWLEDGE = {"capital of France": "Paris is the capital of France."}
TRICKY = "Allergic to **peanuts** <b>and</b> [cashews](http://x.example)"
CASES = "\n".join(json.dumps(c) for c in [
    {"question": "Which nut am I allergic to?", "expected": "peanuts"},
    {"question": "What is the capital of France?", "expected": "Paris"},
    {"question": "What do I do on weekends?", "namespace": "nobody", "expected": "sailing"},
])
ENV_VARS = ("MEMCTL_LLM_BASE_URL", "MEMCTL_LLM_MODEL", "MEMCTL_LLM_API_KEY", "MEMCTL_CONFIG", "OPENAI_BASE_URL",
            "OPENAI_API_KEY", "MEMCTL_JUDGE_BASE_URL", "MEMCTL_JUDGE_MODEL", "MEMCTL_JUDGE_API_KEY")


@pytest.fixture
def eval_bank(tmp_path, embedder, monkeypatch):
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = tmp_path / "evaluate.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add(TRICKY, namespace="alice", importance=0.9, detect_conflicts=False)
        bank.add("Visited France last spring and loved the food", namespace="alice", detect_conflicts=False)
        bank.add("Works as a nurse on night shifts", namespace="alice", detect_conflicts=False)
        bank.save_preset("eval", ScoringParams().replace(threshold=0.0, k=1))
        bank.set_active_preset("eval")
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    return path


def open_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90).run()
    at.switch_page("dashboard/evaluate.py").run()
    assert not at.exception, at.exception
    return at


def texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


def test_run_an_ablation_list_it_and_drill_into_cases(eval_bank, llm_server, monkeypatch, embedder):
    monkeypatch.setenv("MEMCTL_LLM_BASE_URL", llm_server.base_url)
    monkeypatch.setenv("MEMCTL_LLM_MODEL", "stand-in-model")
    monkeypatch.setenv("MEMCTL_LLM_API_KEY", "sk-page-secret")
    llm_server.respond_with(ablation_responder(KNOWLEDGE))
    at = open_page()
    assert any("No ablation runs yet" in i.value for i in at.info)
    at.text_area(key="evaluate_cases").input(CASES)
    at.selectbox(key="evaluate_namespace").select("alice")
    at.button(key="evaluate_run_button").click().run()
    assert not at.exception, at.exception
    assert len(at.get("progress")) == 1
    assert at.get("progress")[0].proto.value == 100
    done = at.success[0].value
    assert "Run 1: 3 judged cases, 0 error(s)" in done and "net benefit +0.00" in done
    runs = next(d.value for d in at.dataframe if "net benefit" in d.value.columns)
    row = runs.iloc[0]
    assert (row["run"], row["cases"], row["errors"]) == (1, 3, 0)
    assert row["usefulness"] == pytest.approx(1 / 3) and row["disturbance"] == pytest.approx(1 / 3)
    assert row["net benefit"] == 0.0 and " to " in row["net benefit 95% CI"]
    assert "sk-page-secret" not in " ".join(str(v) for v in runs.iloc[0].values)
    assert len(at.get("plotly_chart")) == 1
    cases = next(d.value for d in at.dataframe if "verdict" in d.value.columns)
    assert list(cases["verdict"]) == ["better with memory", "worse with memory", "tie"]

    # Case 1: the memory's text (markdown and HTML in it) is shown verbatim as text.
    shown = texts(at)
    assert "Which nut am I allergic to?" in shown and "peanuts" in shown
    assert f"[m:1] {TRICKY}" in shown
    assert any(TRICKY in t and t.startswith("From what you told me") for t in shown)
    assert not any("cashews" in m.value for m in at.markdown)
    at.selectbox(key="evaluate_pick_case").select(3).run()
    assert not at.exception
    assert "What do I do on weekends?" in texts(at) and "Memories in the prompt** (0)" in " ".join(
        m.value for m in at.markdown)
    with MemoryBank.open(eval_bank, embedder=embedder) as bank:
        assert bank.retrievals() == []  # evaluation recalls are what-ifs: nothing logged


def test_without_an_llm_the_page_says_what_to_configure(eval_bank):
    at = open_page()
    at.text_area(key="evaluate_cases").input(CASES)
    at.button(key="evaluate_run_button").click().run()
    assert not at.exception
    assert any("MEMCTL_LLM_BASE_URL" in e.value for e in at.error)
    at.text_area(key="evaluate_cases").input('{"question": ""}').run()
    at.button(key="evaluate_run_button").click().run()
    assert any("line 1" in e.value for e in at.error)  # bad cases are refused with their line number


def _as_shown(markdown: str) -> str:
    """The text a reader sees once markdown is rendered (CommonMark, as Streamlit renders it)."""
    return re.sub(r"<[^>]+>", "", MarkdownIt().render(markdown))


def test_the_settings_named_on_the_page_survive_markdown(eval_bank):
    """`MEMCTL_LLM_*` and `MEMCTL_JUDGE_*` read as typed: markdown would take the underscores and
    asterisks for emphasis and show "MEMCTL_LLM_); the judge is MEMCTL_JUDGE_" in italics."""
    at = open_page()
    texts = [c.value for c in at.caption] + [m.value for m in at.markdown] + [i.value for i in at.info]
    named = [t for t in texts if "MEMCTL_" in t]
    assert any("MEMCTL_LLM_*" in t for t in named) and any("MEMCTL_JUDGE_*" in t for t in named), named
    for text in named:
        shown = _as_shown(text)
        for setting in re.findall(r"MEMCTL_[A-Z_]*\*?", text):
            assert setting in shown, f"{setting!r} is lost in {shown!r}"


def test_the_page_says_up_front_that_no_llm_is_configured(eval_bank):
    """Before any case is pasted: the operator learns there is no LLM, and which settings make one."""
    at = open_page()
    [notice] = [w.value for w in at.warning if "No LLM is configured" in w.value]
    assert "MEMCTL_LLM_BASE_URL" in notice and "MEMCTL_LLM_MODEL" in notice
