"""Recall gate: decide cheaply whether an agent turn should recall long-term memory.

Retrieving on every turn is noisy: a general-knowledge question ("what is the
capital of France") or a brand-new topic gains nothing from the memory bank and
the retrieved snippets only distract the model. The gate runs before retrieval:

1. normalise the text (NFKC, casefold, uniform quotes/dashes/punctuation,
   traditional Chinese folded to simplified for matching);
2. try the *positive* rules of every language; the first hit means recall;
3. try the *no-memory* rules (general knowledge, how-to, small talk); a hit
   means no recall, without paying for a judge call;
4. otherwise ask the optional judge (typically a small LLM prompt);
5. otherwise fall back to the default (no recall).

The rules are plain data in :data:`RULES` so an operator can read (and a
dashboard can list, via :func:`explain_rules`) exactly what fires and why.
Rules are tried in table order: languages in the order of ``RULES``, rules in
the order listed, so an earlier rule wins when several match.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any, Final, NamedTuple

from ..errors import LLMError, ValidationError
from ..language.prompts import GATE_JUDGE_PROMPT
from ..language.rules.gate_patterns import ABOUT_USER, RULES, _NO_MEMORY
from ..language.text import detect_language, fold_chinese, normalise


__all__ = ["RULES", "Gate", "GateDecision", "explain_rules", "should_recall"]

# --------------------------------------------------------------------------- #
# Decision object
# --------------------------------------------------------------------------- #

_SOURCES: Final = frozenset({"rules", "llm", "default"})


@dataclass(frozen=True)
class GateDecision:
    """The gate's verdict for one turn.

    ``recall``: whether the turn should recall memory.
    ``reason``: human-readable explanation, e.g.
    ``'matched "last time" (reference to earlier conversation, en)'``.
    ``rule``: id of the rule that fired (``"en.earlier_talk.last_time"``), or
    ``None`` when no rule decided.
    ``source``: ``"rules"``, ``"llm"`` (the judge decided) or ``"default"``.
    """

    recall: bool
    reason: str
    rule: str | None
    source: str

    def __post_init__(self) -> None:
        # A judge may build GateDecisions itself; catching a bad one here keeps
        # garbage (recall="yes", source="gpt") out of logs and dashboards.
        if not isinstance(self.recall, bool):
            raise ValidationError(
                f"GateDecision.recall must be a bool, got {type(self.recall).__name__}"
            )
        if not isinstance(self.reason, str):
            raise ValidationError(
                f"GateDecision.reason must be a str, got {type(self.reason).__name__}"
            )
        if self.rule is not None and not isinstance(self.rule, str):
            raise ValidationError(
                f"GateDecision.rule must be a str or None, got {type(self.rule).__name__}"
            )
        if self.source not in _SOURCES:
            raise ValidationError(
                f"GateDecision.source must be one of {sorted(_SOURCES)}, got {self.source!r}"
            )

    def to_dict(self) -> dict:
        """Return a JSON-serialisable dict with keys recall, reason, rule, source."""
        return asdict(self)


# --------------------------------------------------------------------------- #
# Rule tables
# --------------------------------------------------------------------------- #

# Category -> phrase used in the decision reason.
_CATEGORY_DESCRIPTIONS: Final[dict[str, str]] = {
    "earlier_talk": "reference to earlier conversation",
    "preference": "personal preference",
    "decision_or_goal": "past decision, plan or goal",
    "personal_fact": "personal fact about the user",
    "recommendation": "request for a personalised recommendation",
    "no_memory": "general knowledge or small talk, no memory needed",
}


# --------------------------------------------------------------------------- #
# Normalisation
# --------------------------------------------------------------------------- #

# The normalisation and the traditional-to-simplified fold are memory_core.language.text's, shared with
# the tokenizer that conflicts, merges and the lexical index use.


def _normalise(query: object) -> str:
    """Validate *query* and return the text the rules (and reason quotes) see.

    NFKC + casefold + uniform punctuation + collapsed whitespace. Raises
    ValidationError for non-str or effectively empty input.
    """
    if not isinstance(query, str):
        raise ValidationError(
            f"query must be a str holding the user's turn text, got {type(query).__name__}"
        )
    text = normalise(query)
    if not text:
        raise ValidationError(
            "query is empty or whitespace-only; pass the user's turn text (a non-empty string)"
        )
    return text


# --------------------------------------------------------------------------- #
# Compilation (once, at import)
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class _CompiledRule:
    language: str
    rule_id: str
    category: str
    pattern: str
    example: str
    regex: re.Pattern[str]

    @property
    def recall(self) -> bool:
        return self.category != _NO_MEMORY


def _compile_rules(
    table: dict[str, list[tuple[str, str, str, str]]],
) -> tuple[tuple[_CompiledRule, ...], tuple[_CompiledRule, ...]]:
    """Validate and compile *table*; return (positive rules, no-memory rules).

    A malformed table is a programming error, so it fails loudly on first use
    rather than silently never firing.
    """
    positive: list[_CompiledRule] = []
    negative: list[_CompiledRule] = []
    seen: set[str] = set()
    for language, rows in table.items():
        for rule_id, category, pattern, example in rows:
            if category not in _CATEGORY_DESCRIPTIONS:
                raise ValueError(f"rule {rule_id}: unknown category {category!r}")
            if not rule_id.startswith(f"{language}.{category}."):
                raise ValueError(f"rule {rule_id}: id must start with '{language}.{category}.'")
            if rule_id in seen:
                raise ValueError(f"rule {rule_id}: duplicate id")
            seen.add(rule_id)
            regex = re.compile(pattern)
            # A rule that matches nothing would always fire with an empty quote.
            if regex.search("") is not None:
                raise ValueError(f"rule {rule_id}: pattern matches the empty string")
            rule = _CompiledRule(language, rule_id, category, pattern, example, regex)
            (negative if category == _NO_MEMORY else positive).append(rule)
    return tuple(positive), tuple(negative)


class _Rules(NamedTuple):
    positive: tuple[_CompiledRule, ...]
    no_memory: tuple[_CompiledRule, ...]
    about_user: dict[str, tuple[_CompiledRule, ...]]  # per language: a Swedish "i" (in) is not an English "I"


@functools.cache
def _rules() -> _Rules:
    """The rule tables compiled, once per process on first use: a command that never asks the gate
    (``memctl stats``) should not pay for compiling them."""
    positive, no_memory = _compile_rules(RULES)
    return _Rules(positive, no_memory, {lang: _compile_rules({lang: rows})[0] for lang, rows in ABOUT_USER.items()})

_QUOTE_LIMIT: Final = 60


def _first_hit(
    rules: tuple[_CompiledRule, ...], text: str, folded: str
) -> GateDecision | None:
    """Return the decision of the first rule in *rules* matching *folded*, if any."""
    for rule in rules:
        match = rule.regex.search(folded)
        if match is None:
            continue
        # Quote the user's own spelling (traditional characters included);
        # folding kept the offsets aligned.
        span = text[match.start():match.end()]
        # Anchored rules swallow trailing "!?" etc.; the quote reads better without.
        quoted = span.strip(" !.?,;:~") or span
        if len(quoted) > _QUOTE_LIMIT:
            quoted = quoted[: _QUOTE_LIMIT - 1] + "…"
        description = _CATEGORY_DESCRIPTIONS[rule.category]
        return GateDecision(
            recall=rule.recall,
            reason=f'matched "{quoted}" ({description}, {rule.language})',
            rule=rule.rule_id,
            source="rules",
        )
    return None


# --------------------------------------------------------------------------- #
# Public API
# --------------------------------------------------------------------------- #

_Judge = Callable[[str], "bool | GateDecision"]

_EXCEPTION_TEXT_LIMIT: Final = 200


class Gate:
    """Rules first; optional judge for the turns no rule decides.

    ``judge`` is called with the original query only when neither a positive
    nor a no-memory rule fires. It may return a bool or a GateDecision (whose
    source is forced to ``"llm"``). A judge that raises an Exception, or
    returns anything else, never breaks the turn: the gate falls back to
    ``default`` with ``source="default"`` and says why in ``reason``.
    """

    def __init__(self, judge: _Judge | None = None, default: bool = False) -> None:
        """Create a gate.

        judge: optional ``callable(query) -> bool | GateDecision`` for
        undecided turns (typically a small LLM prompt).
        default: the verdict when no rule fires and there is no working judge.
        """
        if judge is not None and not callable(judge):
            raise ValidationError(
                f"judge must be a callable taking the query str (or None), "
                f"got {type(judge).__name__}"
            )
        if not isinstance(default, bool):
            raise ValidationError(
                f"default must be a bool (True or False), got {type(default).__name__}"
            )
        self._judge = judge
        self._default = default

    def decide(self, query: str) -> GateDecision:
        """Decide whether *query* (one user turn) should recall long-term memory.

        Raises ValidationError if *query* is not a str or is empty/whitespace.
        """
        text = _normalise(query)
        folded = fold_chinese(text)
        rules = _rules()
        decision = _first_hit(rules.positive, text, folded)
        if decision is None:
            decision = _first_hit(rules.no_memory, text, folded)
        if decision is None:  # a question about the user, in the language it is asked in
            decision = _first_hit(rules.about_user.get(detect_language(text), ()), text, folded)
        if decision is not None:
            return decision
        if self._judge is None:
            return GateDecision(self._default, "no trigger rule matched", None, "default")
        return self._ask_judge(query)

    def _ask_judge(self, query: str) -> GateDecision:
        """Call the judge, turning any failure into the default decision."""
        assert self._judge is not None
        try:
            verdict = self._judge(query)
        except Exception as exc:  # noqa: BLE001 - a broken judge must not break the turn
            detail = str(exc)
            if len(detail) > _EXCEPTION_TEXT_LIMIT:
                detail = detail[: _EXCEPTION_TEXT_LIMIT - 1] + "…"
            return self._fallback(f"judge failed ({type(exc).__name__}: {detail})")
        if isinstance(verdict, GateDecision):
            return replace(verdict, source="llm")
        if isinstance(verdict, bool):
            reason = "judge decided to recall" if verdict else "judge decided not to recall"
            return GateDecision(verdict, reason, None, "llm")
        # "yes", 1, None... are ambiguous; guessing could silently flip recall.
        return self._fallback(
            f"judge returned {type(verdict).__name__}, expected bool or GateDecision"
        )

    def _fallback(self, why: str) -> GateDecision:
        return GateDecision(
            self._default,
            f"no trigger rule matched and {why}; used default ({self._default})",
            None,
            "default",
        )


_RULES_ONLY_GATE: Final = Gate()


def should_recall(query: str, judge: _Judge | None = None) -> GateDecision:
    """Decide with the built-in rules (and *judge*, if given) whether *query* should recall memory.

    Convenience wrapper around ``Gate(judge).decide(query)``.
    """
    gate = _RULES_ONLY_GATE if judge is None else Gate(judge=judge)
    return gate.decide(query)


def explain_rules() -> list[dict]:
    """List every rule for operators: language, rule_id, category, pattern, example, recall.

    ``recall`` is True for trigger rules and False for no-memory rules. The
    order is the order in which rules are tried.
    """
    return [
        {
            "language": rule.language,
            "rule_id": rule.rule_id,
            "category": rule.category,
            "pattern": rule.pattern,
            "example": rule.example,
            "recall": rule.recall,
        }
        for rule in (*_rules().positive, *_rules().no_memory, *(r for rs in _rules().about_user.values() for r in rs))
    ]


class LLMJudge:
    """The gate's LLM judge: yes/no with a reason, asked only for turns no rule decides.

    Answers are cached per normalized query (an agent often sees the same turn again), so the
    model is asked once per distinct turn. A reply that is not the expected JSON raises, and the
    gate then falls back to its default with the reason.
    """

    def __init__(self, client: Any, cache_size: int = 1024) -> None:
        self.client = client
        self.cache_size = cache_size
        self._cache: dict[str, GateDecision] = {}

    def __call__(self, query: str) -> GateDecision:
        key = _normalise(query)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        reply = self.client.chat_json(
            [{"role": "system", "content": GATE_JUDGE_PROMPT}, {"role": "user", "content": query}],
            schema_hint='{"recall": true, "reason": "..."}',
        )
        if not isinstance(reply, dict) or not isinstance(reply.get("recall"), bool):
            raise LLMError(f"the gate judge answered {str(reply)[:120]!r}, not {{\"recall\": true|false, ...}}")
        reason = str(reply.get("reason") or ("judge decided to recall" if reply["recall"] else "judge said no"))
        decision = GateDecision(reply["recall"], f"LLM judge: {reason[:300]}", "llm.judge", "llm")
        if len(self._cache) >= self.cache_size:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = decision
        return decision
