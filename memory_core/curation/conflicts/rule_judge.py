"""The rules judge: whether two memories contradict each other, from the patterns of
``rules/conflict_patterns.py`` (attribute templates, negation, antonyms, change and past cues,
numbers), with the suggestion and the clear rule it would allow."""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from ...errors import ValidationError
from ...language.rules.conflict_patterns import (
    CUE_WINDOW, FORWARD_ONLY, GENERIC_VALUES, SUBJECT_VERBS, SWITCH_LABELS, _CJK_PARTICLES,
    _GENERIC_TOPIC, _NOT_NAMES, _SUBJECT, _SV_MARKERS, _SV_SUFFIXES, _TOPIC_FILLER, _VALUE_FILLER
)
from ...language.text import CJK_CHAR, JOINED_WORD, LANGUAGE_NAMES, PUNCT_MAP, UNIT, fold_chinese, tokenize
from .compiled import rules
from .subject import ACROSS_NEGATION, CONFIDENCE, language_of
from .records import (AUTO_RULES, CONFLICT_KINDS, MUCH_NEWER, MemoryView, REVIEW_BELOW, SAME_DAY, Verdict, _is_number,
                      _utc)


# Confidence levels, named so the policy thresholds can be read against them.
_CONF_STRONG: Final = 0.9      # the newer memory names the older value as replaced ("from X to Y")
_CONF_VALUE: Final = 0.85      # same single-valued attribute, different value
_CONF_POLARITY: Final = 0.8    # negation flip about a specific shared topic
_CONF_PAST: Final = 0.8        # the newer memory puts the older statement in the past ("used to")
_CONF_NUMBER: Final = 0.75     # a number next to the same words changed
_CONF_SWITCH: Final = 0.7      # change words plus a replaced topic, attribute not identified
_CONF_WEAK: Final = 0.6        # something may have changed, but the rules cannot tell: review

_WS = re.compile(r"\s+")
_NUMBER = re.compile(r"^\d+(?:[.,]\d+)?$")
_NUMBER_IN_TEXT = re.compile(r"\d+(?:[.:,]\d+)*")
_YEAR = re.compile(r"^(?:19|20)\d\d$")


# --------------------------------------------------------------------------- #
# Parsing one memory
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class _Slot:
    attr: str                 # what compatibility compares ("residence", "head:band favourit")
    label: str                # what evidence shows ("residence", "favourite band")
    single: bool
    role: str                 # current | target | past
    value: str                # as written (display spelling)
    vtok: frozenset[str]
    ctx: frozenset[str]


@dataclass(frozen=True)
class _Cue:
    cls: str                  # "neg" | "val" | "fix" | "pos" | "chg" (a change word, strong or weak)
    unit: int                 # index of its first unit
    last: int                 # index of its last unit
    text: str
    forward: bool = False     # reaches only the words after it
    language: str = ""        # a negator's: the language whose table it is from


@dataclass
class _Parsed:
    display: str              # the user's spelling, whitespace collapsed (for quotes)
    low: str                  # what patterns see
    bare: str                 # low with every cue word blanked out (same offsets)
    swedish: bool
    units: list[tuple[int, int]]
    segment: list[int]        # clause number of each unit
    flipped: list[bool]       # whether each unit sits on the dispreferred side ("than ...")
    cues: list[_Cue]
    implied: list[tuple[int, frozenset[str]]]   # (unit, topic tokens) of implied negations
    dispreferred: bool
    change: list[str] = field(default_factory=list)      # labels of strong change cues
    change_text: list[str] = field(default_factory=list)
    weak: list[str] = field(default_factory=list)
    past: bool = False
    topic: frozenset[str] = frozenset()
    slots: list[_Slot] = field(default_factory=list)
    numbers: dict[str, frozenset[str]] = field(default_factory=dict)   # number -> neighbouring tokens
    number_clause: dict[str, int] = field(default_factory=dict)        # number -> its clause
    # Per row of the antonym table, its two words' first matches in low (found once, judged against many).
    antonyms: tuple[tuple[re.Match[str] | None, re.Match[str] | None], ...] = ()
    subject: str | None = None    # the named person it is about (see SUBJECT_VERBS), casefolded


def _prepare(text: str) -> tuple[str, str]:
    display = _WS.sub(" ", unicodedata.normalize("NFKC", text).translate(PUNCT_MAP)).strip()
    low = fold_chinese(display.casefold())
    if len(low) != len(display):  # casefold changed lengths (ß -> ss): quote the folded text instead
        display = low
    return display, low


def _subject(display: str) -> str | None:
    """The named person a memory opens with ("anders", "yara's father"), or None."""
    match = _SUBJECT.match(display)
    if match is None or match.group(1).casefold() in _NOT_NAMES:
        return None
    name = match.group(1).casefold() + ("s" if match.group(2) and match.group(2)[0] == "s" else "")
    if match.group(3):  # "Yara's father", "James' brother"
        return f"{name}'s {match.group(3).casefold()}"
    return name if match.group(4).casefold() in SUBJECT_VERBS else None


def _looks_swedish(low: str) -> bool:
    if re.search(r"[åäö]", low):
        return True
    return any(word in _SV_MARKERS for word in JOINED_WORD.findall(low))


def _sv_stem(token: str) -> str:
    # A light Swedish suffix strip on top of text.tokenize's Swedish stemming (which keeps
    # "jobbet" and "kaffet"), so that "jobbar" and "jobbet" share a topic token.
    for suffix in _SV_SUFFIXES:
        if token.endswith(suffix) and len(token) - len(suffix) >= 2:
            return token[: -len(suffix)]
    return token


