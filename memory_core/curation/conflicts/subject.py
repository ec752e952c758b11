"""The one candidate rule for contradictions, the supersede signals, and calibrated confidence.

A pair of memories is judged only when it is about the same subject (:func:`same_subject`): both name
one subject slot (where someone lives, their diet, pets, work, a relationship, a habit, a sport, a
study plan, devices, how they get around, drinks, music, reading, coding tools, hosting:
``SUBJECT_SLOTS``, in each of the three languages) or share a content word (the object of
a preference, a place, a product), and, where both carry a category, the same category. A shared
topic is not enough: "Is vegetarian" and "Likes quick recipes" are both about food, not one subject;
nor is a slot when one memory stops a thing the other does not name ("Likes green tea" / "Stopped
drinking coffee").
Nearness in meaning is the other half of the rule, applied where pairs are drawn: each memory is
paired with its ``SUBJECT_NEIGHBOURS`` nearest memories only (``candidates.candidate_pairs``), on an
add for the new memory and in a scan for every memory, and with its ``SLOT_NEIGHBOURS`` nearest among
the memories that fill one of its slots (``candidates.slot_pairs``; :func:`slots`), however far apart
in meaning or language. So an add judges a handful of pairs, not 25.

Supersede signals (:func:`supersede_signals`, ``SUPERSEDE_SIGNALS`` in English, Swedish and Chinese)
are words in the newer memory that say the older no longer holds: "quit", "moved to", "no longer",
"now prefers", "started again"; "har slutat", "flyttade", "inte längre", "igen"; "不再", "搬到",
"放弃", "又开始". A signal the older memory also carries does not count, "again" counts only
against an older memory that says the habit stopped, and a move only against what still holds: not
a plan or a past home, and when someone or something else moved, only what names it.

Confidence (:func:`confidence`) is a table by evidence (:func:`evidence`): whether the rule judge
found a conflict, which signal backs it, whether the two share a subject slot and two or more content
words; one more cell (:data:`ACROSS_NEGATION`) holds the rules' negation verdict across two languages. Its values are the share right per cell on the dev halves of the curation set and of the demo
bank's namespaces, fitted by the curation bench (BENCHMARKS.md, "Curation quality", with held-out
figures). :data:`AUTO_BAR` is the least confidence a maintenance
run resolves on its own, the bar where held-out precision must be 0.95 or more: no rules verdict
reaches it, so without an LLM every contradiction is offered for review.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Final

from ...language.text import detect_language, tokenize
from ...language.rules.conflict_patterns import (EXPECTATION_CUES, FORMER_HOME, INSTEAD_OF, MOVED_OTHER, PLAN_CUES,
                                                 PREFER_CUES, SUBJECT_LIGHT_WORDS, SUBJECT_SLOTS, SUPERSEDE_SIGNALS,
                                                 WANT_CUES)

SUBJECT_NEIGHBOURS: Final = 2
"""Each memory is judged against its this many nearest memories of the namespace only."""
SLOT_NEIGHBOURS: Final = 3
"""And against its this many nearest memories that fill one of its subject slots, however far in meaning
("Lives in Uppsala" / "Moved to Gothenburg last month", or the same slot in another language)."""
AUTO_BAR: Final = 0.95
"""The least confidence a maintenance run applies a clear rule at without a person."""
OFFER_FLOOR: Final = 0.6
"""A rules verdict less confident than this is not recorded: it is more often wrong than right."""
STRONG_SIGNALS: Final = frozenset({"stop", "move", "switch", "again"})
CONFIDENCE_CAP: Final = 0.9
"""The most a rules verdict is trusted, below :data:`AUTO_BAR`: no evidence cell of the rules has shown
held-out precision of 0.95 on text it was not written from, so without an LLM a person decides."""
Evidence = tuple[bool, str, bool, bool]
"""What a same-subject pair's confidence is read by (:func:`evidence`): the rule judge found a
conflict; the newer memory's supersede signal ("stop" alone, "move" alone, another "strong" one, "now"
or "-": a stop beside a shared slot is often one thing stopped beside another of its kind, a move often
one within a place or for a while); the two share a subject slot; they share two or more content words."""
ACROSS_NEGATION: Final[Evidence] = (True, "negation", False, False)
"""The cell of the rules' ``cross_language`` verdict: two languages, exactly one side negated, no
supersede signal about a shared slot; fitted with the others, on the curation set's dev pairs across
two languages (the demo's dev namespaces hold no contradiction across languages)."""
# Confidence by evidence: the share of pairs right in each cell on the dev halves (the curation
# set's and the demo bank's dev namespaces), smoothed towards the coarser cell it belongs to with the
# weight leave-one-out log loss picks, and capped at CONFIDENCE_CAP; fitted by
# `python -m bench.curation_quality --fit`, not by hand.
CONFIDENCE: Final[dict[Evidence, float]] = {
    (True, 'strong', True, True): 0.9,
    (True, 'strong', True, False): 0.9,
    (True, 'strong', False, True): 0.85,
    (True, 'strong', False, False): 0.78,
    (True, 'stop', True, True): 0.82,
    (True, 'stop', True, False): 0.68,
    (True, 'stop', False, True): 0.84,
    (True, 'stop', False, False): 0.68,
    (True, 'move', True, True): 0.9,
    (True, 'move', True, False): 0.75,
    (True, 'move', False, True): 0.85,
    (True, 'move', False, False): 0.82,
    (True, 'now', True, True): 0.86,
    (True, 'now', True, False): 0.86,
    (True, 'now', False, True): 0.9,
    (True, 'now', False, False): 0.71,
    (True, '-', True, True): 0.73,
    (True, '-', True, False): 0.12,
    (True, '-', False, True): 0.79,
    (True, '-', False, False): 0.12,
    (False, 'strong', True, True): 0.89,
    (False, 'strong', True, False): 0.9,
    (False, 'strong', False, True): 0.89,
    (False, 'strong', False, False): 0.89,
    (False, 'stop', True, True): 0.89,
    (False, 'stop', True, False): 0.9,
    (False, 'stop', False, True): 0.68,
    (False, 'stop', False, False): 0.9,
    (False, 'move', True, True): 0.78,
    (False, 'move', True, False): 0.66,
    (False, 'move', False, True): 0.72,
    (False, 'move', False, False): 0.44,
    (False, 'now', True, True): 0.66,
    (False, 'now', True, False): 0.62,
    (True, 'negation', False, False): 0.47,
}
_LANGUAGES = ("en", "sv", "zh")


@functools.cache
def _slots() -> dict[str, dict[str, re.Pattern[str]]]:
    """``SUBJECT_SLOTS`` compiled, on first use (importing costs no regex compilation)."""
    return {slot: {lang: re.compile(rx) for lang, rx in rows.items()} for slot, rows in SUBJECT_SLOTS.items()}


@functools.cache
def _plans() -> dict[str, re.Pattern[str]]:
    """``PLAN_CUES`` compiled, on first use."""
    return {lang: re.compile(rx) for lang, rx in PLAN_CUES.items()}


@functools.cache
def _cues() -> dict[str, dict[str, re.Pattern[str]]]:
    """The per-language cue tables a move or a merge's veto reads (``MOVED_OTHER``, ``FORMER_HOME``,
    ``WANT_CUES``, ``PREFER_CUES``, ``EXPECTATION_CUES``, ``INSTEAD_OF``), compiled on first use."""
    tables = {"moved_other": MOVED_OTHER, "former_home": FORMER_HOME, "want": WANT_CUES, "prefer": PREFER_CUES,
              "expect": EXPECTATION_CUES, "instead": INSTEAD_OF}
    return {name: {lang: re.compile(rx) for lang, rx in rows.items()} for name, rows in tables.items()}


def _cue(name: str, text: str, languages: set[str]) -> bool:
    """Whether ``text`` carries the cue ``name`` of :func:`_cues` in any of ``languages``."""
    low = text.casefold()
    return any(_cues()[name][lang].search(low) for lang in languages)


@functools.cache
def _signal_table() -> dict[str, tuple[tuple[str, re.Pattern[str]], ...]]:
    """``SUPERSEDE_SIGNALS`` compiled, on first use."""
    return {lang: tuple((name, re.compile(rx)) for name, rx in rows) for lang, rows in SUPERSEDE_SIGNALS.items()}


@functools.lru_cache(maxsize=8192)
def language_of(text: str) -> str:
    """The language a memory's slots and signals are read in first: English, Swedish or Chinese
    (cached: a scan or an add's slot pairs read the same few texts' language many times over)."""
    language = detect_language(text)
    return language if language in _LANGUAGES else "en"


@dataclass(frozen=True)
class Subject:
    """What one memory is about: the subject slots it names and its content words."""

    slots: frozenset[str]
    words: frozenset[str]

    @classmethod
    @functools.lru_cache(maxsize=8192)
    def of(cls, text: str) -> Subject:
        """The subject of ``text``, read in its own language (cached: a memory is in several pairs)."""
        language = language_of(text)
        tokens = tokenize(text, language)
        if language == "zh":
            words = frozenset(t for t in tokens if len(t) >= 2)
        else:
            words = frozenset(t for t in tokens if len(t) > 2 and not t.isdigit() and t not in SUBJECT_LIGHT_WORDS)
        return cls(slots(text), words)


@dataclass(frozen=True)
class SameSubject:
    """Why two memories are about one subject: the slots both name, the content words both use."""

    slots: frozenset[str]
    words: frozenset[str]


def same_subject(a: str, b: str, category_a: str | None = None, category_b: str | None = None) -> SameSubject | None:
    """The evidence that memories ``a`` and ``b`` are about one subject, or None when they are not:
    different categories (when both have one), or no shared slot and no shared content word."""
    if category_a and category_b and category_a != category_b:
        return None
    sa, sb = Subject.of(a), Subject.of(b)
    slots, words = sa.slots & sb.slots, sa.words & sb.words
    if not slots and not words:
        return None
    if not words and _stops_another_thing(a, b) and not _name_alike(sa.words, sb.words):
        return None
    return SameSubject(slots, words)


def _stops_another_thing(a: str, b: str) -> bool:
    """Whether one of two memories in one language that share no content word stops something
    ("quit", "no longer", "har slutat", "不再"): stopping one thing says nothing of another of its
    kind, so "Likes green tea" and "Stopped drinking coffee" share a slot but not a subject. A move
    or a switch replaces whatever filled the slot and keeps it; across two languages no word can be
    shared, and the slot stands."""
    if language_of(a) != language_of(b):
        return False
    return "stop" in _new_signals(a, b) or "stop" in _new_signals(b, a)


def _name_alike(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two sets of content words name one thing in forms the stemmer leaves apart: a word
    that begins another ("spansk" / "spanskan", a definite form). Not a shared last character in
    Chinese: it names a kind ("网球" / "足球"), and stopping one of a kind says nothing of another."""
    return any(len(x) >= _PREFIX_LEN and len(y) >= _PREFIX_LEN and (y.startswith(x) or x.startswith(y))
               for x in a for y in b)


_PREFIX_LEN: Final = 5
"""The shortest word whose longer form counts as the same word (shorter stems begin too many words)."""


_HAN = re.compile(r"[\u3400-\u9fff]")


def _readings(text: str, language: str | None = None) -> set[str]:
    """The languages whose patterns read ``text``: ``language`` (a pair's reading), its own detected
    language, and Chinese wherever it has Chinese characters (a Chinese memory that names a product,
    "换成了 MacBook", is often detected as English by its Latin letters)."""
    found = {language_of(text)} if language is None else {language, language_of(text)}
    if _HAN.search(text):
        found.add("zh")
    return found


def slots(text: str) -> frozenset[str]:
    """The subject slots ``text`` fills, read in its own language (candidate pairs are drawn by them)."""
    low = text.casefold()
    readings = _readings(text)
    return frozenset(slot for slot, rx in _slots().items() if any(rx[lang].search(low) for lang in readings))


def _signals(text: str, language: str) -> set[str]:
    """The signals of ``text`` read in ``language`` (the pair's reading) and in its own (:func:`_readings`):
    "Moved to Gothenburg" beside a Swedish memory is still English to its own reader."""
    low = text.casefold()
    return {name for lang in _readings(text, language) for name, rx in _signal_table()[lang] if rx.search(low)}


def _pair_languages(older: str, newer: str) -> tuple[str, str]:
    # A short Swedish memory often reads as English on its own ("Springer igen"): beside a memory
    # that is clearly Swedish, a Latin-script memory is read as Swedish too.
    lo, ln = language_of(older), language_of(newer)
    if "sv" in (lo, ln) and "zh" not in (lo, ln):
        return "sv", "sv"
    return lo, ln


def _new_signals(older: str, newer: str) -> set[str]:
    # The signals of ``newer`` that ``older`` does not carry; "again" only against a stopped habit.
    lo, ln = _pair_languages(older, newer)
    old, new = _signals(older, lo), _signals(newer, ln)
    found = new - old
    if "again" in found and "stop" not in old:
        found.discard("again")
    return found


def supersede_signals(older: str, newer: str) -> frozenset[str]:
    """The supersede signals of ``newer`` that ``older`` does not carry ("stop", "move", "switch",
    "again", "now"); "again" only when ``older`` says the habit stopped, and "move" only when it
    replaces what ``older`` says holds now (:func:`_move_replaces`)."""
    found = _new_signals(older, newer)
    if "move" in found and not _move_replaces(older, newer):
        found.discard("move")
    return frozenset(found)


def _move_replaces(older: str, newer: str) -> bool:
    """Whether the move in ``newer`` can replace what ``older`` says: not when ``older`` is a plan ("Plans
    to move to Oslo" / "Moved to Oslo in May" is the plan carried out) or a home in the past ("Grew up in
    Kiruna"), nor when someone or something else moved ("Moved the server to Frankfurt", "The company
    moved its office") and ``older`` names neither it (a shared content word) nor a slot other than
    where the person lives."""
    lo, ln = _pair_languages(older, newer)
    old_langs = _readings(older, lo)
    if any(_plans()[lang].search(older.casefold()) for lang in old_langs) or _cue("former_home", older, old_langs):
        return False
    if not _cue("moved_other", newer, _readings(newer, ln)):
        return True
    so, sn = Subject.of(older), Subject.of(newer)
    return bool(so.words & sn.words) or bool((so.slots & sn.slots) - {"residence"})


def signal_verdict(older: str, newer: str, shared: SameSubject) -> str | None:
    """The signal that alone makes a same-subject pair a contradiction, or None: a strong signal,
    or "now" when the two name the same slot."""
    found = supersede_signals(older, newer)
    strong = sorted(found & STRONG_SIGNALS)
    if strong:
        return strong[0]
    if "now" in found and shared.slots:
        return "now"
    return None


def evidence(rule_conflict: bool, older: str, newer: str, shared: SameSubject) -> Evidence:
    """The evidence cell of a same-subject pair (:data:`Evidence`), the key of ``CONFIDENCE``."""
    found = supersede_signals(older, newer)
    strong = found & STRONG_SIGNALS
    alone = next(iter(strong)) if len(strong) == 1 else None
    backing = alone if alone in ("stop", "move") else "strong" if strong else "now" if "now" in found else "-"
    return (rule_conflict, backing, bool(shared.slots), len(shared.words) >= 2)


def confidence(rule_conflict: bool, older: str, newer: str, shared: SameSubject) -> float:
    """How often a rules verdict with this evidence is right (the ``CONFIDENCE`` table); 0 when
    neither the rule judge nor a signal (:func:`signal_verdict`) says the two contradict."""
    if not rule_conflict and signal_verdict(older, newer, shared) is None:
        return 0.0
    return CONFIDENCE[evidence(rule_conflict, older, newer, shared)]


def moved_on(a: str, b: str) -> bool:
    """Whether one of two memories states a plan or an expectation the other does not ("Considering a
    trip to Peru" / "Booked flights to Lima", "Is pregnant" / "Had a baby girl"), a want beside a habit or
    a deed, or a supersede signal the other does not carry: the subject moved on, an update or a
    contradiction, never a duplicate to merge. "X instead of Y" counts as a switch only beside a memory
    naming Y, and a want ("vill", "希望") is a preference beside a stated preference."""
    la, lb = _pair_languages(a, b)
    a, b = _unnamed_instead_dropped(a, b, la), _unnamed_instead_dropped(b, a, lb)
    ra, rb = _readings(a, la), _readings(b, lb)
    ahead_a = _plans_in(a, ra) or (_cue("want", a, ra) and not _cue("prefer", b, rb))
    ahead_b = _plans_in(b, rb) or (_cue("want", b, rb) and not _cue("prefer", a, ra))
    if ahead_a != ahead_b:
        return True
    return bool((_new_signals(a, b) | _new_signals(b, a)) & STRONG_SIGNALS)


def _plans_in(text: str, languages: set[str]) -> bool:
    """A plan not carried out (``PLAN_CUES`` less its wants) or a state awaiting an outcome."""
    low = text.casefold()
    for lang in languages:
        rest = _cues()["want"][lang].sub(" ", low)
        if _plans()[lang].search(rest) or _cues()["expect"][lang].search(low):
            return True
    return False


def _unnamed_instead_dropped(text: str, other: str, language: str) -> str:
    """``text`` without an "instead of Y" tail that ``other`` does not name: "Uses contact lenses instead
    of glasses" beside "Wears contact lenses" is the same choice, not a switch away from it."""
    low = text.casefold()
    for lang in _readings(text, language):
        found = _cues()["instead"][lang].search(low)
        if found and low[:found.start()].strip():
            head, tail = Subject.of(low[:found.start()]).words, Subject.of(low[found.end():].strip()).words
            if not (tail - head) & Subject.of(other).words:
                return low[:found.start()]
    return text
