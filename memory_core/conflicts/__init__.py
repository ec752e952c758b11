"""Contradiction detection between two memories: the decision part, as pure functions.

The design notes (why it works this way) are in ARCHITECTURE.md, "Design notes: conflicts/".
"""

from __future__ import annotations

from .candidates import (CANDIDATE_BAND, NEIGHBOURS, across_language_pairs, auto_rule, candidate_band,
                         candidate_pairs, find, pairs_to_judge, preview, topic_confidence)
from .llm_judge import judge, judge_llm
from .records import (AUTO_RULES, CONFLICT_KINDS, MUCH_NEWER, PATHS, REVIEW_BELOW, SAME_DAY, SUGGESTIONS, MemoryView,
                      Verdict)
from .rule_judge import auto_resolution, judge_rules, negated_across_languages, suggest

__all__ = [
    "AUTO_RULES",
    "CANDIDATE_BAND",
    "CONFLICT_KINDS",
    "MUCH_NEWER",
    "NEIGHBOURS",
    "PATHS",
    "REVIEW_BELOW",
    "SAME_DAY",
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
    "negated_across_languages",
    "pairs_to_judge",
    "preview",
    "suggest",
    "topic_confidence",
]