def _lang(swedish: bool) -> str:
    # Fragments (an attribute, a value) are too short to detect a language from: they are
    # tokenized by the language of the whole memory (CJK runs are segmented whatever it is).
    return "sv" if swedish else "en"


# Kept by text: judging a pair tokenizes each unit (word) of both memories again, and the same
# words recur across pairs and adds.
@functools.lru_cache(maxsize=65536)
def _tokens(text: str, swedish: bool) -> frozenset[str]:
    out: set[str] = set()
    for token in tokenize(text, _lang(swedish)):
        if CJK_CHAR.search(token):
            # Kana and Hangul runs become every character bigram; one that straddles a particle
            # is not a word and would only invent shared topics.
            if token not in _TOPIC_FILLER and not (len(token) == 2 and set(token) & _CJK_PARTICLES):
                out.add(token)
            continue
        if _NUMBER.match(token):
            continue  # numbers are compared by the numeric rule, not as topic words
        token = _sv_stem(token) if swedish else token
        if token not in _TOPIC_FILLER:
            out.add(token)
    return frozenset(out)


def _value_tokens(value: str, swedish: bool) -> frozenset[str]:
    """Tokens of an attribute value: like topic tokens, but stop words and numbers count ("in May")."""
    out: set[str] = set()
    for word in JOINED_WORD.findall(value):
        if word in _VALUE_FILLER:
            continue
        if CJK_CHAR.search(word):
            out.update(t for t in tokenize(word, _lang(swedish)) if t not in ("了", "的"))
            continue
        found = tokenize(word, _lang(swedish))
        if not found:
            found = [word]  # a stop word that is the value itself ("may", the month)
        out.update(_sv_stem(t) if swedish else t for t in found)
    return frozenset(out)


def _blank(text: str, spans: Iterable[tuple[int, int]]) -> str:
    chars = list(text)
    for start, end in spans:
        for i in range(start, end):
            chars[i] = " "
    return "".join(chars)


def _unit_at(units: list[tuple[int, int]], offset: int) -> int:
    """Index of the unit containing (or first after) character ``offset``."""
    for i, (start, end) in enumerate(units):
        if offset < end:
            return i
    return max(len(units) - 1, 0)


def _number_key(raw: str) -> str:
    # "7.0" and "7" are the same number; "26:30" stays a time.
    if re.fullmatch(r"\d+[.,]\d+", raw):
        value = float(raw.replace(",", "."))
        return f"{value:g}"
    return raw


# Kept by text: a new memory is judged against up to NEIGHBOURS stored ones, and the same stored
# memories come back as candidates for the next memories added (parsing is most of judging).
# Nothing changes a _Parsed after this returns it.
@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> _Parsed:
    display, low = _prepare(text)
    swedish = _looks_swedish(low)
    units = [m.span() for m in UNIT.finditer(low)]

    # Clauses and the dispreferred side of a comparison.
    segment, flipped = [0] * len(units), [False] * len(units)
    breaks = sorted([(m.start(), False) for m in rules().clause_break.finditer(low)] +
                    [(m.start(), True) for m in rules().dispreferred.finditer(low)])
    for i, (start, _end) in enumerate(units):
        before = [flag for offset, flag in breaks if offset <= start]
        segment[i] = len(before)
        flipped[i] = bool(before) and before[-1]

    cue_spans: list[tuple[int, int]] = []

    def hits(cues: tuple[tuple[str, re.Pattern[str]], ...], source: str) -> list[tuple[str, re.Match[str]]]:
        found = []
        for label, regex in cues:
            for match in regex.finditer(source):
                if match.end() > match.start():
                    found.append((label, match))
                    cue_spans.append(match.span())
        return found

    # Idioms like "无辣不欢" are positive: hide them from the negation patterns.
    polar = _blank(low, [m.span() for _, m in hits(rules().negated_positives, low)])
    cues: list[_Cue] = []
    for cls, language, table in rules().polar_tables:
        for label, match in hits(table, polar):
            first, last = _unit_at(units, match.start()), _unit_at(units, match.end() - 1)
            # Tables of several languages may match the same word ("allergic" is also sv "allergi…"):
            # one word is one cue, or it could cancel a negator twice.
            if any(c.cls == cls and c.unit <= last and first <= c.last for c in cues):
                continue
            cues.append(_Cue(cls, first, last, display[match.start():match.end()], label in FORWARD_ONLY, language))
    implied: list[tuple[int, frozenset[str]]] = []
    for _label, regex, words in rules().implied:
        for match in regex.finditer(low):
            unit = _unit_at(units, match.start())
            if not any(c.cls == "val" and c.unit <= unit <= c.last for c in cues):
                cues.append(_Cue("val", unit, unit, display[match.start():match.end()]))
            implied.append((unit, frozenset(_tokens(words, swedish))))
    for _label, match in hits(rules().positive, low):
        cues.append(_Cue("pos", _unit_at(units, match.start()), _unit_at(units, match.end() - 1),
                         display[match.start():match.end()]))
    hits(rules().neutral, low)
    change = hits(rules().change, low)
    weak = hits(rules().weak, low)
    for _label, match in change + weak:
        cues.append(_Cue("chg", _unit_at(units, match.start()), _unit_at(units, match.end() - 1),
                         display[match.start():match.end()]))
    past = hits(rules().past, low)

    bare = _blank(low, cue_spans)
    topic = set(_tokens(bare, swedish))
    for _unit, words in implied:
        topic |= words

    # Numbers with the words around them ("3 users", "总分 6.5"), years left out.
    numbers: dict[str, frozenset[str]] = {}
    number_clause: dict[str, int] = {}
    for match in _NUMBER_IN_TEXT.finditer(low):
        if _YEAR.match(match.group(0)):
            continue
        # Glued to a word it is a name ("Q1", "剑桥雅思12", "v2"); before 年/月/日/号 a date part.
        if match.start() > 0 and (low[match.start() - 1].isalpha()):
            continue
        if re.match(r"\s*[年月日号]", low[match.end():]):
            continue
        unit = _unit_at(units, match.start())
        near = [u for u in range(unit - 2, unit + 3)
                if 0 <= u < len(units) and u != unit and segment[u] == segment[unit]]
        words: set[str] = set()
        for u in near:
            piece = low[units[u][0]:units[u][1]]
            if not piece[:1].isdigit():
                # Units count here even where topic matching ignores them ("14 days", "2 hours").
                words |= _value_tokens(piece, swedish)
        # Chinese neighbours are single characters; add the bigram just before the number ("总分").
        if unit >= 2 and all(CJK_CHAR.match(low[units[u][0]]) for u in (unit - 2, unit - 1)):
            words.add(low[units[unit - 2][0]] + low[units[unit - 1][0]])
        key = _number_key(match.group(0))
        numbers[key] = frozenset(words | numbers.get(key, frozenset()))
        number_clause.setdefault(key, segment[unit])

    parsed = _Parsed(
        display=display, low=low, bare=bare, swedish=swedish, units=units, segment=segment,
        flipped=flipped, cues=cues, implied=implied, dispreferred=any(flag for _, flag in breaks),
        change=[label for label, _ in change],
        change_text=[display[m.start():m.end()] for _, m in change],
        weak=[display[m.start():m.end()] for _, m in weak],
        past=bool(past), topic=frozenset(topic), numbers=numbers, number_clause=number_clause,
        antonyms=tuple((regex_a.search(low), regex_b.search(low)) for _, regex_a, _, regex_b in rules().antonyms),
        subject=_subject(display),
    )
    parsed.slots = _slots(parsed)
    return parsed


