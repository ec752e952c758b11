"""Ablation end to end: a real bank, real recall, and the stand-in LLM server answering and judging
deterministically from the prompt (tests/llm_server.ablation_responder), so every case's right
outcome is known from the data."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

from llm_server import BROKEN_JSON, ablation_responder
from memory_core import ImportFormatError, LLMNotConfiguredError, NotFoundError, ScoringParams, ValidationError
from memory_core.evaluation import evaluate as ev
from memory_core.evaluation import metrics as mx
from memory_core.cli import cli
from memory_core.language.llm import LLMClient, LLMConfig

KNOWLEDGE = {"capital of France": "Paris is the capital of France."}
PARAMS = ScoringParams().replace(threshold=0.0, k=1)  # the top memory always comes back: outcomes are known
CASES = [
    ev.AblationCase("Which nut am I allergic to?", "alice", "peanuts"),        # memory helps
    ev.AblationCase("What is the capital of France?", "alice", "Paris"),        # memory disturbs
    ev.AblationCase("What is my favourite colour?", "alice", "green"),          # neither knows: tie
    ev.AblationCase("What do I do on weekends?", "nobody", "sailing"),          # nothing recalled: tie
]
EXPECTED = ["with", "without", "tie", "tie"]
ENV_VARS = ("MEMCTL_LLM_BASE_URL", "MEMCTL_LLM_MODEL", "MEMCTL_LLM_API_KEY", "MEMCTL_CONFIG", "OPENAI_BASE_URL",
            "OPENAI_API_KEY", "MEMCTL_JUDGE_BASE_URL", "MEMCTL_JUDGE_MODEL", "MEMCTL_JUDGE_API_KEY")


def fill(bank) -> None:
    bank.add("Allergic to peanuts", namespace="alice", importance=0.9, detect_conflicts=False)
    bank.add("Visited France last spring and loved the food", namespace="alice", detect_conflicts=False)
    bank.add("Works as a nurse on night shifts", namespace="alice", detect_conflicts=False)
    bank.add("Plays chess on Tuesdays", namespace="bob", detect_conflicts=False)


def client(server, model: str = "stand-in-model") -> LLMClient:
    return LLMClient(LLMConfig(base_url=server.base_url, model=model, timeout=10, max_retries=0), backoff_base=0.01)


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def test_ablation_end_to_end_knows_each_outcome_and_stores_the_run(bank, llm_server):
    fill(bank)
    llm_server.respond_with(ablation_responder(KNOWLEDGE))
    seen: list[tuple[int, int]] = []
    seq = bank.stats()["change_seq"]
    result = ev.run_ablation(bank, CASES, client(llm_server), seed=7, params=PARAMS,
                             progress=lambda d, t: seen.append((d, t)), source="unit")
    result.run_id = bank.record_ablation(result.run, result.cases)  # the caller stores the run
    assert [c["verdict"] for c in result.cases] == EXPECTED
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    r = result.rates
    assert (r["n"], r["better"], r["worse"], r["ties"]) == (4, 1, 1, 2)
    assert r["usefulness"] == 0.25 and r["disturbance"] == 0.25 and r["net_benefit"] == 0.0
    lo, hi = r["net_benefit_ci"]
    assert lo < 0 < hi
    # The run is in the bank, case by case, with the memories each "with" answer saw.
    [run] = bank.ablation_runs()
    assert run["id"] == result.run_id and (run["better"], run["worse"], run["ties"], run["errors"]) == (1, 1, 2, 0)
    assert run["source"] == "unit" and "stand-in-model" in run["answer_model"]
    stored = bank.ablation_cases(result.run_id)
    assert [c["verdict"] for c in stored] == EXPECTED
    peanut = bank.get(stored[0]["memory_ids"][0])
    assert peanut.text == "Allergic to peanuts" and "peanuts" in stored[0]["answer_with"]
    assert stored[3]["memory_ids"] == [] and stored[3]["first_shown"] is None  # nothing recalled, no judge
    # Evaluation is a what-if: no access counted, no retrieval logged.
    assert bank.retrievals() == [] and bank.get(peanut.id).access_count == 0
    assert bank.stats()["change_seq"] == seq
    # The metrics module reads the same figures back from the bank.
    assert mx.ablation_metrics(bank)["net_benefit"] == 0.0
    assert mx.ablation_metrics(bank, namespace="alice")["n"] == 3
    with pytest.raises(NotFoundError):
        bank.ablation_cases(result.run_id + 1)
    # Erasing a memory for good erases the answers that were written with it in the prompt.
    bank.forget(peanut.id, hard=True)
    stored = bank.ablation_cases(result.run_id)
    assert stored[0]["answer_with"] is None and stored[0]["answer_without"] == "I don't know."
    assert stored[1]["answer_with"] is not None
    assert b"Allergic to peanuts" not in bank.path.read_bytes()


def test_position_is_randomised_and_mapped_back(bank, llm_server):
    fill(bank)
    llm_server.respond_with(ablation_responder(KNOWLEDGE))
    judged = CASES[:2] * 6  # twelve judged cases
    result = ev.run_ablation(bank, judged, client(llm_server), seed=3, params=PARAMS)
    firsts = [c["first_shown"] for c in result.cases]
    rng = random.Random(3)
    assert firsts == ["with" if rng.random() < 0.5 else "without" for _ in judged]  # seeded, recorded
    assert {"with", "without"} <= set(firsts)  # both orders occur
    # Whatever the order, the verdict is the same: the mapping from A/B back to with/without holds.
    assert [c["verdict"] for c in result.cases] == ["with", "without"] * 6
    assert {c["judge_choice"] for c in result.cases} == {"A", "B"}
    judge_prompts = [r.messages[-1]["content"] for r in llm_server.chat_requests
                     if "impartial judge" in r.messages[0]["content"]]
    assert len(judge_prompts) == 12
    for case, prompt in zip(result.cases, judge_prompts):
        a = prompt.split("Answer A:\n", 1)[1].split("\n\nAnswer B:", 1)[0]
        shown_first = "with" if a == case["answer_with"] else "without"
        assert shown_first == case["first_shown"]
    # The judge never sees the memories themselves, only the two answers.
    assert all("[m:" not in p.split("Answer A:")[0] for p in judge_prompts)
    again = ev.run_ablation(bank, judged, client(llm_server), seed=3, params=PARAMS)
    assert [c["first_shown"] for c in again.cases] == firsts


def test_broken_judge_json_is_repaired_once_or_the_case_is_an_error(bank, llm_server):
    fill(bank)
    base = ablation_responder(KNOWLEDGE)
    state = {"judge_calls": 0, "broken": 1}

    def flaky(messages):
        if "impartial judge" in messages[0]["content"]:
            state["judge_calls"] += 1
            if state["judge_calls"] <= state["broken"]:
                return BROKEN_JSON
        return base(messages)

    llm_server.respond_with(flaky)
    result = ev.run_ablation(bank, CASES[:1], client(llm_server), params=PARAMS)
    assert result.cases[0]["verdict"] == "with" and state["judge_calls"] == 2  # one repair request

    state.update(judge_calls=0, broken=10**6)
    result = ev.run_ablation(bank, CASES[:2], client(llm_server), params=PARAMS)
    result.run_id = bank.record_ablation(result.run, result.cases)  # the caller stores the run
    assert [c["verdict"] for c in result.cases] == ["error", "error"]
    assert "JSON" in result.cases[0]["error"] and result.errors == 2
    assert result.rates["n"] == 0 and result.rates["net_benefit"] is None
    run = bank.ablation_runs()[0]
    assert run["errors"] == 2 and run["n_cases"] == 2


def test_answer_and_judge_can_be_different_endpoints(bank, llm_server):
    from llm_server import StandInLLM

    fill(bank)
    llm_server.respond_with(ablation_responder(KNOWLEDGE))
    with StandInLLM(model="judge-model") as judge:
        judge.respond_with(ablation_responder())
        result = ev.run_ablation(bank, CASES[:2], client(llm_server), client(judge, "judge-model"), params=PARAMS)
        result.run_id = bank.record_ablation(result.run, result.cases)  # the caller stores the run
    assert [c["verdict"] for c in result.cases] == ["with", "without"]
    assert all("impartial judge" not in r.messages[0]["content"] for r in llm_server.chat_requests)
    assert len(judge.chat_requests) == 2
    assert "judge-model" in bank.ablation_runs()[0]["judge_model"]


def test_cases_file_is_validated_by_line(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text('{"question": "Which nut?", "expected": "peanuts"}\n\n{"question": "x", "namespace": "bob"}\n')
    cases = ev.load_cases(path, namespace="alice")
    assert cases == [ev.AblationCase("Which nut?", "alice", "peanuts"), ev.AblationCase("x", "bob", None)]
    path.write_text('{"question": "ok"}\nnot json\n{"question": ""}\n{"question": "q", "answer": "a"}\n')
    with pytest.raises(ImportFormatError) as err:
        ev.load_cases(path)
    assert [line for line, _ in err.value.problems] == [2, 3, 4]
    path.write_text("\n")
    with pytest.raises(ValidationError):
        ev.load_cases(path)


def test_configuration_judge_falls_back_to_the_answering_model_and_errors_clearly(clean_env, monkeypatch):
    with pytest.raises(LLMNotConfiguredError, match="MEMCTL_LLM_BASE_URL"):
        ev.ablation_clients()
    with pytest.raises(LLMNotConfiguredError):
        ev.run_ablation(None, CASES, None)
    monkeypatch.setenv("MEMCTL_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MEMCTL_LLM_MODEL", "answerer")
    monkeypatch.setenv("MEMCTL_LLM_API_KEY", "sk-answer-secret")
    answer, judge = ev.ablation_clients(judge_model="big-judge")
    assert answer.config.model == "answerer" and judge.config.model == "big-judge"
    assert judge.config.base_url == answer.config.base_url and judge.config.api_key == "sk-answer-secret"
    monkeypatch.setenv("MEMCTL_JUDGE_BASE_URL", "http://127.0.0.1:10/v1")
    _, judge = ev.ablation_clients()
    # Another endpoint does not get the answering endpoint's key.
    assert judge.config.base_url.endswith(":10/v1") and judge.config.api_key is None
    assert judge.config.model == "answerer"
    assert "sk-answer-secret" not in repr(answer.config)


def test_cli_ablate_prints_the_four_rates_with_intervals(tmp_path, embedder, llm_server, clean_env, monkeypatch):
    from memory_core import MemoryBank

    path = tmp_path / "cli.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        fill(bank)
        bank.save_preset("eval", PARAMS)
        bank.set_active_preset("eval")
    llm_server.respond_with(ablation_responder(KNOWLEDGE))
    monkeypatch.setenv("MEMCTL_LLM_BASE_URL", llm_server.base_url)
    monkeypatch.setenv("MEMCTL_LLM_MODEL", "stand-in-model")
    monkeypatch.setenv("MEMCTL_LLM_API_KEY", "sk-never-printed")
    cases = tmp_path / "cases.jsonl"
    cases.write_text("\n".join(json.dumps({"question": c.question, "expected": c.expected,
                                           **({"namespace": c.namespace} if c.namespace != "alice" else {})})
                               for c in CASES))
    res = CliRunner().invoke(cli, ["--bank", str(path), "ablate", str(cases), "--namespace", "alice",
                                   "--judge-model", "judge-x"])
    assert res.exit_code == 0, res.output
    out = res.output
    assert "sk-never-printed" not in out
    for label in ("usefulness", "disturbance", "ties", "net benefit"):
        assert label in out
    assert "25%" in out and "+0.00" in out and "95% CI" in out
    assert all(r.body["model"] == "judge-x" for r in llm_server.chat_requests if "impartial judge" in
               r.messages[0]["content"])
    res = CliRunner().invoke(cli, ["--bank", str(path), "metrics", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["ablation"]["n"] == 4 and data["ablation"]["better"] == 1

    for name in ("MEMCTL_LLM_BASE_URL", "MEMCTL_LLM_MODEL"):
        monkeypatch.delenv(name)
    res = CliRunner().invoke(cli, ["--bank", str(path), "ablate", str(cases)])
    assert res.exit_code == 1 and "MEMCTL_LLM_BASE_URL" in res.output


# -- confidence intervals ------------------------------------------------------------------------


def test_wilson_interval_matches_reference_values_and_covers():
    lo, hi = mx.wilson_interval(5, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.2366, 0.7634)  # textbook values (Newcombe 1998)
    lo, hi = mx.wilson_interval(0, 10)
    assert lo == 0.0 and round(hi, 4) == 0.2775
    assert mx.wilson_interval(0, 0) is None
    rng = random.Random(1)
    for p in (0.05, 0.3):
        covered = sum(lo <= p <= hi for lo, hi in
                      (mx.wilson_interval(sum(rng.random() < p for _ in range(40)), 40) for _ in range(1500)))
        assert covered / 1500 >= 0.92


def test_net_benefit_interval_by_hand_and_coverage():
    lo, hi = mx.net_benefit_interval(3, 1, 10)
    # Agresti–Min: b=3.5, w=1.5, m=12 → d=1/6, se=sqrt((5/12 − 1/36)/12)
    assert round(lo, 4) == -0.1862 and round(hi, 4) == 0.5195
    lo, hi = mx.net_benefit_interval(0, 0, 20)
    assert lo < 0 < hi  # all ties: centred on zero with real width, not a zero-width interval
    assert mx.net_benefit_interval(0, 0, 0) is None
    rng = random.Random(2)
    p_better, p_worse, n = 0.35, 0.15, 40
    covered = 0
    for _ in range(1500):
        draws = [rng.random() for _ in range(n)]
        b = sum(d < p_better for d in draws)
        w = sum(p_better <= d < p_better + p_worse for d in draws)
        lo, hi = mx.net_benefit_interval(b, w, n)
        covered += lo <= p_better - p_worse <= hi
    assert covered / 1500 >= 0.93
    rates = mx.ablation_rates(6, 2, 2)
    assert rates["usefulness"] == 0.6 and rates["disturbance"] == 0.2 and rates["tie_rate"] == 0.2
    assert rates["net_benefit"] == pytest.approx(0.4)
