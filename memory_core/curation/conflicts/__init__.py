"""Contradiction detection between two memories: the decision part, as pure functions.

Candidate pairs follow one rule, on an add's check as in a maintenance scan (:mod:`.subject`): each
memory with its ``SUBJECT_NEIGHBOURS`` nearest memories of the namespace whose cosine falls in a band
(:func:`pairs_to_judge`, from the vectors the bank hands over) and its ``SLOT_NEIGHBOURS`` nearest among
the memories that fill one of its subject slots, at any cosine and in any language (:func:`slot_pairs`;
on an add from a per-namespace :class:`SlotIndex`), and of those only the pairs about the
same subject (:func:`same_subject`: a shared subject slot or content word, one category; a shared
topic is not enough). This module decides, for each such pair, whether they CONTRADICT and how an
operator (or an automatic policy) should resolve it (:func:`find`); MemoryBank.detect_conflicts
records what it finds. Nothing here touches the database.

Two judges produce the same :class:`Verdict`:

* :func:`judge_rules`: cheap multilingual rules (English, Swedish, Chinese) in readable tables,
  in the style of :mod:`memory_core.index.gate`. They look for

  - a **polarity** flip: one memory negates what the other affirms about a shared topic word
    ("Doesn't like maths" / "Finds maths fun now", "Gillar inte kaffe" / "Dricker kaffe varje
    morgon nu", "每天跑步" / "不再跑步了"), or opposite words ("optional" / "mandatory");
  - a **value change**: the same attribute with a new value ("Lives in Paris" / "Moved to
    Berlin", "Works at Spotify" / "Now works at Klarna", "Uses SQLite for the side project" /
    "Decided to move the side project to PostgreSQL", "住在杭州" / "搬到了上海"), or a number
    next to the same words ("allows 3 users" / "allows 5 users since the pricing update");
  - a **switch**: explicit change words in the newer memory (switched, changed, instead, used
    to; bytt, istället, brukade; 改成, 换成, 以前) replacing what the older one said.

  - a **cross_language** pair, for review only: two memories in different languages
    (``text.detect_language``) share no word the rules could find a topic by, so "Jag äter inte
    kött" / "I eat meat again" would pass unseen. When the caller vouches for the pair
    (``judge_rules(across_languages=True)``) and exactly one side is negated by its own language's
    negators (an English "never" inside a Swedish memory does not count; a cancelled negator,
    "ogillar inte", does not either), it is flagged at the confidence of its fitted cell
    (``subject.ACROSS_NEGATION``), so :func:`suggest` says ``review`` and no automatic policy ever
    applies it. The caller (:func:`find`, from
    :func:`across_language_pairs`) vouches only on a model whose vectors are comparable across
    languages (``ModelDefaults.across_languages``; never MiniLM) and only when each memory is the
    other's nearest memory of the namespace in the other's language (mutual nearest neighbours):
    otherwise a Swedish negation would be set against every English memory near it. Only pairs that
    pass the cheap negation test pay for the scan of the namespace, on add (in the hold, from the
    loaded index) as in the maintenance scan; a walk past ``ACROSS_WALK`` closer memories leaves
    the pair unflagged. A pair outside a memory's ``SUBJECT_NEIGHBOURS`` nearest
    is not a candidate at all, even when it is the nearest in the other language.

  Paraphrases, refinements ("Likes coffee" / "Likes coffee with oat milk"), compatible facts and
  pairs that are both negative ("Doesn't eat meat" / "Never eats pork") are not conflicts. The
  rules prefer missing a conflict to inventing one (an invented one could overwrite a true
  memory): a negation flip needs explicit evidence, and a changed number needs a change word.
* the **supersede signals** (:func:`supersede_signals`: "quit", "moved to", "no longer", "now prefers",
  "again"; "har slutat", "flyttade", "inte längre", "igen"; "不再", "搬到", "放弃", "又开始"): on a pair
  about one subject, a signal in the newer memory alone is a ``switch`` for the rules path, and one
  that backs a rules verdict raises its confidence (the calibrated table of :mod:`.subject`).
* :func:`judge_llm`: asks the configured OpenAI-compatible model for strict JSON and validates
  it; :func:`judge` uses the LLM when one is configured and working, else the rules.

Resolution policy (:func:`suggest`), following the design's principle "show conflicts; resolve
only on a clear rule":

1. no conflict -> ``keep_both`` (nothing to resolve; also what an operator should do when both
   can be true in context);
2. confidence below :data:`REVIEW_BELOW` -> ``review``;
3. one explicit and one inferred memory -> ``explicit_wins`` (what the user said beats what the
   agent concluded), unless the inferred one is more than :data:`MUCH_NEWER` newer than the
   explicit one: the user may really have changed, so ``review``;
4. both of the same kind, less than :data:`SAME_DAY` apart -> ``review`` (no reliable order);
5. otherwise ``newer_wins`` (a direct contradiction: the newer statement is the current one).

:func:`auto_resolution` says which of the two clear rules (:data:`AUTO_RULES`) an automatic
policy may apply to a verdict; everything else is left to an operator. ``keep_both`` and
``review`` are never applied automatically, and :func:`auto_rule` (what maintenance calls) applies
a rule only from :data:`AUTO_BAR`, the confidence where held-out precision is 0.95 or more.
"""

from __future__ import annotations

from .candidates import (CANDIDATE_BAND, SlotIndex, across_language_pairs, auto_rule, candidate_band,
                         candidate_pairs, find, pairs_to_judge, preview, slot_pairs, topic_confidence)
from .llm_judge import judge, judge_llm
from .records import (AUTO_RULES, CONFLICT_KINDS, MUCH_NEWER, PATHS, REVIEW_BELOW, SAME_DAY, SUGGESTIONS, MemoryView,
                      Verdict)
from .rule_judge import auto_resolution, judge_rules, negated_across_languages, suggest
from .subject import (AUTO_BAR, OFFER_FLOOR, SLOT_NEIGHBOURS, SUBJECT_NEIGHBOURS, SameSubject, language_of, same_subject,
                      slots, supersede_signals)

__all__ = [
    "AUTO_BAR",
    "AUTO_RULES",
    "CANDIDATE_BAND",
    "CONFLICT_KINDS",
    "MUCH_NEWER",
    "OFFER_FLOOR",
    "PATHS",
    "REVIEW_BELOW",
    "SAME_DAY",
    "SLOT_NEIGHBOURS",
    "SlotIndex",
    "SUBJECT_NEIGHBOURS",
    "SameSubject",
    "SUGGESTIONS",
    "MemoryView",
    "Verdict",
    "across_language_pairs",
    "auto_resolution",
    "auto_rule",
    "candidate_band",
    "candidate_pairs",
    "find",
    "judge",
    "judge_llm",
    "judge_rules",
    "language_of",
    "negated_across_languages",
    "pairs_to_judge",
    "preview",
    "same_subject",
    "slot_pairs",
    "slots",
    "suggest",
    "supersede_signals",
    "topic_confidence",
]
