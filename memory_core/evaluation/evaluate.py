"""Ablation: does memory make answers better? Same question with and without recalled memories, judged.

For each case (a question, optionally its namespace and an expected answer) the answering model
answers twice — once with the memories recall returns in the prompt, once without — and a judge
model compares the two answers. The judge sees them as "Answer A" and "Answer B" in an order drawn
from a seeded random generator (recorded per case), so a judge that prefers the first (or second)
answer cannot pass that bias off as an effect of memory; its choice is mapped back to *with*,
*without* or *tie*. The caller stores the run (``bank.record_ablation(result.run, result.cases)``:
this module only reads the bank, through what-if recall) and it is summarised as usefulness,
disturbance, tie rate and net benefit with 95-percent intervals
(:func:`memory_core.evaluation.metrics.ablation_rates`).

Recall here is a what-if (``record=False``): evaluating changes no access count and logs no
retrieval. A case whose recall returns nothing gets one answer used for both sides and counts as
a tie without asking the judge: memory cannot have changed that answer.

Configuration. The answering model is the LLM of :mod:`memory_core.language.llm` (``MEMCTL_LLM_*`` or
``[llm]`` in the config file). The judge may be another endpoint: ``MEMCTL_JUDGE_BASE_URL``,
``MEMCTL_JUDGE_MODEL``, ``MEMCTL_JUDGE_API_KEY``, ``MEMCTL_JUDGE_TIMEOUT`` or a ``[judge]`` table
with the keys of ``[llm]``; whatever is not set there is taken from the answering model's
configuration, except the API key when the judge's base URL is another one. API keys are never
printed (``LLMConfig`` masks them).
"""

from __future__ import annotations

import json
import os
import random
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from ..storage.clock import utcnow
from ..errors import ImportFormatError, LLMError, LLMNotConfiguredError, ValidationError
from ..language.llm import LLMClient, LLMConfig, default_config_path
from ..models import check_namespace, format_for_prompt, parse_time

__all__ = [
    "AblationCase", "AblationResult", "load_cases", "parse_cases", "judge_config", "ablation_clients",
    "run_ablation", "ablate", "ANSWER_SYSTEM", "JUDGE_SYSTEM",
]

ANSWER_SYSTEM = ("You are a helpful personal assistant. Answer the user's question directly and briefly.")
MEMORY_INSTRUCTION = ("What you remember about this user is below. Use a memory only when it helps answer the "
                      "question, and cite each memory you use by its marker, e.g. [m:12].")
JUDGE_SYSTEM = ("You are an impartial judge. Compare two answers to the same question from a user. Prefer the "
                "answer that is correct, specific to this user and helpful; when a reference answer is given, "
                "prefer the answer that agrees with it. Ignore the order in which the answers are shown and "
                "their length. If neither is better, say tie.")
JUDGE_SCHEMA = '{"winner": "A" | "B" | "tie", "reason": "one short sentence"}'

ProgressFn = Callable[[int, int], None]

JUDGE_ENV = {"base_url": "MEMCTL_JUDGE_BASE_URL", "model": "MEMCTL_JUDGE_MODEL",
             "api_key": "MEMCTL_JUDGE_API_KEY", "timeout": "MEMCTL_JUDGE_TIMEOUT"}


@dataclass(frozen=True)
class AblationCase:
    """One question to answer with and without memory; ``expected`` is an optional reference answer."""

    question: str
    namespace: str = "default"
    expected: str | None = None


@dataclass
class AblationResult:
    """A finished ablation run: the four rates with CIs, its cases, and ``run`` (what
    :meth:`MemoryBank.record_ablation` stores with them); ``run_id`` is set once it is stored."""

    run_id: int | None
    rates: dict[str, Any]
    cases: list[dict[str, Any]] = field(default_factory=list)
    errors: int = 0
    run: dict[str, Any] = field(default_factory=dict)


class Recaller(Protocol):
    """What an ablation reads from a bank: recall, called as a what-if (``record=False``)."""

    def recall(self, query: str, namespace: str = ..., params: Any = ..., now: Any = ...,
               record: bool = ...) -> list[Any]: ...