def _slots(p: _Parsed) -> list[_Slot]:
    slots: list[_Slot] = []
    for attr, single, role, regex in rules().templates:
        for match in regex.finditer(p.low):
            groups = match.groupdict()
            vgroup = "v" if groups.get("v") is not None else ("v2" if groups.get("v2") is not None else None)
            if vgroup is None:
                continue
            name, label = attr, attr
            if groups.get("attr"):
                name = f"{attr}:{' '.join(sorted(_tokens(groups['attr'], p.swedish)))}"
                label = p.display[match.start("attr"):match.end("attr")]
            # Context: the memory outside the template match, plus the template's object, so that
            # "Uses SQLite | for the side project" and "move the side project | to PostgreSQL"
            # meet. Blanking (not subtracting tokens) keeps bigrams from straddling the value.
            ctx_tokens = _tokens(_blank(p.bare, [match.span()]), p.swedish)
            if groups.get("obj"):
                ctx_tokens |= _tokens(groups["obj"], p.swedish)
            # Single Chinese characters are too ambiguous to tell two contexts apart.
            ctx = frozenset(t for t in ctx_tokens if not (len(t) == 1 and CJK_CHAR.match(t)))
            parts = [(vgroup, role)]
            if groups.get("old"):
                parts.append(("old", "past"))
            for group, slot_role in parts:
                tokens = _value_tokens(groups[group], p.swedish)
                if not tokens or tokens <= GENERIC_VALUES:
                    continue
                start, end = match.span(group)
                slots.append(_Slot(name, label, single, slot_role, p.display[start:end].strip(), tokens, ctx))
    if p.past:
        # "Used to live in Manchester": every value it states is a past value.
        slots = [_Slot(s.attr, s.label, s.single, "past", s.value, s.vtok, s.ctx) for s in slots]
    return slots


# --------------------------------------------------------------------------- #
# Polarity about a topic
# --------------------------------------------------------------------------- #


def _occurrences(p: _Parsed, shared: frozenset[str]) -> dict[int, set[str]]:
    """Units of p that carry a shared topic token, with the tokens they carry."""
    found: dict[int, set[str]] = {}
    bigrams = {t for t in shared if len(t) == 2 and all(CJK_CHAR.match(c) for c in t)}
    for i, (start, end) in enumerate(p.units):
        piece = p.bare[start:end]
        if not piece.strip():
            continue  # a cue word, not topic
        if CJK_CHAR.match(piece):
            carried = set()
            if i + 1 < len(p.units) and p.units[i + 1][0] == end:
                pair = piece + p.bare[p.units[i + 1][0]:p.units[i + 1][1]]
                if pair in bigrams:
                    carried.add(pair)
            if i > 0 and p.units[i - 1][1] == start:
                pair = p.bare[p.units[i - 1][0]:p.units[i - 1][1]] + piece
                if pair in bigrams:
                    carried.add(pair)
            if not bigrams and piece in shared:
                carried.add(piece)
        else:
            carried = set(_tokens(piece, p.swedish) & shared)
        if carried:
            found[i] = carried
    for unit, words in p.implied:
        if words & shared:
            found.setdefault(unit, set()).update(words & shared)
    return found


def _negative_at(p: _Parsed, unit: int) -> tuple[bool, list[str]]:
    """Whether the statement is negative at ``unit``, and the cue words that make it so."""
    near = [c for c in p.cues if c.cls in ("neg", "val", "fix") and p.segment[c.unit] == p.segment[unit]
            and min(abs(c.unit - unit), abs(c.last - unit)) <= CUE_WINDOW
            and not (c.forward and c.unit > unit)]
    live = _live(near)
    negative = bool(live) != p.flipped[unit]
    return negative, [c.text for c in live]


