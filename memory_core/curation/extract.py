"""The write side: distil a conversation into a few memories worth keeping.

Design principle 6: the write side decides quality. A bank that stores every
utterance recalls noise, so extraction keeps only decisions, preferences, goals,
recurring difficulties and profile facts, as short standalone statements
("Prefers tea in the mornings"), tagged with a category and an importance; it
drops small talk, questions, things that are true only today, assistant turns
and personal identifiers.

Two extractors share one result type, :class:`Extraction`:

* :func:`extract_llm` asks the configured LLM for strict JSON and validates
  every item; a reply that breaks the contract raises ``LLMError``.
* :func:`extract_rules` needs no LLM. It is a deliberately small, precise
  pattern matcher (:data:`RULES`, one table per language: English, Swedish,
  Chinese). Honest limits:

  - it only reads **user** turns and only **first-person** statements at the
    start of a sentence or clause ("I prefer…", "Honestly, I prefer…",
    "When I travel, I prefer…", Swedish "På morgonen föredrar jag te"), so
    "My brother says I like cats" or "Hon sa att jag gillar katter" are not caught;
  - it never infers anything: every memory is ``kind="explicit"``; a user who
    says "ugh, coffee again, I'd rather have tea" yields nothing;
  - it cannot resolve references: statements whose object is "it", "that",
    "your idea", "这个" are skipped ("not standalone"), and it does not know
    what "the second option" was;
  - the rewrite is mechanical: the subject is dropped, the verb put in the
    third person (English) and "my/min/我的" become "their/sin/自己的"; long
    or convoluted sentences come out long or awkward;
  - "today only" is detected by marker words ("today", "right now", "idag",
    "just nu", "今天", "现在正在"); a temporary state without one ("I'm so
    tired") is simply not matched by any rule, and "now prefers X" is kept as a
    change of preference. A decision taken today ("Today we decided to use
    Postgres") is kept; a decision about today ("I decided to have pizza
    tonight") is not;
  - questions are dropped wholesale, even "I love jazz, do you?".

The rules are data (:data:`RULES`, listed by :func:`explain_rules`): each row has an
example and the memory it must give, and the tests check every row.

:func:`extract` picks the LLM when one is configured and works, else the rules
(through :func:`memory_core.language.llm.with_fallback`); ``Extraction.path`` says which,
``Extraction.detail`` why.

Personal identifiers are found by :mod:`memory_core.language.redact`. ``pii="redact"``
(default) masks them before extraction, and before anything is sent to an LLM;
``pii="refuse"`` drops every statement that contains one; ``pii="allow"`` keeps
them (for trusted, private banks only).
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Final, NamedTuple

import numpy as np

from ..errors import LLMError, ValidationError
from ..language.llm import LLMClient, with_fallback
from ..models import CATEGORIES, KINDS, PII_MODES, check_choice, check_importance, parse_time
from ..language.prompts import EXTRACT_SCHEMA_HINT, EXTRACT_SYSTEM_PROMPT
from ..language.redact import PII_KINDS, find_pii, placeholder_pattern, redact
from ..language.rules.extract_patterns import (RULES, Rule, _APOSTROPHES, _CLAUSE_SPLIT, _CONDITION, _CONVERSATIONAL, _DEICTIC,
                                     _ELIDED_SUBJECT, _EMPTY_REST, _EN_CONDITION_PREFIX, _EN_KEEP_ADV,
                                     _EN_LEADING_ADVERBS, _FLAGS, _LABEL_WORDS, _LEADS, _PRONOUNS, _QUESTION_START,
                                     _SENTENCE_SPLIT, _SMALL_TALK, _STARTS, _STARTS_WITH_I, _STRONG, _SV_INVERSION,
                                     _SV_KEEP_ADV, _SV_LEAD_ONLY, _TODAY, _TODAY_EXEMPT, _TRAILING_FILLER,
                                     _TRAILING_NOISE, _ZH_DROP_ADV, _ZH_QUESTION_END, _ZH_TIME_WORDS)
from ..embedding.vectors import dot
from ..language.words import SV_DEFINITE


__all__ = [
    "RULES", "Turn", "Candidate", "Extraction", "PII_MODES", "parse_conversation",
    "extract_rules", "extract_llm", "extract", "explain_rules", "IngestReport", "IngestPlan", "plan_ingest",
]

ROLES: Final = ("user", "assistant", "system")
MAX_MEMORY_CHARS: Final = 300

# Importance by category: names, goals and preferences are what recall should
# favour (principle 2); "other" is rarely worth a slot in the prompt. Emphasis
# ("always", "never", "really", "love", "hate", "alltid", "总是"...) adds STRONG_BOOST.
BASE_IMPORTANCE: Final[dict[str, float]] = {
    "profile": 0.75, "goal": 0.75, "preference": 0.6, "decision": 0.6,
    "difficulty": 0.5, "fact": 0.5, "other": 0.3,
}
STRONG_BOOST: Final = 0.1


# --------------------------------------------------------------------------- #
# Records
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Turn:
    """One message of a conversation. ``role`` is ``"user"``, ``"assistant"`` or ``"system"``;
    ``at`` (optional) is when it was said, normalised to aware UTC."""

    role: str
    content: str
    at: datetime | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValidationError(f"Turn.role must be one of {', '.join(ROLES)}; got {self.role!r}")
        if not isinstance(self.content, str):
            raise ValidationError(f"Turn.content must be a string, got {type(self.content).__name__}")
        # Frozen: the normalised time goes through object.__setattr__.
        object.__setattr__(self, "at", parse_time(self.at, "Turn.at"))


@dataclass(frozen=True)
class Candidate:
    """A memory proposed by an extractor, ready for ``MemoryBank.add``.

    ``source_turn`` is the index of the turn it came from, ``evidence`` the words
    that justified it (redacted like everything else), ``created_at`` that turn's time.
    """

    text: str
    category: str
    kind: str
    importance: float
    created_at: datetime | None
    source_turn: int
    evidence: str

    def __post_init__(self) -> None:
        # The bank would refuse these anyway; failing here names the extractor at fault.
        check_choice(self.category, CATEGORIES, "category")
        check_choice(self.kind, KINDS, "kind")
        check_importance(self.importance)
        if not isinstance(self.text, str) or not self.text.strip():
            raise ValidationError("Candidate.text must be a non-empty string")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (``created_at`` as ISO 8601 or None); the keys ``bank.add_many`` takes plus provenance."""
        out = asdict(self)
        out["created_at"] = self.created_at.isoformat() if self.created_at else None
        return out