# -- cases -------------------------------------------------------------------------------------


def parse_cases(lines: Iterable[str], namespace: str | None = None) -> list[AblationCase]:
    """Cases from JSON lines ``{"question": ..., "namespace": ..., "expected": ...}``.

    ``namespace`` is used for lines without one (default ``"default"``). Blank lines are skipped.
    Raises :class:`ImportFormatError` listing every malformed line (1-based) and returns nothing
    then; an empty file is a ``ValidationError``.
    """
    fallback = check_namespace(namespace) if namespace is not None else "default"
    cases: list[AblationCase] = []
    problems: list[tuple[int, str]] = []
    for no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            problems.append((no, f"not JSON ({exc.msg})"))
            continue
        if not isinstance(row, dict):
            problems.append((no, "each line must be a JSON object with a 'question'"))
            continue
        unknown = sorted(set(row) - {"question", "namespace", "expected"})
        q, ns, exp = row.get("question"), row.get("namespace", fallback), row.get("expected")
        if not isinstance(q, str) or not q.strip():
            problems.append((no, "'question' must be a non-empty string"))
        elif unknown:
            problems.append((no, f"unknown key(s) {', '.join(unknown)}; allowed: question, namespace, expected"))
        elif not isinstance(ns, str) or not ns.strip():
            problems.append((no, "'namespace' must be a non-empty string"))
        elif exp is not None and not isinstance(exp, str):
            problems.append((no, "'expected' must be a string"))
        else:
            cases.append(AblationCase(q.strip(), ns, exp.strip() if isinstance(exp, str) and exp.strip() else None))
    if problems:
        raise ImportFormatError(
            f"{len(problems)} malformed case line(s), first at line {problems[0][0]}: {problems[0][1]}", problems)
    if not cases:
        raise ValidationError("the cases file has no cases; write one JSON object per line with a 'question'")
    return cases


def load_cases(source: str | os.PathLike | IO[str], namespace: str | None = None) -> list[AblationCase]:
    """:func:`parse_cases` of a JSONL file (a path or an open text file)."""
    if hasattr(source, "read"):
        return parse_cases(source.read().splitlines(), namespace)  # type: ignore[union-attr]
    path = Path(source)
    if not path.is_file():
        raise ValidationError(f"no cases file at {path}")
    return parse_cases(path.read_text(encoding="utf-8").splitlines(), namespace)


# -- configuration -----------------------------------------------------------------------------


def judge_config(answer: LLMConfig | None, *, model: str | None = None,
                 config_path: str | os.PathLike | None = None) -> LLMConfig | None:
    """The judge's endpoint: ``MEMCTL_JUDGE_*``, then ``[judge]`` in the config file, then the answering
    model's configuration for anything unset; ``model`` (e.g. ``--judge-model``) overrides the model.
    None when neither names a base URL and a model."""
    path = Path(config_path or os.environ.get("MEMCTL_CONFIG") or default_config_path()).expanduser()
    table: dict[str, Any] = {}
    if path.is_file():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
            raise ValidationError(f"cannot read the config file {path}: {exc}") from None
        table = data.get("judge") or {}
        if not isinstance(table, dict):
            raise ValidationError(f"'judge' in {path} must be a table: write it as [judge] with key = value lines")
        unknown = sorted(set(table) - {"base_url", "model", "api_key", "timeout", "max_retries", "temperature"})
        if unknown:
            raise ValidationError(f"unknown key(s) {', '.join(unknown)} under [judge] in {path}")
    values: dict[str, Any] = {}
    if answer is not None:
        values = {"base_url": answer.base_url, "model": answer.model, "api_key": answer.api_key,
                  "timeout": answer.timeout, "max_retries": answer.max_retries, "temperature": answer.temperature}
    judge_url = os.environ.get(JUDGE_ENV["base_url"], "").strip() or table.get("base_url")
    if judge_url and answer is not None and str(judge_url).rstrip("/") != answer.base_url:
        # The answering endpoint's key is never sent to another host.
        values.pop("api_key", None)
    values.update({k: v for k, v in table.items() if v is not None})
    for key, env in JUDGE_ENV.items():
        raw = os.environ.get(env, "").strip()
        if raw:
            if key == "timeout":
                try:
                    values[key] = float(raw)
                except ValueError:
                    raise ValidationError(f"environment variable {env} must be a number, got {raw!r}") from None
            else:
                values[key] = raw
    if model is not None:
        values["model"] = model
    if not values.get("base_url") or not values.get("model"):
        return None
    return LLMConfig(**values)