def _live(near: list[_Cue]) -> list[_Cue]:
    """The negators and negative words of ``near`` (cues of one clause) that no other cue cancels."""
    cancelled: set[int] = set()
    for i, cue in enumerate(near):
        if cue.cls != "val" or i in cancelled:
            continue
        for j, other in enumerate(near):
            if j in cancelled or j == i:
                continue
            # "doesn't mind", "no longer hates" (negator just before); "ogillar inte" (Swedish
            # negator just after); "fixed the bug" / "the bug was fixed" (remedy on either side).
            before = other.cls == "neg" and 0 <= cue.unit - other.last <= 3
            after_sv = other.cls == "neg" and other.unit - cue.last == 1 and other.text.casefold() == "inte"
            remedy = other.cls == "fix" and min(abs(other.unit - cue.last), abs(cue.unit - other.last)) <= 3
            if before or after_sv or remedy:
                cancelled |= {i, j}
                break
    return [c for k, c in enumerate(near) if k not in cancelled and c.cls in ("neg", "val")]


def _near_cue(p: _Parsed, tokens: frozenset[str], classes: tuple[str, ...], window: int | None) -> bool:
    """Whether a cue of one of ``classes`` sits in the clause of an occurrence of ``tokens``
    (and within ``window`` units of it, when a window is given)."""
    for unit in _occurrences(p, tokens):
        for cue in p.cues:
            if cue.cls not in classes or p.segment[cue.unit] != p.segment[unit]:
                continue
            if window is None or min(abs(cue.unit - unit), abs(cue.last - unit)) <= window:
                return True
    return False


def _corrects(p: _Parsed, tokens: frozenset[str]) -> bool:
    """Whether p negates a negative word next to the topic ("is not allergic to cats after all")."""
    for unit in _occurrences(p, tokens):
        negs = [c for c in p.cues if c.cls == "neg" and p.segment[c.unit] == p.segment[unit]]
        vals = [c for c in p.cues if c.cls == "val" and p.segment[c.unit] == p.segment[unit]
                and min(abs(c.unit - unit), abs(c.last - unit)) <= CUE_WINDOW]
        if any(0 <= v.unit - n.last <= 3 for n in negs for v in vals):
            return True
    return False


def _polarity(p: _Parsed, shared: frozenset[str]) -> dict[str, set[bool]]:
    """For each shared topic token: the polarities (True = negative) it occurs with in p."""
    result: dict[str, set[bool]] = {}
    for unit, carried in _occurrences(p, shared).items():
        negative, _ = _negative_at(p, unit)
        for token in carried:
            result.setdefault(token, set()).add(negative)
    return result


def _mixed(polarity: dict[str, set[bool]]) -> bool:
    return len(set().union(*polarity.values())) > 1 if polarity else False


# --------------------------------------------------------------------------- #
# Quoting (evidence)
# --------------------------------------------------------------------------- #


def _topic_mask(p: _Parsed, shared: frozenset[str]) -> list[bool]:
    """Which characters of p.display belong to the shared topic."""
    mask = [False] * len(p.low)
    bigrams = {t for t in shared if len(t) == 2 and all(CJK_CHAR.match(c) for c in t)}
    for match in JOINED_WORD.finditer(p.low):
        word = match.group(0)
        if CJK_CHAR.search(word):
            for i in range(match.start(), match.end() - 1):
                if p.low[i:i + 2] in bigrams:
                    mask[i] = mask[i + 1] = True
            if not bigrams:
                for i in range(match.start(), match.end()):
                    if p.low[i] in shared:
                        mask[i] = True
            latin = CJK_CHAR.sub(" ", word)
            for sub in JOINED_WORD.finditer(latin):
                if _tokens(sub.group(0), p.swedish) & shared:
                    for i in range(match.start() + sub.start(), match.start() + sub.end()):
                        mask[i] = True
        elif _tokens(word, p.swedish) & shared:
            for i in range(match.start(), match.end()):
                mask[i] = True
    # "side project" is one topic, not "side, project": join marked words across single spaces.
    for i in range(1, len(mask) - 1):
        if not mask[i] and p.low[i] == " " and mask[i - 1] and mask[i + 1]:
            mask[i] = True
    return mask


def _runs(text: str, mask: list[bool], want: bool) -> list[str]:
    runs, current = [], []
    for char, flag in zip(text, mask):
        if flag == want:
            current.append(char)
        elif current:
            runs.append("".join(current))
            current = []
    if current:
        runs.append("".join(current))
    return runs


def _topic_quote(p: _Parsed, shared: Iterable[str]) -> str:
    shared = frozenset(shared)
    mask = _topic_mask(p, shared)
    words = [r.strip(" .,;:!?") for r in _runs(p.display, mask, True)]
    words = [w for w in dict.fromkeys(words) if w]
    if not words:
        return ", ".join(sorted(shared))
    separator = "、" if all(CJK_CHAR.search(w) for w in words) else ", "
    return separator.join(words)


def _predicate_quote(p: _Parsed, shared: frozenset[str]) -> str:
    """The memory with its topic words left out: what it says about the topic."""
    mask = _topic_mask(p, shared)
    pieces: list[str] = []
    for char, flag in zip(p.display, mask):
        if flag:
            if not pieces or pieces[-1] != "…":
                pieces.append("…")
        else:
            pieces.append(char)
    text = re.sub(r"\s*…\s*", " … ", "".join(pieces))
    # "Enjoys … the" reads better as "Enjoys": articles and particles next to a gap say nothing.
    dangling = r"(?:the|a|an|to|of|for|from|in|on|at|att|i|på|en|ett)"
    text = re.sub(rf"(?i)(?:\b{dangling}\s+)+…", "…", text)
    text = re.sub(rf"(?i)…(?:\s+{dangling}\b)+", "…", text)
    text = re.sub(r"(?:\s*…\s*)+", " … ", text).strip(" ….,;:!?。，")
    if CJK_CHAR.search(text):
        text = re.sub(r"\s*…\s*", "…", text)
    return text or p.display