@dataclass
class Extraction:
    """What an extractor kept and why it dropped the rest.

    ``memories``: the candidates, in conversation order. ``skipped``: ``(turn index,
    reason)`` pairs, each at most once ("small talk", "question", "only true today",
    "assistant turn", "personal identifier refused", "no durable statement",
    "not standalone", "duplicate", ...). ``redacted``: ``(turn index, kinds)`` for
    turns whose identifiers were masked before extraction or before being sent to
    an LLM (kinds comma-separated, e.g. ``"email, phone"``). ``path``: ``"llm"`` or
    ``"rules"``; ``detail``: which model, or why the rules were used.
    """

    memories: list[Candidate] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)
    redacted: list[tuple[int, str]] = field(default_factory=list)
    path: str = "rules"
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (for ``memctl ingest --json`` and the dashboard)."""
        return {
            "memories": [m.to_dict() for m in self.memories],
            "skipped": [list(s) for s in self.skipped],
            "redacted": [list(r) for r in self.redacted],
            "path": self.path,
            "detail": self.detail,
        }

    def _skip(self, turn: int, reason: str) -> None:
        if (turn, reason) not in self.skipped:
            self.skipped.append((turn, reason))


# --------------------------------------------------------------------------- #
# Parsing conversations
# --------------------------------------------------------------------------- #


def parse_conversation(data: Any) -> list[Turn]:
    """Turn parsed JSON into a list of :class:`Turn`.

    Accepts a list of ``{"role", "content", "at"?}`` objects (``"timestamp"`` is
    accepted for ``"at"``; other keys are ignored), the same list under
    ``{"messages": [...]}`` or ``{"turns": [...]}``, or a list of ``Turn``.
    Roles are case-insensitive. Raises ``ValidationError`` naming the first bad item,
    e.g. ``messages[3]: role must be one of user, assistant, system; got 'robot'``.
    """
    if isinstance(data, Mapping):
        keys = [k for k in ("messages", "turns") if k in data]
        if not keys:
            raise ValidationError(
                'a conversation object needs a "messages" or "turns" list; '
                f"got keys {sorted(map(str, data))[:8]}"
            )
        where = keys[0]
        items = data[where]
    else:
        where, items = "conversation", data
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise ValidationError(
            f'{where} must be a list of {{"role": ..., "content": ...}} objects, got {type(items).__name__}'
            + (" (parse the JSON first)" if isinstance(items, (str, bytes)) else "")
        )
    turns: list[Turn] = []
    for index, item in enumerate(items):
        label = f"{where}[{index}]"
        if isinstance(item, Turn):
            turns.append(item)
            continue
        if not isinstance(item, Mapping):
            raise ValidationError(f'{label} must be an object with "role" and "content", got {type(item).__name__}')
        role = item.get("role")
        if not isinstance(role, str) or role.strip().lower() not in ROLES:
            raise ValidationError(f"{label}: role must be one of {', '.join(ROLES)}; got {role!r}")
        content = item.get("content")
        if not isinstance(content, str):
            raise ValidationError(
                f'{label}: "content" must be a string, got '
                + ("nothing" if content is None else type(content).__name__)
            )
        at = item.get("at", item.get("timestamp"))
        try:
            when = parse_time(at, f"{label}.at")
        except ValidationError as exc:
            raise ValidationError(str(exc)) from None
        turns.append(Turn(role.strip().lower(), content, when))
    return turns


def _as_turns(turns: Any) -> list[Turn]:
    if isinstance(turns, Sequence) and not isinstance(turns, (str, bytes)) and all(isinstance(t, Turn) for t in turns):
        return list(turns)
    return parse_conversation(turns)


def _check_pii_mode(pii: Any) -> str:
    if pii not in PII_MODES:
        raise ValidationError(f"pii must be one of {', '.join(PII_MODES)}; got {pii!r}")
    return pii


@dataclass(frozen=True)
class _CompiledRule:
    language: str
    rule: Rule
    regex: re.Pattern[str]


def _compile_rules(table: dict[str, list[Rule]]) -> tuple[_CompiledRule, ...]:
    """Validate and compile :data:`RULES`; a malformed table fails on first use, loudly, not silently."""
    compiled: list[_CompiledRule] = []
    seen: set[str] = set()
    for language, rules in table.items():
        for rule in rules:
            if rule.category not in CATEGORIES:
                raise ValueError(f"rule {rule.rule_id}: unknown category {rule.category!r}")
            if not rule.rule_id.startswith(f"{language}.{rule.category}."):
                raise ValueError(f"rule {rule.rule_id}: id must start with '{language}.{rule.category}.'")
            if rule.rule_id in seen:
                raise ValueError(f"rule {rule.rule_id}: duplicate id")
            seen.add(rule.rule_id)
            regex = re.compile(_STARTS[language] + _LEADS[language] + "(?P<_body>" + rule.pattern + ")",
                               _FLAGS[language])
            if "rest" not in regex.groupindex:
                raise ValueError(f"rule {rule.rule_id}: pattern needs a (?P<rest>...) group")
            compiled.append(_CompiledRule(language, rule, regex))
    return tuple(compiled)


@functools.cache
def _compiled() -> tuple[_CompiledRule, ...]:
    """:data:`RULES` compiled, once per process on first use: the table is large, and a command
    that never extracts (``memctl stats``, ``memctl recall``) should not pay for compiling it."""
    return _compile_rules(RULES)


def explain_rules() -> list[dict[str, str]]:
    """The rule table as plain rows (id, language, category, pattern, template, example, expected),
    so a dashboard or ``memctl`` can show exactly what the rule-based extractor keeps."""
    return [{"id": c.rule.rule_id, "language": c.language, "category": c.rule.category,
             "pattern": c.rule.pattern, "template": c.rule.template, "example": c.rule.example,
             "expected": c.rule.expected} for c in _compiled()]


def _is_small_talk(sentence: str) -> bool:
    core = _TRAILING_NOISE.sub("", sentence).strip()
    core = re.sub(r"[\U0001F300-\U0001FAFF\u2600-\u27BF]+", "", core).strip(" ,，")
    return not core or _SMALL_TALK.fullmatch(core) is not None


def _is_question(clause: str) -> bool:
    stripped = clause.rstrip()
    if stripped.endswith(("?", "？")):
        return True
    return _ZH_QUESTION_END.search(stripped) is not None and re.search(r"[\u4e00-\u9fff]", stripped) is not None


def _today_marker(text: str) -> re.Match[str] | None:
    if _TODAY_EXEMPT.search(text):
        # Remove the exempt phrase and look again: "from today on I'm vegan, but tonight…" is still temporary.
        text = _TODAY_EXEMPT.sub(" ", text)
    for regex in _TODAY.values():
        found = regex.search(text)
        if found:
            return found
    return None


def _split(text: str) -> list[tuple[str, str]]:
    """Split into ``(clause, evidence)`` pairs: sentences, then clauses with their own subject.

    A clause whose subject was elided ("…and have two kids") is given one back
    ("I have two kids") for matching; its evidence is then the whole sentence, so
    the evidence always quotes the user verbatim.
    """
    out: list[tuple[str, str]] = []
    for sentence in _SENTENCE_SPLIT.split(text):
        sentence = sentence.strip()
        if not sentence:
            continue
        for clause in _CLAUSE_SPLIT.split(sentence):
            clause = (clause or "").strip()
            if not clause:
                continue
            parts = _ELIDED_SUBJECT.split(clause) if _STARTS_WITH_I.match(clause) else [clause]
            if len(parts) > 1 and not isinstance(_match(parts[0]), _Hit):
                parts = [clause]  # only borrow the subject of a clause the rules understood
            # re.split with a group yields [head, conj, tail, conj, tail, ...]
            out.append((parts[0].strip(), parts[0].strip() if len(parts) == 1 else sentence))
            for conj, tail in zip(parts[1::2], parts[2::2]):
                subject = "I" if conj.lower() == "and" else "jag"
                out.append((f"{subject} {tail.strip()}", sentence))
    return out


def _en_third_person(phrase: str) -> str:
    """'prefer' -> 'prefers', 'have trouble' -> 'has trouble', 'go' -> 'goes', 'study' -> 'studies'."""
    if not phrase:
        return phrase
    first, _, tail = phrase.partition(" ")
    irregular = {"have": "has", "be": "is", "am": "is", "do": "does", "go": "goes", "'d love to": "would love to"}
    if phrase in irregular:
        return irregular[phrase]
    if first.startswith("'d"):
        return "would" + phrase[2:]
    if first in irregular:
        conj = irregular[first]
    elif first.endswith(("s", "sh", "ch", "x", "z", "o")):
        conj = first + "es"
    elif len(first) > 1 and first.endswith("y") and first[-2] not in "aeiou":
        conj = first[:-1] + "ies"
    elif first in ("would", "can't", "will", "could", "should", "must", "am", "wish"):
        conj = first if first != "wish" else "wishes"
    else:
        conj = first + "s"
    return f"{conj} {tail}" if tail else conj


def _kept_adverbs(raw: str, language: str) -> str:
    if language == "zh":
        out = raw
        for drop in _ZH_DROP_ADV:
            out = out.replace(drop, "")
        return out
    keep = _EN_KEEP_ADV if language == "en" else _SV_KEEP_ADV
    words = raw.lower().split()
    kept: list[str] = []
    i = 0
    while i < len(words):
        two = " ".join(words[i:i + 2])
        if two in keep:
            kept.append(keep[two])
            i += 2
            continue
        if words[i] in keep and keep[words[i]] not in kept:
            kept.append(keep[words[i]])
        i += 1
    return " ".join(kept) + " " if kept else ""


def _clean_rest(rest: str, language: str) -> str:
    rest = rest.strip()
    for _ in range(3):  # fillers and punctuation can alternate: "tea too, haha!"
        rest = _TRAILING_NOISE.sub("", rest)
        rest = _TRAILING_FILLER[language].sub("", rest)
    return rest.strip()


def _pronouns(text: str, language: str) -> str:
    for regex, repl in _PRONOUNS[language]:
        text = regex.sub(repl, text)
    return text


class _Hit(NamedTuple):
    rule: _CompiledRule
    text: str
    rest: str
    temporary_in_rest: bool


def _match(clause: str) -> _Hit | None | str:
    """Try every rule on ``clause``; return the hit, a skip reason (str), or None (no rule fired)."""
    # Trailing punctuation goes so that "$" anchors ("I'm 34.") and the rest are clean.
    work = _TRAILING_NOISE.sub("", clause.translate(_APOSTROPHES))
    hit = _match_rules(work, clause)
    if hit is None:
        # Swedish verb-second order: "Numera föredrar jag te", "Från och med idag är jag
        # vegetarian", "När jag reser föredrar jag gångplats". Put the subject first and
        # keep the opening phrase, unless it is a mere lead-in.
        inverted = _SV_INVERSION.match(work)
        if inverted:
            hit = _match_rules(f"jag {inverted['verb']} {inverted['tail']}", clause)
            if isinstance(hit, _Hit):
                pre = inverted["pre"]
                if not _SV_LEAD_ONLY.fullmatch(pre):
                    hit = hit._replace(text=f"{hit.text} {_pronouns(pre[0].lower() + pre[1:], 'sv')}")
                return hit
    if hit is None:
        # "In the mornings I prefer tea": try again without the leading condition,
        # and keep the condition at the end of the statement.
        lead = _EN_CONDITION_PREFIX.match(work)
        if lead:
            hit = _match_rules(work[lead.end():], clause)
            if isinstance(hit, _Hit):
                pre = _pronouns(lead["pre"][0].lower() + lead["pre"][1:], "en")
                hit = hit._replace(text=f"{hit.text} {pre}")
    return hit


def _match_rules(work: str, clause: str) -> _Hit | None | str:
    """The first rule that fires on ``work`` (the normalised clause), rendered; see :func:`_match`."""
    for compiled in _compiled():
        m = compiled.regex.search(work)
        if m is None:
            continue
        language = compiled.language
        groups = {k: (v or "") for k, v in m.groupdict().items()}
        rest = _clean_rest(groups["rest"], language)
        if not rest or not re.search(r"\w", rest):
            continue
        if language == "en":
            rest = _EN_LEADING_ADVERBS.sub("", rest)  # "I like also cheese pizza"
        if _DEICTIC[language].match(rest) or _EMPTY_REST.fullmatch(rest) or _CONVERSATIONAL[language].search(rest):
            return "not standalone"
        fields: dict[str, str] = {}
        for key, value in groups.items():
            if key == "_body":
                continue
            if key == "rest":
                fields["rest"] = rest
            elif key == "adv":
                fields["adv"] = _kept_adverbs(value, language).strip()
            elif key == "verb":
                value = " ".join(value.split())
                fields["verb"] = value if language == "zh" else value.lower()
                fields["verb3"] = _en_third_person(value.lower()) if language == "en" else value
            elif key == "rel":
                rel = " ".join(value.lower().split())
                fields["rel"] = rel
                fields["rel_def"] = _sv_definite(rel) if language == "sv" else rel
            else:
                fields[key] = " ".join(value.split()).lower() if language != "zh" else value
        if m.start("rest") == m.start("_body") and len(rest) > 1 and rest[1].islower():
            # The object opened the sentence ("Public speaking is hard for me"), so its
            # capital is the sentence's, not a name's.
            fields["rest"] = rest[0].lower() + rest[1:]
        text = compiled.rule.template.format_map(_Fields(fields))
        text = _TRAILING_NOISE.sub("", _pronouns(" ".join(text.split()), language))
        prefix = work[:m.start()].strip().rstrip(",，").strip()
        if prefix:
            if language == "zh":
                if prefix.endswith(_ZH_TIME_WORDS):
                    text = prefix + text
            elif _CONDITION[language].match(prefix):
                text = f"{text} {_pronouns(prefix[0].lower() + prefix[1:], language)}"
        if language != "zh" and text:
            text = text[0].upper() + text[1:]
        temporary = bool(_today_marker(groups["rest"])) or (
            compiled.rule.category != "decision" and _today_marker(clause) is not None)
        return _Hit(compiled, text, rest, temporary)
    return None


class _Fields(dict):
    """format_map helper: a group the pattern did not capture renders as empty."""

    def __missing__(self, key: str) -> str:
        return ""


def _sv_definite(rel: str) -> str:
    words = rel.split()
    if words and " ".join(words[-2:]) in SV_DEFINITE:
        return " ".join(words[:-2] + [SV_DEFINITE[" ".join(words[-2:])]])
    if words and words[-1] in SV_DEFINITE:
        # "lilla hund" -> "lilla hunden"
        return " ".join(words[:-1] + [SV_DEFINITE[words[-1]]])
    return rel


def _strength(evidence: str) -> bool:
    return any(regex.search(evidence) for regex in _STRONG.values())


def _importance(category: str, evidence: str) -> float:
    base = BASE_IMPORTANCE.get(category, BASE_IMPORTANCE["other"])
    if _strength(evidence):
        base += STRONG_BOOST
    return round(min(1.0, base), 2)


def _norm_key(text: str) -> str:
    """Dedup key: NFKC, casefold, letters and digits only."""
    return re.sub(r"[\W_]+", "", unicodedata.normalize("NFKC", text).casefold())


def _kinds_label(findings: Sequence[Any]) -> str:
    kinds = {f.kind for f in findings}
    return ", ".join(k for k in PII_KINDS if k in kinds)


_PLACEHOLDER: Final = placeholder_pattern()


def _only_placeholders(text: str) -> bool:
    """True when ``text`` holds nothing but masked identifiers and words that label them."""
    if not _PLACEHOLDER.search(text):
        return False
    rest = _LABEL_WORDS.sub(" ", _PLACEHOLDER.sub(" ", text))
    return not re.search(r"\w", rest)


def _add_memory(result: Extraction, keys: dict[str, int], candidate: Candidate) -> None:
    """Append ``candidate`` unless the same statement is already kept; a restatement
    replaces the earlier one so the memory carries the latest date."""
    key = _norm_key(candidate.text)
    if key in keys:
        position = keys[key]
        result._skip(result.memories[position].source_turn, "duplicate")
        del result.memories[position]
        for k, v in list(keys.items()):
            if v > position:
                keys[k] = v - 1
    keys[key] = len(result.memories)
    result.memories.append(candidate)


# --------------------------------------------------------------------------- #
# Extractors
# --------------------------------------------------------------------------- #


def extract_rules(turns: Any, *, pii: str = "redact") -> Extraction:
    """Extract memories from the user turns with the rule tables (no LLM).

    ``turns``: a list of :class:`Turn` or anything :func:`parse_conversation` accepts.
    ``pii``: ``"redact"`` masks identifiers before extraction (a statement left with
    nothing but a placeholder, like "I live at [address]", is dropped), ``"refuse"``
    drops every clause containing one, ``"allow"`` keeps them. See the module
    docstring for what the rules can and cannot do.
    """
    turns = _as_turns(turns)
    pii = _check_pii_mode(pii)
    result = Extraction(path="rules", detail="rule-based extractor (en, sv, zh)")
    keys: dict[str, int] = {}
    for index, turn in enumerate(turns):
        if turn.role != "user":
            result._skip(index, f"{turn.role} turn")
            continue
        content = turn.content
        if not content.strip():
            result._skip(index, "empty")
            continue
        if pii == "redact":
            content, findings = redact(content)
            if findings:
                result.redacted.append((index, _kinds_label(findings)))
        for sentence in _SENTENCE_SPLIT.split(content):
            sentence = sentence.strip()
            if not sentence:
                continue
            if _is_small_talk(sentence):
                result._skip(index, "small talk")
                continue
            for clause, evidence in _split(sentence):
                _rules_clause(result, keys, index, turn, clause, evidence, pii)
    return result


def _rules_clause(result: Extraction, keys: dict[str, int], index: int, turn: Turn, clause: str, evidence: str,
                  pii: str) -> None:
    if _is_small_talk(clause):
        result._skip(index, "small talk")
        return
    if _is_question(clause):
        result._skip(index, "question")
        return
    hit = _match(clause)
    if isinstance(hit, str):
        result._skip(index, hit)
        return
    if hit is None:
        if _today_marker(clause):
            result._skip(index, "only true today")
        elif _QUESTION_START.match(clause.translate(_APOSTROPHES)):
            result._skip(index, "question")
        else:
            result._skip(index, "no durable statement")
        return
    if hit.temporary_in_rest:
        result._skip(index, "only true today")
        return
    if pii == "refuse" and (find_pii(clause) or find_pii(evidence)):
        result._skip(index, "personal identifier refused")
        return
    if pii == "redact" and _only_placeholders(hit.text):
        result._skip(index, "only a personal identifier")
        return
    if len(hit.text) > MAX_MEMORY_CHARS:
        result._skip(index, "too long for a memory")
        return
    category = hit.rule.rule.category
    _add_memory(result, keys, Candidate(
        text=hit.text, category=category, kind="explicit", importance=_importance(category, clause),
        created_at=turn.at, source_turn=index, evidence=evidence,
    ))


def _render_conversation(turns: Sequence[Turn], contents: Sequence[str]) -> str:
    lines = ["Conversation (turn index, role, time if known):"]
    for index, (turn, content) in enumerate(zip(turns, contents)):
        when = f" ({turn.at.isoformat()})" if turn.at else ""
        lines.append(f"[{index}] {turn.role}{when}: {content}")
    return "\n".join(lines)


def _validate_llm_items(reply: Any, n_turns: int) -> list[dict[str, Any]]:
    """Check the model's JSON against the contract; raise LLMError naming the first bad item."""
    if isinstance(reply, list):
        items = reply  # a bare list of memories is unambiguous; accept it
    elif isinstance(reply, dict) and isinstance(reply.get("memories"), list):
        items = reply["memories"]
    else:
        got = sorted(reply)[:5] if isinstance(reply, dict) else type(reply).__name__
        raise LLMError(f'LLM extraction reply must be {{"memories": [...]}}; got {got}')
    checked: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        where = f"LLM extraction reply: memories[{i}]"
        if not isinstance(item, dict):
            raise LLMError(f"{where} must be an object, got {type(item).__name__}")
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            raise LLMError(f"{where} has no text")
        if len(text.strip()) > MAX_MEMORY_CHARS:
            raise LLMError(f"{where} text is {len(text.strip())} characters; the limit is {MAX_MEMORY_CHARS}")
        category = item.get("category")
        if category not in CATEGORIES:
            raise LLMError(f"{where} category {category!r} is not one of {', '.join(CATEGORIES)}")
        kind = item.get("kind")
        if kind not in KINDS:
            raise LLMError(f"{where} kind {kind!r} is not one of {', '.join(KINDS)}")
        importance = item.get("importance")
        if (isinstance(importance, bool) or not isinstance(importance, (int, float))
                or not math.isfinite(importance) or not 0 <= importance <= 1):
            raise LLMError(f"{where} importance {importance!r} is not a number between 0 and 1")
        source = item.get("source_turn")
        if isinstance(source, bool) or not isinstance(source, int) or not 0 <= source < n_turns:
            raise LLMError(f"{where} source_turn {source!r} is not a turn index (0-{n_turns - 1})")
        evidence = item.get("evidence", "")
        if evidence is None:
            evidence = ""
        if not isinstance(evidence, str):
            raise LLMError(f"{where} evidence must be a string, got {type(evidence).__name__}")
        checked.append({"text": " ".join(text.split()), "category": category, "kind": kind,
                        "importance": float(importance), "source_turn": source, "evidence": evidence.strip()})
    return checked


