"""The rule judge's tables (``language.rules.conflict_patterns``) as compiled regular expressions,
built once on the first judgement, so importing the judge costs no regex compilation.

May import: ``language.rules`` only.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ...language.rules.conflict_patterns import (ANTONYMS, CHANGE_CUES, CLAUSE_BREAKS, DISPREFERRED, IMPLIED_NEGATIONS,
                                                 NEGATED_POSITIVES, NEGATIVE_WORDS, NEGATORS, NEUTRAL_CUES, PAST_CUES,
                                                 POSITIVE_CUES, REMEDIES, TEMPLATES, WEAK_CHANGE_CUES)


def compile_cues(table: Mapping[str, list[tuple[str, str]]]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    # A pattern matching "" would fire on every memory; fail on compiling instead of misjudging silently.
    rows = []
    for _language, entries in table.items():
        for label, pattern in entries:
            regex = re.compile(pattern)
            if regex.search("") is not None and not pattern.startswith("^"):
                raise ValueError(f"cue {label!r}: pattern matches the empty string")
            rows.append((label, regex))
    return tuple(rows)


@dataclass(frozen=True)
class Rules:
    """The rule tables of ``conflict_patterns``, compiled: built on first use (:func:`rules`), so
    importing the judge costs no regex compilation."""

    # Negators per language: the cross-language rule reads each memory by its own language's table.
    negators_by_language: dict[str, tuple[tuple[str, re.Pattern[str]], ...]]
    negated_positives: tuple[tuple[str, re.Pattern[str]], ...]
    positive: tuple[tuple[str, re.Pattern[str]], ...]
    neutral: tuple[tuple[str, re.Pattern[str]], ...]
    change: tuple[tuple[str, re.Pattern[str]], ...]
    weak: tuple[tuple[str, re.Pattern[str]], ...]
    past: tuple[tuple[str, re.Pattern[str]], ...]
    implied: tuple[tuple[str, re.Pattern[str], frozenset[str]], ...]
    antonyms: tuple[tuple[str, re.Pattern[str], str, re.Pattern[str]], ...]
    templates: tuple[tuple[str, bool, str, re.Pattern[str]], ...]
    # What makes a statement negative, in the order cues are taken: negators (language by language),
    # negative words, remedies.
    polar_tables: tuple[tuple[str, str, tuple[tuple[str, re.Pattern[str]], ...]], ...]
    clause_break: re.Pattern[str]
    dispreferred: re.Pattern[str]


@functools.cache
def rules() -> Rules:
    """The compiled rule tables, compiled once, on the first judgement."""
    negators = {language: compile_cues({language: rows}) for language, rows in NEGATORS.items()}
    return Rules(
        negators_by_language=negators,
        negated_positives=compile_cues(NEGATED_POSITIVES),
        positive=compile_cues(POSITIVE_CUES),
        neutral=compile_cues(NEUTRAL_CUES),
        change=compile_cues(CHANGE_CUES),
        weak=compile_cues(WEAK_CHANGE_CUES),
        past=compile_cues(PAST_CUES),
        implied=tuple((label, re.compile(pattern), words)
                      for rows in IMPLIED_NEGATIONS.values() for label, pattern, words in rows),
        antonyms=tuple((label_a, re.compile(pattern_a), label_b, re.compile(pattern_b))
                       for rows in ANTONYMS.values() for label_a, pattern_a, label_b, pattern_b in rows),
        templates=tuple((attr, single, role, re.compile(pattern))
                        for rows in TEMPLATES.values() for attr, single, role, pattern in rows),
        polar_tables=(*(("neg", language, table) for language, table in negators.items()),
                      ("val", "", compile_cues(NEGATIVE_WORDS)), ("fix", "", compile_cues(REMEDIES))),
        clause_break=re.compile(CLAUSE_BREAKS),
        dispreferred=re.compile(DISPREFERRED),
    )