def _quote(text: str, limit: int = 80) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --------------------------------------------------------------------------- #
# The rules
# --------------------------------------------------------------------------- #


def _check_view(view: object, name: str) -> MemoryView:
    if not isinstance(view, MemoryView):
        raise ValidationError(f"{name} must be a MemoryView, got {type(view).__name__}; use MemoryView.from_memory()")
    return view


def _check_pair(a: object, b: object) -> tuple[MemoryView, MemoryView]:
    a, b = _check_view(a, "a"), _check_view(b, "b")
    if a.id == b.id:
        raise ValidationError(f"a and b are the same memory (id {a.id}); a memory cannot contradict itself")
    return a, b


def _order(a: MemoryView, b: MemoryView) -> tuple[MemoryView, MemoryView]:
    """(older, newer); the id breaks ties so the order never depends on argument order."""
    return (a, b) if (_utc(a.created_at), a.id) <= (_utc(b.created_at), b.id) else (b, a)


def _same_value(x: frozenset[str], y: frozenset[str]) -> bool:
    # Numbers decide on their own: "2000 euros" and "3000 euros" share "euro" but differ.
    nx = {t for t in x if _NUMBER.match(t)}
    ny = {t for t in y if _NUMBER.match(t)}
    if nx and ny and nx != ny:
        return False
    # One value containing the other is a refinement ("Paris" / "a flat in Paris"), not a change.
    return x <= y or y <= x


def _compatible(o: _Slot, n: _Slot) -> bool:
    if o.attr == n.attr:
        return True
    # "Switched to X" says nothing about which attribute changed: it meets another memory's value
    # only in the same setting (both without context, or sharing some), not across settings.
    return "switch" in (o.attr, n.attr) and (o.ctx & n.ctx or (not o.ctx and not n.ctx))


def _ctx_compatible(o: _Slot, n: _Slot) -> bool:
    # Disjoint contexts mean different settings ("Uses Python at work" / "Uses Go for the game").
    return not (o.ctx and n.ctx and not (o.ctx & n.ctx))


def _attr_name(o: _Slot, n: _Slot) -> str:
    label = n.label if o.attr == "switch" else o.label
    return "value" if label == "switch" else label


def _verdict(a: MemoryView, b: MemoryView, kind: str, evidence: str, confidence: float) -> Verdict:
    confidence = round(min(max(confidence, 0.0), 1.0), 2)
    return Verdict(
        conflict=kind != "none", kind=kind, evidence=evidence, confidence=confidence,
        suggestion=suggest(a, b, kind, confidence), path="rules",
    )


def _meaningful(po: _Parsed, pn: _Parsed, shared: frozenset[str]) -> frozenset[str]:
    """The shared topic without lone Chinese characters, unless they are all there is to go on.

    Without word segmentation a shared character ("学" in 学校 and 同学) is usually chance; in two
    four-character memories ("喜欢喝茶" / "改成喝咖啡了") it is the verb they share.
    """
    implied = frozenset().union(*(w for _, w in po.implied), *(w for _, w in pn.implied))
    short = all(len(CJK_CHAR.findall(p.bare)) <= 4 for p in (po, pn))
    return frozenset(t for t in shared
                     if not (len(t) == 1 and CJK_CHAR.match(t)) or short or t in implied)


def _antonym(po: _Parsed, pn: _Parsed, shared: frozenset[str]) -> tuple[str, str] | None:
    """Opposite words (optional / mandatory) about a shared topic, or about nothing else at all."""
    for row in range(len(rules().antonyms)):
        for x, y in ((po, pn), (pn, po)):
            (mx, x_b), (y_a, my) = x.antonyms[row], y.antonyms[row]
            if not (mx and my) or x_b or y_a:
                continue
            # The antonym must be the point of at least one memory: a shared topic, or a memory
            # that says nothing but it ("Is single").
            rest_x = x.topic - _tokens(mx.group(0), x.swedish)
            rest_y = y.topic - _tokens(my.group(0), y.swedish)
            if shared - _tokens(mx.group(0), x.swedish) - _tokens(my.group(0), y.swedish) or not rest_x or not rest_y:
                quoted = (x.display[mx.start():mx.end()], y.display[my.start():my.end()])
                return quoted if x is po else (quoted[1], quoted[0])
    return None


def _number_change(po: _Parsed, pn: _Parsed) -> tuple[str, str, frozenset[str]] | None:
    """A number next to the same words in both memories that changed ("3 users" -> "5 users"),
    where the newer memory reports the change in the clause of its number ("extended to 30 days")."""
    gone = {k: v for k, v in po.numbers.items() if k not in pn.numbers}
    new = {k: v for k, v in pn.numbers.items() if k not in po.numbers and k in pn.number_clause}
    change_clauses = {pn.segment[c.unit] for c in pn.cues if c.cls == "chg"}
    for old_number, old_near in gone.items():
        for new_number, new_near in new.items():
            if pn.number_clause[new_number] not in change_clauses:
                continue
            # A lone Chinese character ("分" in 总分 and 分钟) is too weak a link.
            common = {t for t in old_near & new_near if not (len(t) == 1 and CJK_CHAR.match(t))}
            if common:
                return old_number, new_number, frozenset(common)
    return None