def extract_llm(turns: Any, client: LLMClient, *, pii: str = "redact") -> Extraction:
    """Extract memories with the LLM behind ``client``.

    Unless ``pii="allow"``, identifiers are masked before the conversation leaves the
    process. The reply must be ``{"memories": [{"text", "category", "kind",
    "importance", "source_turn", "evidence"}]}``; any item with a category or kind
    outside CATEGORIES/KINDS, importance outside [0, 1], an unknown source_turn, or
    empty or over-long text raises ``LLMError`` (``chat_json`` has already made one
    repair attempt for unparseable JSON). Identifiers in the reply are redacted
    (``"redact"``) or the memory dropped (``"refuse"``).
    """
    turns = _as_turns(turns)
    pii = _check_pii_mode(pii)
    if client is None:
        raise ValidationError("extract_llm needs an LLMClient; use extract() to fall back to the rules")
    result = Extraction(path="llm", detail=f"model {client.config.model!r} at {client.endpoint}")
    if not any(t.role == "user" and t.content.strip() for t in turns):
        for index, turn in enumerate(turns):
            result._skip(index, f"{turn.role} turn" if turn.role != "user" else "empty")
        return result  # nothing to ask about; do not spend a call
    contents: list[str] = []
    for index, turn in enumerate(turns):
        if pii == "allow":
            contents.append(turn.content)
            continue
        masked, findings = redact(turn.content)
        contents.append(masked)
        if findings:
            result.redacted.append((index, _kinds_label(findings)))
    messages = [
        {"role": "system", "content": EXTRACT_SYSTEM_PROMPT},
        {"role": "user", "content": _render_conversation(turns, contents)},
    ]
    items = _validate_llm_items(client.chat_json(messages, schema_hint=EXTRACT_SCHEMA_HINT), len(turns))
    keys: dict[str, int] = {}
    for item in items:
        index = item["source_turn"]
        text, evidence = item["text"], item["evidence"]
        if pii == "refuse":
            if (find_pii(text) or find_pii(evidence) or _PLACEHOLDER.search(text)
                    or _PLACEHOLDER.search(evidence)):
                result._skip(index, "personal identifier refused")
                continue
        elif pii == "redact":
            text, found = redact(text)
            evidence, _ = redact(evidence)
            if _only_placeholders(text):
                result._skip(index, "only a personal identifier")
                continue
        _add_memory(result, keys, Candidate(
            text=text, category=item["category"], kind=item["kind"], importance=round(item["importance"], 3),
            created_at=turns[index].at, source_turn=index, evidence=evidence,
        ))
    result.memories.sort(key=lambda c: c.source_turn)
    used = {c.source_turn for c in result.memories} | {i for i, _ in result.skipped}
    for index, turn in enumerate(turns):
        if turn.role != "user":
            result._skip(index, f"{turn.role} turn")
        elif index not in used:
            result._skip(index, "nothing worth keeping")
    result.skipped.sort(key=lambda s: s[0])
    return result


