"""The LLM judge of a pair (asked with ``prompts.CONFLICT_SYSTEM_PROMPT``, its reply checked), and
:func:`judge`: the LLM when one is configured and answers, else the rules."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Final

from ...errors import LLMError, ValidationError
from ...language.llm import LLMClient, with_fallback
from ...language.prompts import CONFLICT_SYSTEM_PROMPT, CONFLICT_SCHEMA_HINT
from .records import AUTO_RULES, MemoryView, SUGGESTIONS, Verdict, _is_number, _utc
from .rule_judge import _check_pair, _order, _quote, judge_rules, suggest


_ID_KEY = re.compile(r"(?:^|_)ids?$|^(?:winner|loser|keep|drop|older|newer|memory|memories|supersede[sd]?)$",
                     re.IGNORECASE)
_ID_IN_TEXT = re.compile(r"\b(?:memory|memories|mem|id|ids)\s*[#:]?\s*#?(\d+)|#(\d+)\b", re.IGNORECASE)
_EVIDENCE_LIMIT: Final = 500


def _describe(view: MemoryView) -> str:
    when = _utc(view.created_at).date().isoformat()
    return f"Memory {view.id} (stored {when}, {view.kind}): {json.dumps(view.text, ensure_ascii=False)}"


def _messages(a: MemoryView, b: MemoryView) -> list[dict[str, str]]:
    older, newer = _order(a, b)
    user = (
        f"Older memory:\n{_describe(older)}\n\nNewer memory:\n{_describe(newer)}\n\n"
        f"Do they contradict? The only valid memory ids are {older.id} and {newer.id}."
    )
    return [{"role": "system", "content": CONFLICT_SYSTEM_PROMPT}, {"role": "user", "content": user}]


def _ids_mentioned(value: Any, key: str = "") -> set[int]:
    """Every memory id the reply refers to: values of id-like keys, and "memory 12" in texts."""
    found: set[int] = set()
    if isinstance(value, Mapping):
        for k, v in value.items():
            found |= _ids_mentioned(v, str(k))
    elif isinstance(value, list):
        for item in value:
            found |= _ids_mentioned(item, key)
    elif isinstance(value, bool):
        pass
    elif isinstance(value, int) and _ID_KEY.search(key):
        found.add(value)
    elif isinstance(value, float) and _ID_KEY.search(key) and value.is_integer():
        found.add(int(value))
    elif isinstance(value, str):
        if _ID_KEY.search(key) and value.strip().isdigit():
            found.add(int(value.strip()))
        for match in _ID_IN_TEXT.finditer(value):
            found.add(int(match.group(1) or match.group(2)))
    return found


def _verdict_from_reply(reply: Any, a: MemoryView, b: MemoryView, endpoint: str) -> Verdict:
    def bad(why: str) -> LLMError:
        return LLMError(f"LLM conflict judge at {endpoint} answered an unusable verdict: {why}")

    if not isinstance(reply, dict):
        raise bad(f"expected a JSON object, got a JSON {type(reply).__name__}")
    if "conflict" not in reply:
        raise bad('"conflict" is missing')
    conflict = reply["conflict"]
    if not isinstance(conflict, bool):
        raise bad(f'"conflict" must be true or false, got {conflict!r}')
    confidence = reply.get("confidence")
    if not _is_number(confidence) or not math.isfinite(confidence) or not 0 <= confidence <= 1:
        raise bad(f'"confidence" must be a number from 0 to 1, got {confidence!r}')
    suggestion = reply.get("suggestion")
    if suggestion not in SUGGESTIONS:
        raise bad(f'"suggestion" must be one of {", ".join(SUGGESTIONS)}, got {suggestion!r}')
    kind = reply.get("kind", "llm" if conflict else "none")
    if not isinstance(kind, str):
        raise bad(f'"kind" must be a string, got {kind!r}')
    evidence = reply.get("evidence", "")
    if not isinstance(evidence, str):
        raise bad(f'"evidence" must be a string, got {type(evidence).__name__}')
    strangers = _ids_mentioned(reply) - {a.id, b.id}
    if strangers:
        # A model that invents memories cannot be trusted with this pair either.
        raise bad(f"it refers to memory id(s) {sorted(strangers)}, but only {a.id} and {b.id} were given")

    evidence = _quote(evidence, _EVIDENCE_LIMIT) or "the model gave no reason"
    if not conflict:
        return Verdict(False, "none", evidence, float(confidence), "keep_both", "llm")
    kind = kind if kind in ("polarity", "value_change", "switch") else "llm"
    # The model may be more careful than the policy (keep_both, review), never less: a
    # newer_wins/explicit_wins it suggests is replaced by what the policy says for these memories.
    if suggestion not in AUTO_RULES:
        final = suggestion
    else:
        final = suggest(a, b, kind, float(confidence))
    return Verdict(True, kind, evidence, float(confidence), final, "llm")


def judge_llm(a: MemoryView, b: MemoryView, client: LLMClient) -> Verdict:
    """Ask the LLM behind ``client`` whether a and b contradict; returns a Verdict with path "llm".

    The model gets both memories (ids, dates, kinds, texts) and must answer strict JSON
    ``{"conflict", "kind", "evidence", "confidence", "suggestion"}`` (one repair request is made
    by :meth:`LLMClient.chat_json` if it does not parse). Raises LLMError when the endpoint fails
    or the reply is not of that shape: "conflict" missing or not a bool, "confidence" not a number
    in [0, 1], an unknown "suggestion", or a reference to memory ids other than a.id and b.id.
    An unknown "kind" on a conflict becomes "llm". A ``newer_wins``/``explicit_wins`` suggestion is
    re-derived with :func:`suggest`, so the model cannot make the policy less careful.
    """
    a, b = _check_pair(a, b)
    if not isinstance(client, LLMClient):
        raise ValidationError(f"client must be a memory_core.language.llm.LLMClient, got {type(client).__name__}")
    reply = client.chat_json(_messages(a, b), schema_hint=CONFLICT_SCHEMA_HINT)
    return _verdict_from_reply(reply, a, b, client.endpoint)


def judge(a: MemoryView, b: MemoryView, client: LLMClient | None = None, *, across_languages: bool = False) -> Verdict:
    """Judge a and b with the LLM when ``client`` is given and works, else with the rules.

    Any LLMError (endpoint down, timeout, unusable reply) falls back to :func:`judge_rules`
    (``across_languages``: see there); ``Verdict.path`` says which one decided ("llm" or "rules").
    """
    a, b = _check_pair(a, b)
    result = with_fallback(lambda c: judge_llm(a, b, c),
                           lambda: judge_rules(a, b, across_languages=across_languages), client)
    return result.value