def judge_rules(a: MemoryView, b: MemoryView, *, across_languages: bool = False) -> Verdict:
    """Decide with the rule tables alone (English, Swedish, Chinese) whether a and b contradict.

    The pair is assumed to be on one topic already (the caller picks it by embedding similarity);
    the rules still ask for a shared topic word before they call a negation flip a conflict.
    The order of the arguments does not matter: the older memory (by created_at, then id) is the
    one the newer may overrule. Rules, first match wins: the newer memory puts the older in the
    past ("used to"); opposite words; a negation flip about a shared topic word (polarity); the same
    attribute with a new value (value_change); a number next to the same words changed; change
    words replacing part of the older statement (switch). Last, with ``across_languages`` (the caller
    vouches for the pair: a model that reads both languages in one space, and each memory the other's
    nearest in its language), two memories in different languages of which exactly one is negated
    (``cross_language``, for review: :func:`negated_across_languages`). Raises ValidationError when
    a or b is not a MemoryView or both are the same memory.
    """
    a, b = _check_pair(a, b)
    older, newer = _order(a, b)
    po, pn = _parse(older.text), _parse(newer.text)
    if po.low.strip(" .!。") == pn.low.strip(" .!。"):
        return _no_conflict(a, b, "the same statement", 0.95)
    if po.subject and pn.subject and po.subject != pn.subject:
        return _no_conflict(a, b, f'about different people ("{po.subject}" / "{pn.subject}")', 0.8)
    pair = _Pair.of(a, b, po, pn)
    verdict = _past_rule(pair) or _opposite_rule(pair) or _polarity_rule(pair)
    if verdict is not None:
        return verdict
    values = _slot_findings(pair)
    if values.strong:
        confidence, kind, evidence = max(values.strong)
        return _verdict(a, b, kind, evidence, confidence)
    verdict = _number_rule(pair)
    if verdict is not None:
        return verdict
    if values.agree:
        return _no_conflict(a, b, f"same value for {values.agree[0]}", 0.85)
    if values.weak:
        confidence, kind, evidence = max(values.weak)
        return _verdict(a, b, kind, evidence, confidence)
    return (_switch_rule(pair) or (_cross_language_rule(pair) if across_languages else None)
            or _no_conflict_left(pair, values.multi))


def _no_conflict(a: MemoryView, b: MemoryView, why: str, confidence: float) -> Verdict:
    return _verdict(a, b, "none", f"no conflict: {why}", confidence)


@dataclass(frozen=True)
class _Pair:
    """A pair as the rules read it: the memories, their parses (older, newer), the topic words they
    share, each side's polarity per topic word, the words whose polarity flips, whether a mixed
    comparison makes a flip ambiguous, and whether the newer one reports a change."""

    a: MemoryView
    b: MemoryView
    po: _Parsed
    pn: _Parsed
    shared: frozenset[str]
    pol_o: dict[str, set[bool]]
    pol_n: dict[str, set[bool]]
    flips: list[str]
    ambiguous: bool
    new_changes: bool

    @classmethod
    def of(cls, a: MemoryView, b: MemoryView, po: _Parsed, pn: _Parsed) -> _Pair:
        shared = _meaningful(po, pn, po.topic & pn.topic)
        pol_o, pol_n = _polarity(po, shared), _polarity(pn, shared)
        flips = sorted(t for t in set(pol_o) & set(pol_n)
                       if len(pol_o[t]) == 1 and len(pol_n[t]) == 1 and pol_o[t] != pol_n[t])
        # A comparison ("rather X than Y") puts one topic word on each side; reading the two sides as
        # a flip would misread a preference, so a mixed comparison never counts as one.
        ambiguous = bool((po.dispreferred and _mixed(pol_o)) or (pn.dispreferred and _mixed(pol_n)))
        return cls(a, b, po, pn, shared, pol_o, pol_n, flips, ambiguous, bool(pn.change or pn.weak))


def _past_rule(p: _Pair) -> Verdict | None:
    """1. A memory about the past. The newer one saying "used to" about what the older one states
    as current means it is no longer so; an older "used to" is history the newer one follows."""
    po, pn, shared = p.po, p.pn, p.shared
    if pn.past and not po.past:
        if shared and not p.flips:
            return _verdict(p.a, p.b, "switch",
                            f'switch: "{_quote(pn.display)}" puts "{_quote(po.display)}" in the past '
                            f'(about "{_topic_quote(po, shared)}")', _CONF_PAST)
        return _no_conflict(p.a, p.b, "the newer memory only describes the past", 0.6)
    if po.past and not pn.past:
        return _no_conflict(p.a, p.b, "the older memory already describes the past", 0.7)
    return None


def _opposite_rule(p: _Pair) -> Verdict | None:
    """2. Opposite words about the same thing."""
    opposite = _antonym(p.po, p.pn, p.shared)
    if not opposite:
        return None
    about = f' about "{_topic_quote(p.po, p.shared)}"' if p.shared else ""
    return _verdict(p.a, p.b, "polarity", f'polarity: "{opposite[0]}" vs "{opposite[1]}"{about}',
                    _CONF_POLARITY if p.shared else _CONF_NUMBER)


def _polarity_rule(p: _Pair) -> Verdict | None:
    """3. Polarity: one negates what the other affirms about a shared topic word. It takes explicit
    evidence: a change word in the newer memory's clause about the topic ("… now", "stopped
    …", "fixed"), a positive word on the affirmative side ("loves …", "… is available"), or a
    newer memory that negates a negative word ("not allergic … after all"). Otherwise a
    paraphrase that merely lacks one negative word ("finds German paperwork overwhelming" /
    "German bureaucracy stresses him out") would pass for a flip."""
    po, pn, flips = p.po, p.pn, p.flips
    if not flips or p.ambiguous:
        return None
    flipped = frozenset(flips)
    positive_side = po if p.pol_o[flips[0]] == {False} else pn
    signalled = _near_cue(pn, flipped, ("chg", "fix"), None)
    affirmed = _near_cue(positive_side, flipped, ("pos",), CUE_WINDOW)
    if not (signalled or affirmed or _corrects(pn, flipped)):
        return None
    confidence = _CONF_POLARITY
    if flipped <= _GENERIC_TOPIC:
        confidence = _CONF_WEAK  # only "work"/"morning" in common: maybe two different things
    elif pn.change or pn.weak or len(flipped) >= 2:
        confidence += 0.05
    return _verdict(p.a, p.b, "polarity",
                    f'polarity: "{_quote(_predicate_quote(po, p.shared))}" vs '
                    f'"{_quote(_predicate_quote(pn, p.shared))}" about "{_topic_quote(po, flipped)}"', confidence)