def extract(turns: Any, client: LLMClient | None = None, *, pii: str = "redact") -> Extraction:
    """Extract memories with the LLM when ``client`` is given and works, else with the rules.

    Uses :func:`memory_core.language.llm.with_fallback`: a missing client, an unreachable
    endpoint or a reply that breaks the contract all fall back to
    :func:`extract_rules`. ``path`` is ``"llm"`` or ``"rules"``; ``detail`` names the
    model, or says why the rules were used.
    """
    turns = _as_turns(turns)
    pii = _check_pii_mode(pii)
    outcome = with_fallback(lambda c: extract_llm(turns, c, pii=pii), lambda: extract_rules(turns, pii=pii), client)
    extraction = outcome.value
    if outcome.used_llm:
        extraction.path, extraction.detail = "llm", outcome.detail
    else:
        extraction.path, extraction.detail = "rules", f"rule-based extractor: {outcome.detail}"
    return extraction


# --------------------------------------------------------------------------- into a bank (MemoryBank.ingest writes)


@dataclass
class IngestReport:
    """What ingesting a conversation did: new memories, reinforced ones, conflicts flagged."""

    extraction: Extraction
    added: list[int] = field(default_factory=list)
    reinforced: list[tuple[int, str]] = field(default_factory=list)  # (existing id, the restated text)
    conflicts: list[Any] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"extraction": self.extraction.to_dict(), "added": self.added,
                "reinforced": [list(r) for r in self.reinforced], "conflicts": [c.to_dict() for c in self.conflicts]}