def ablation_clients(*, judge_model: str | None = None, config_path: str | os.PathLike | None = None
                     ) -> tuple[LLMClient, LLMClient]:
    """The answering client and the judge client from the configuration, or a clear
    ``LLMNotConfiguredError`` saying what to set."""
    answer = LLMConfig.from_env(config_path)
    if answer is None:
        raise LLMNotConfiguredError(
            "ablation needs an answering model: set MEMCTL_LLM_BASE_URL and MEMCTL_LLM_MODEL (or base_url and "
            "model under [llm] in the config file); the judge uses the same endpoint unless MEMCTL_JUDGE_BASE_URL "
            "/ MEMCTL_JUDGE_MODEL (or [judge]) name another")
    judge = judge_config(answer, model=judge_model, config_path=config_path)
    assert judge is not None  # the answering config fills every gap
    return LLMClient(answer), LLMClient(judge)


# -- running -------------------------------------------------------------------------------------


def answer_messages(question: str, memories: str) -> list[dict[str, str]]:
    """The answering prompt; ``memories`` is a :func:`format_for_prompt` block or "" for none."""
    system = ANSWER_SYSTEM if not memories else f"{ANSWER_SYSTEM}\n\n{MEMORY_INSTRUCTION}\n\n{memories}"
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]


def judge_messages(question: str, expected: str | None, first: str, second: str) -> list[dict[str, str]]:
    """The judge's prompt: the question, the reference answer when known, Answer A and Answer B."""
    parts = [f"Question:\n{question}"]
    if expected:
        parts.append(f"Reference answer:\n{expected}")
    parts += [f"Answer A:\n{first}", f"Answer B:\n{second}",
              "Which answer is better for this user: A, B, or tie?"]
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


def _winner(reply: Any) -> tuple[str, str]:
    if not isinstance(reply, dict):
        raise LLMError(f"the judge answered {type(reply).__name__}, not an object with 'winner'")
    raw = str(reply.get("winner", "")).strip().strip(".").lower()
    choice = {"a": "A", "answer a": "A", "b": "B", "answer b": "B", "tie": "tie", "neither": "tie",
              "both": "tie", "equal": "tie"}.get(raw)
    if choice is None:
        raise LLMError(f"the judge's winner {reply.get('winner')!r} is not A, B or tie")
    return choice, str(reply.get("reason") or "")[:500]