@dataclass
class _SlotFindings:
    """What comparing the two memories' attribute values found: sure and unsure changes
    (confidence, kind, evidence), values both state, and attributes that hold several values."""

    strong: list[tuple[float, str, str]] = field(default_factory=list)
    weak: list[tuple[float, str, str]] = field(default_factory=list)
    agree: list[str] = field(default_factory=list)
    multi: list[str] = field(default_factory=list)


def _slot_findings(p: _Pair) -> _SlotFindings:
    """4. Attribute values (slots) of both memories."""
    po, pn = p.po, p.pn
    found = _SlotFindings()
    for n in pn.slots:
        if n.role == "past":
            _replaced_findings(po, pn, n, found)
            continue
        for o in po.slots:
            if o.role == "past" or not _compatible(o, n):
                continue
            if _same_value(o.vtok, n.vtok):
                found.agree.append(f'{_attr_name(o, n)} "{n.value}"')
                continue
            evidence = f'value_change: {_attr_name(o, n)} "{o.value}" → "{n.value}"'
            # A newer change target replaces whatever the older memory said; otherwise only a
            # single-valued attribute (one home, one employer) cannot hold both values.
            replaces = n.role == "target" or (n.single if o.attr == "switch" else o.single or n.single)
            if not replaces:
                if o.ctx & n.ctx:
                    # Two tools for the same purpose ("Uses SQLite for the side project" / "Uses
                    # PostgreSQL for the side project"): probably a change, possibly both.
                    found.weak.append((_CONF_SWITCH, "value_change",
                                       evidence + f' (both for "{_topic_quote(pn, o.ctx & n.ctx)}")'))
                else:
                    found.multi.append(f'{_attr_name(o, n)} "{o.value}" / "{n.value}"')
                continue
            if _ctx_compatible(o, n):
                context = o.ctx & n.ctx
                if context:
                    evidence += f' (both about "{_topic_quote(pn, context)}")'
                found.strong.append((_CONF_VALUE + (0.05 if p.new_changes else 0.0), "value_change", evidence))
            elif p.new_changes:
                found.weak.append((_CONF_WEAK, "value_change", evidence + " in different contexts"))
    return found


def _replaced_findings(po: _Parsed, pn: _Parsed, n: _Slot, found: _SlotFindings) -> None:
    """A newer slot that names what it replaces ("Moved from VS Code to Neovim", "… instead of
    taking the bus"): a change when the older memory states that."""
    for o in po.slots:
        if o.role != "past" and _compatible(o, n) and _same_value(o.vtok, n.vtok):
            new_value = next((s.value for s in pn.slots if s.role == "target"), "")
            arrow = f' → "{new_value}"' if new_value else " (replaced)"
            found.strong.append((_CONF_STRONG, "value_change",
                                 f'value_change: {_attr_name(o, n)} "{o.value}"{arrow}'))
    replaced = n.vtok & po.topic
    if not po.slots and replaced and len(replaced) * 2 >= len(n.vtok):
        cue = ", ".join(dict.fromkeys(pn.change_text)) or "instead"
        found.strong.append((_CONF_STRONG - 0.05, "switch",
                             f'switch: "{cue}": "{n.value}" is what "{_quote(po.display)}" said'))


def _number_rule(p: _Pair) -> Verdict | None:
    """5. A number next to the same words changed ("allows 3 users" -> "allows 5 users"), in a newer
    memory that reports a change: without one, two numbers are usually two events ("Did 14 km
    for the long run" / "Did 20 km for the long run"), both true."""
    po = p.po
    changed = _number_change(po, p.pn)
    if not (changed and p.shared):
        return None
    old_number, new_number, near = changed
    confidence = _CONF_NUMBER + (0.05 if p.new_changes else 0.0)
    return _verdict(p.a, p.b, "value_change",
                    f'value_change: "{old_number}" → "{new_number}" '
                    f'(next to "{_topic_quote(po, near) if near & po.topic else ", ".join(sorted(near))}")',
                    confidence)


def _switch_rule(p: _Pair) -> Verdict | None:
    """6. Switch: the newer memory reports a change and replaces part of what the older one said."""
    po, pn, shared = p.po, p.pn, p.shared
    switch_cues = [text for label, text in zip(pn.change, pn.change_text) if label in SWITCH_LABELS]
    only_old, only_new = po.topic - pn.topic, pn.topic - po.topic
    # "搬到校外" (moved off campus) is a change of residence; an older memory that says nothing about
    # residence is not what it replaces, whatever words they share.
    specific = {s.attr for s in pn.slots if s.role == "target" and s.attr != "switch"}
    if specific and not specific & {s.attr for s in po.slots}:
        switch_cues = []
    if not (switch_cues and shared and only_old and only_new):
        return None
    confidence = _CONF_SWITCH + (0.05 if len(shared) >= 2 else 0.0)
    return _verdict(p.a, p.b, "switch",
                    f'switch: "{", ".join(dict.fromkeys(switch_cues))}": '
                    f'"{_quote(_predicate_quote(po, shared))}" → "{_quote(_predicate_quote(pn, shared))}" '
                    f'about "{_topic_quote(po, shared)}"', confidence)