@dataclass
class IngestPlan:
    """What storing an extraction in a namespace changes, decided before anything is written:
    the stored memories it reinforces and the new rows to add (each with its embedding)."""

    reinforce: list[tuple[int, Candidate]] = field(default_factory=list)  # (existing id, the restating candidate)
    rows: list[dict[str, Any]] = field(default_factory=list)  # for MemoryBank.add_many


def plan_ingest(candidates: Sequence[Candidate], vectors: np.ndarray, ids: np.ndarray, existing: np.ndarray,
                namespace: str, *, duplicate_threshold: float = 0.9) -> IngestPlan:
    """Decide what storing ``candidates`` (with their unit ``vectors``) in ``namespace`` does, given
    the namespace's live memories: ``ids`` and their unit vectors ``existing``. Changes nothing.

    A candidate whose meaning is already stored (cosine >= ``duplicate_threshold`` with a live
    memory) reinforces that memory (one more use, the higher importance) instead of being stored
    twice; one said twice in the conversation is kept once, with the later wording and date and
    the higher importance. :meth:`MemoryBank.ingest` applies the plan, then runs conflict
    detection on the new memories, so a statement that contradicts an old one is flagged at once.
    """
    plan = IngestPlan()
    for cand, vec in zip(candidates, vectors):
        if len(ids):
            sims = dot(existing, vec)
            best = int(np.argmax(sims))
            if sims[best] >= duplicate_threshold:
                plan.reinforce.append((int(ids[best]), cand))
                continue
        # Said twice in this conversation: keep one, the later wording and date, the higher importance.
        same = next((r for r in plan.rows if float(r["embedding"] @ vec) >= duplicate_threshold), None)
        if same is not None:
            same.update(text=cand.text, created_at=cand.created_at, embedding=vec,
                        importance=max(same["importance"], cand.importance))
            continue
        plan.rows.append({"text": cand.text, "namespace": namespace, "category": cand.category, "kind": cand.kind,
                          "importance": cand.importance, "created_at": cand.created_at, "source": "conversation",
                          "embedding": vec})
    return plan