def run_ablation(bank: Recaller, cases: Iterable[AblationCase], answer_client: LLMClient | None,
                 judge_client: LLMClient | None = None, *, seed: int = 0, params: Any = None, now: Any = None,
                 progress: ProgressFn | None = None, source: str | None = None,
                 namespace: str | None = None) -> AblationResult:
    """Answer every case with and without its recalled memories and judge each pair; the caller
    stores the run: ``result.run_id = bank.record_ablation(result.run, result.cases)``.

    ``judge_client`` defaults to ``answer_client``. ``seed`` fixes the order the judge sees the two
    answers in (recorded per case as ``first_shown``). ``params``/``now`` go to the what-if recall.
    ``progress(done, total)`` is called after each case. A case whose answering or judging fails
    (unreachable endpoint, a judge reply that stays broken after one JSON repair) is stored with
    verdict ``error`` and its message, and left out of the rates; the run goes on.
    Raises ``LLMNotConfiguredError`` when there is no answering client.
    """
    if answer_client is None:
        raise LLMNotConfiguredError(
            "ablation needs an answering model: set MEMCTL_LLM_BASE_URL and MEMCTL_LLM_MODEL (see docs/llm.md)")
    judge_client = judge_client or answer_client
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValidationError(f"seed must be a whole number, got {seed!r}")
    cases = list(cases)
    if not cases:
        raise ValidationError("no cases to run")
    for c in cases:
        if not isinstance(c, AblationCase):
            raise ValidationError("cases must be AblationCase objects (see load_cases)")
        check_namespace(c.namespace)
    now_dt = parse_time(now, "now")
    rng = random.Random(seed)
    started = utcnow()
    done: list[dict[str, Any]] = []
    for i, case in enumerate(cases):
        with_first = rng.random() < 0.5  # drawn for every case, so one case's outcome never shifts another's order
        row: dict[str, Any] = {"namespace": case.namespace, "question": case.question, "expected": case.expected,
                               "memory_ids": [], "answer_with": None, "answer_without": None,
                               "first_shown": None, "judge_choice": None, "verdict": "error", "reason": None,
                               "error": None}
        try:
            hits = bank.recall(case.question, namespace=case.namespace, params=params, now=now_dt, record=False)
            row["memory_ids"] = [h.memory.id for h in hits]
            without = answer_client.chat(answer_messages(case.question, ""))
            row["answer_without"] = without
            if not hits:
                row.update(answer_with=without, verdict="tie",
                           reason="nothing was recalled, so both answers come from the same prompt")
            else:
                with_ = answer_client.chat(answer_messages(case.question, format_for_prompt(hits, now=now_dt, cite=True)))
                row["answer_with"] = with_
                first, second = (with_, without) if with_first else (without, with_)
                row["first_shown"] = "with" if with_first else "without"
                reply = judge_client.chat_json(judge_messages(case.question, case.expected, first, second),
                                               schema_hint=JUDGE_SCHEMA)
                choice, reason = _winner(reply)
                row["judge_choice"], row["reason"] = choice, reason
                row["verdict"] = ("tie" if choice == "tie"
                                  else "with" if (choice == "A") == with_first else "without")
        except LLMError as exc:
            row["verdict"], row["error"] = "error", str(exc)[:1000]
        done.append(row)
        if progress is not None:
            progress(i + 1, len(cases))
    settings = {"params": None if params is None else (params if isinstance(params, str) else params.to_dict()),
                "now": None if now_dt is None else now_dt.isoformat()}
    run = {"started_at": started, "finished_at": utcnow(), "namespace": namespace,
           "answer_model": f"{answer_client.config.model} @ {answer_client.endpoint}",
           "judge_model": f"{judge_client.config.model} @ {judge_client.endpoint}",
           "seed": seed, "source": source, "settings": settings}
    from .metrics import ablation_rates  # metrics imports pandas; import late to keep this module light

    verdicts = [c["verdict"] for c in done]
    rates = ablation_rates(verdicts.count("with"), verdicts.count("without"), verdicts.count("tie"))
    return AblationResult(run_id=None, rates=rates, cases=done, errors=verdicts.count("error"), run=run)


def ablate(bank: Recaller, cases: Iterable[AblationCase], *, judge_model: str | None = None,
           config_path: str | os.PathLike | None = None, seed: int = 0, params: Any = None, now: Any = None,
           progress: ProgressFn | None = None, source: str | None = None,
           namespace: str | None = None) -> AblationResult:
    """Run an ablation of ``cases`` with the configured answering and judge models; reads only.

    What ``memctl ablate`` and the Evaluate page run: :func:`ablation_clients`
    (``LLMNotConfiguredError`` when no answering model is set, before anything runs), then
    :func:`run_ablation`. ``progress(done, total)`` is called with 0 once the models are
    configured, then after each case. The caller stores the run, as after :func:`run_ablation`
    (a ``MemoryBank.ablate`` façade method would do both).
    """
    cases = list(cases)
    answer, judge = ablation_clients(judge_model=judge_model, config_path=config_path)
    if progress is not None and cases:
        progress(0, len(cases))
    return run_ablation(bank, cases, answer, judge, seed=seed, params=params, now=now, progress=progress,
                        source=source, namespace=namespace)