def _cross_language_rule(p: _Pair) -> Verdict | None:
    """7. Two languages, one side negated: the rules share no word to find the topic by, but the
    embedding put the two side by side; an operator should look ("Jag äter inte kött" / "I eat
    meat again")."""
    older, newer = _order(p.a, p.b)
    evidence = negated_across_languages(older.text, newer.text)
    return None if evidence is None else _verdict(p.a, p.b, "cross_language", evidence,
                                                         CONFIDENCE[ACROSS_NEGATION])


def negated_across_languages(older: str, newer: str) -> str | None:
    """The evidence when the two texts are in different languages (:func:`.subject.language_of`)
    and exactly one is negated by its own language's negators (a negator that a negative word
    cancels, "doesn't mind", does not count); None otherwise."""
    lang_o, lang_n = language_of(older), language_of(newer)  # cached: a text is judged in many pairs
    if lang_o == lang_n:
        return None
    neg_o, neg_n = _negated(_parse(older), lang_o), _negated(_parse(newer), lang_n)
    if bool(neg_o) == bool(neg_n):
        return None
    names = " / ".join(LANGUAGE_NAMES.get(lang, lang) for lang in (lang_o, lang_n))
    return f'cross_language: in different languages ({names}), one negated ("{(neg_o or neg_n)[0]}"): review'


def _negated(p: _Parsed, language: str) -> list[str]:
    """The negators of ``language``'s table that stand in p, clause by clause (see :func:`_live`)."""
    found: list[str] = []
    for clause in sorted({p.segment[c.unit] for c in p.cues}):
        polar = [c for c in p.cues if c.cls in ("neg", "val", "fix") and p.segment[c.unit] == clause]
        found += [c.text for c in _live(polar) if c.cls == "neg" and c.language == language]
    return found


def _no_conflict_left(p: _Pair, multi: list[str]) -> Verdict:
    """No rule found a conflict: say why, as precisely as the pair allows."""
    negative_o = p.pol_o and all(v == {True} for v in p.pol_o.values())
    negative_n = p.pol_n and all(v == {True} for v in p.pol_n.values())
    if negative_o and negative_n:
        return _no_conflict(p.a, p.b, f'both negative about "{_topic_quote(p.po, p.shared)}"', 0.8)
    if multi:
        return _no_conflict(p.a, p.b, f"different values of an attribute that can hold several: {multi[0]}", 0.6)
    return _no_conflict(p.a, p.b, "no negation flip, value change or change word between them", 0.6)


# --------------------------------------------------------------------------- #
# Resolution policy
# --------------------------------------------------------------------------- #


def suggest(a: MemoryView, b: MemoryView, kind: str, confidence: float) -> str:
    """The resolution to suggest for a verdict of ``kind`` and ``confidence`` on a and b.

    Policy, first match wins: no conflict (``kind == "none"``) -> ``keep_both``; confidence below
    :data:`REVIEW_BELOW` -> ``review``; one explicit, one inferred -> ``explicit_wins``, unless the
    inferred one is more than :data:`MUCH_NEWER` newer (the user may have changed; ``review``);
    same kind and less than :data:`SAME_DAY` apart -> ``review``; otherwise ``newer_wins``.
    Raises ValidationError for an unknown kind or a confidence outside [0, 1].
    """
    a, b = _check_pair(a, b)
    if kind not in CONFLICT_KINDS:
        raise ValidationError(f"kind must be one of {', '.join(CONFLICT_KINDS)}, got {kind!r}")
    if not _is_number(confidence) or not math.isfinite(confidence) or not 0 <= confidence <= 1:
        raise ValidationError(f"confidence must be a number in [0, 1], got {confidence!r}")
    if kind == "none":
        return "keep_both"
    if confidence < REVIEW_BELOW:
        return "review"
    older, newer = _order(a, b)
    gap = _utc(newer.created_at) - _utc(older.created_at)
    if older.kind != newer.kind:
        # An explicit statement beats an inferred conclusion, but a conclusion drawn long after an
        # old statement may reflect a real change the user never spelled out.
        if newer.kind == "inferred" and gap > MUCH_NEWER:
            return "review"
        return "explicit_wins"
    if gap < SAME_DAY:
        return "review"
    return "newer_wins"


def auto_resolution(verdict: Verdict, a: MemoryView, b: MemoryView, min_confidence: float = 0.8) -> str | None:
    """Which clear rule (one of :data:`AUTO_RULES`) an automatic policy would apply, or None.

    None (leave it to an operator) unless the verdict is a conflict with confidence at least
    ``min_confidence`` whose suggestion is ``newer_wins`` or ``explicit_wins`` and still holds
    for a and b: ``newer_wins`` needs the same kind and dates at least :data:`SAME_DAY` apart,
    ``explicit_wins`` needs exactly one explicit memory and the inferred one not much newer (an
    LLM's suggestion is checked against the policy, never trusted blindly).
    """
    if not isinstance(verdict, Verdict):
        raise ValidationError(f"verdict must be a Verdict, got {type(verdict).__name__}")
    a, b = _check_pair(a, b)
    if not _is_number(min_confidence) or not math.isfinite(min_confidence) or not 0 <= min_confidence <= 1:
        raise ValidationError(f"min_confidence must be a number in [0, 1], got {min_confidence!r}")
    if not verdict.conflict or verdict.confidence < min_confidence or verdict.suggestion not in AUTO_RULES:
        return None
    if suggest(a, b, verdict.kind, verdict.confidence) != verdict.suggestion:
        return None
    return verdict.suggestion
