"""Which pairs of a namespace are worth judging (near neighbours in a similarity band, and pairs whose
topics the rules can tell apart), finding and previewing contradictions, and the automatic rule."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Final

import numpy as np

from ...language.llm import LLMClient
from ...language.text import detect_language
from ...embedding.vectors import products
from .llm_judge import judge
from .records import MemoryView, Verdict
from .rule_judge import auto_resolution, negated_across_languages, suggest
from .subject import (ACROSS_NEGATION, AUTO_BAR, CONFIDENCE, OFFER_FLOOR, SLOT_NEIGHBOURS, SUBJECT_NEIGHBOURS,
                      confidence as subject_confidence, language_of, same_subject, signal_verdict,
                      slots as slots_of_text)


# --------------------------------------------------------------------------- from the bank's data

# Candidates share a topic but are not the same statement: contradictions in the demo set sit
# between cosine 0.3 and 0.85 with the bundled model; identical statements sit above 0.985.
CANDIDATE_BAND: Final = (0.3, 0.985)
# How many closer memories the cross-language gate reads the language of before it gives up on a pair
# (left unflagged): in a large namespace in one language, the walk to the nearest memory in another
# could otherwise read most of it on an add.
ACROSS_WALK: Final = 4096


def candidate_band(on_model: Callable[[float], float] = float) -> tuple[float, float]:
    """:data:`CANDIDATE_BAND` on a model's scale (``ModelDefaults.on_model``)."""
    return (on_model(CANDIDATE_BAND[0]), on_model(CANDIDATE_BAND[1]))


def candidate_pairs(ids: np.ndarray, vectors: np.ndarray, rows: Sequence[int] | None = None,
                    band: tuple[float, float] = CANDIDATE_BAND,
                    neighbours: int = SUBJECT_NEIGHBOURS) -> list[tuple[int, int]]:
    """Pairs of memory ids close in meaning: each row's nearest ``neighbours`` (the candidate rule's
    :data:`~.subject.SUBJECT_NEIGHBOURS`) with cosine inside ``band``.

    ``rows`` limits the left side (new memories, for incremental detection); pairs are unordered
    and unique, and ordered by id for determinism.
    """
    lo, hi = band
    left = np.arange(len(ids)) if rows is None else np.asarray(list(rows), dtype=np.int64)
    pairs: set[tuple[int, int]] = set()
    for start in range(0, len(left), 512):  # blocks keep memory bounded on large namespaces
        block = left[start:start + 512]
        sims = products(vectors[block], vectors)
        for i, r in enumerate(block):
            row = sims[i]
            k = min(neighbours + 1, len(row))
            near = np.argpartition(-row, k - 1)[:k]
            for j in near:
                if j != r and lo <= row[j] <= hi:
                    a, b = int(ids[r]), int(ids[j])
                    pairs.add((min(a, b), max(a, b)))
    return sorted(pairs)


# How close in meaning (on MiniLM's scale, where it was measured) a pair in two languages must be
# for the rules' cross_language verdict, and the most it is trusted there: its fitted cell
# (subject.ACROSS_NEGATION). Pairs in one language are trusted by the same-subject rule's evidence.
_TOPIC_CONFIDENCE: Final = {
    "cross_language": ((CANDIDATE_BAND[0], CONFIDENCE[ACROSS_NEGATION]),),
}


def topic_confidence(kind: str, cosine: float) -> float:
    """The most a rule verdict of ``kind`` across two languages can be trusted for two memories this
    close; 0 = not at all."""
    for floor, confidence in _TOPIC_CONFIDENCE.get(kind, ((0.6, 0.7),)):
        if cosine >= floor:
            return confidence
    return 0.0


def slot_pairs(ids: np.ndarray, vectors: np.ndarray, slots: Mapping[int, Collection[str]],
               memory_ids: Collection[int] | None = None, row_of: Mapping[int, int] | None = None,
               band: tuple[float, float] = CANDIDATE_BAND,
               languages: Mapping[int, str] | None = None) -> set[tuple[int, int]]:
    """Pairs of memories that fill one subject slot: each memory (or each of ``memory_ids``) with its
    :data:`~.subject.SLOT_NEIGHBOURS` nearest among the memories of ``slots`` (id -> the slots it
    fills, :func:`~.subject.slots`; only those that fill a slot need be there) that fill one of its
    slots, at any cosine below ``band``'s top (identical statements are not contradictions). Nearness
    in meaning only ranks within a slot: "Lives in Uppsala" and "Moved to Gothenburg last month" are
    far apart (and farther across languages), yet about one subject. Given the memories' ``languages``
    (id -> language), one of those neighbours is the nearest in another language, when the slot has
    one: a memory's own language sits nearer in meaning, and would otherwise fill every place."""
    row_of = {int(m): r for r, m in enumerate(ids.tolist())} if row_of is None else row_of
    groups: dict[str, list[int]] = {}
    for mid, filled in slots.items():
        if mid in row_of and row_of[mid] < len(ids):
            for slot in filled:
                groups.setdefault(slot, []).append(int(mid))
    wanted = None if memory_ids is None else {int(i) for i in memory_ids}
    pairs: set[tuple[int, int]] = set()
    for members in groups.values():
        members.sort()
        left = [k for k, m in enumerate(members) if wanted is None or m in wanted]
        if len(members) < 2 or not left:
            continue
        rows = [row_of[m] for m in members]
        if languages is None or len({languages.get(m) for m in members}) < 2:
            pairs.update(candidate_pairs(np.asarray(members, dtype=np.int64), vectors[rows], left,
                                         (-1.0, band[1]), SLOT_NEIGHBOURS))
        else:
            pairs.update(_neighbours_across(members, vectors[rows], left, band[1], languages))
    return pairs


def _neighbours_across(members: list[int], vectors: np.ndarray, left: list[int], top: float,
                       languages: Mapping[int, str]) -> set[tuple[int, int]]:
    """Each ``left`` member's :data:`~.subject.SLOT_NEIGHBOURS` among ``members`` (their unit ``vectors``)
    below cosine ``top``: the nearest in another language, and the nearest of the rest."""
    langs = [languages.get(m) for m in members]
    pairs: set[tuple[int, int]] = set()
    for k in left:
        sims = vectors @ vectors[k]
        order = [j for j in np.argsort(-sims, kind="stable").tolist() if j != k and sims[j] <= top]
        across = next((j for j in order if langs[j] != langs[k]), None)
        chosen = ([] if across is None else [across]) + [j for j in order if j != across]
        for j in chosen[:SLOT_NEIGHBOURS]:
            pairs.add((min(members[k], members[j]), max(members[k], members[j])))
    return pairs


class SlotIndex:
    """Which memories of one namespace fill each subject slot, so an add draws its slot pairs
    (:func:`slot_pairs`) from a dict lookup, not from reading the namespace's texts. Kept in step with
    a namespace's live ids, and with edits to their texts, by :meth:`sync`."""

    def __init__(self) -> None:
        self.members: dict[str, set[int]] = {}
        self.slots_of: dict[int, frozenset[str]] = {}
        self.languages: dict[int, str] = {}  # of the memories that fill a slot (slot_pairs' languages)
        self.seen_seq = -1  # the newest change sequence of a row :meth:`sync` has read

    def add(self, texts: Mapping[int, str]) -> None:
        """Index memories by their texts (again, for one already indexed)."""
        self.drop(texts)
        for mid, text in texts.items():
            filled = slots_of_text(text)
            self.slots_of[int(mid)] = filled
            if filled:
                self.languages[int(mid)] = language_of(text)
            for slot in filled:
                self.members.setdefault(slot, set()).add(int(mid))

    def drop(self, memory_ids: Iterable[int]) -> None:
        """Forget memories (gone, or about to be read again)."""
        for mid in memory_ids:
            self.languages.pop(int(mid), None)
            for slot in self.slots_of.pop(int(mid), ()):
                self.members[slot].discard(int(mid))

    def sync(self, live: np.ndarray, texts: Callable[[list[int]], Mapping[int, str]],
             new: Iterable[int] = (), seqs: np.ndarray | None = None) -> None:
        """Catch up with the namespace's ``live`` ids (of which ``new`` were just added) and, given
        their rows' change sequences ``seqs``, with the rows changed since the last sync (an edited
        text): index what is not indexed or changed (texts from ``texts``), forget what is gone.
        Costs only the new and changed memories' texts when the counts then agree."""
        fresh = {int(m) for m in new if int(m) not in self.slots_of}
        if seqs is not None and len(seqs):
            fresh.update(int(m) for m in live[seqs > self.seen_seq] if int(m) in self.slots_of)
            self.seen_seq = max(self.seen_seq, int(seqs.max()))
        if fresh:
            self.add(texts(sorted(fresh)))
        if len(self.slots_of) == len(live):
            return
        alive = set(live.tolist())
        self.drop([m for m in self.slots_of if m not in alive])
        missing = [m for m in alive if m not in self.slots_of]
        if missing:
            self.add(texts(missing))

    def around(self, memory_ids: Iterable[int]) -> dict[int, frozenset[str]]:
        """The slots of ``memory_ids`` and of every memory that shares one with them: what
        :func:`slot_pairs` needs for those memories."""
        out: dict[int, frozenset[str]] = {}
        for mid in memory_ids:
            for slot in self.slots_of.get(int(mid), ()):
                for other in self.members.get(slot, ()):
                    out[other] = self.slots_of[other]
        return out


def pairs_to_judge(ids: np.ndarray, vectors: np.ndarray, memory_ids: Collection[int] | None = None,
                   band: tuple[float, float] = CANDIDATE_BAND,
                   row_of: Mapping[int, int] | None = None,
                   slots: Mapping[int, Collection[str]] | None = None,
                   languages: Mapping[int, str] | None = None) -> list[tuple[int, int]]:
    """The candidate pairs detection judges among a namespace's live memories (``ids`` and their unit
    ``vectors``, as ``MemoryBank.live_vectors`` gives them): every pair on one topic, or with
    ``memory_ids`` only pairs involving those memories (what runs when memories are added); and, given
    the memories' subject ``slots`` (id -> slots: :func:`~.subject.slots`, or a :class:`SlotIndex`),
    the pairs that fill one slot (:func:`slot_pairs`; given their ``languages``, one in another language).
    ``row_of`` (id -> row of ``ids``, a loaded index's own map) spares a scan of ``ids`` to find
    those memories: milliseconds per add at a million memories."""
    if len(ids) < 2:
        return []
    rows = None
    if memory_ids is not None:
        wanted = {int(i) for i in memory_ids}
        if row_of is None:
            rows = [r for r, mid in enumerate(ids.tolist()) if mid in wanted]
        else:
            rows = sorted(r for m in wanted if (r := row_of.get(m)) is not None and r < len(ids))
        if not rows:
            return []
    pairs = candidate_pairs(ids, vectors, rows, band)
    if slots:
        pairs = sorted(set(pairs) | slot_pairs(ids, vectors, slots, memory_ids, row_of, band, languages))
    return pairs


def across_language_pairs(pairs: Iterable[tuple[int, int]], ids: np.ndarray, vectors: np.ndarray,
                          texts: Callable[[list[int]], Mapping[int, str]],
                          row_of: Mapping[int, int] | None = None) -> set[tuple[int, int]]:
    """Of ``pairs``, those the rules may judge across languages (``judge_rules(across_languages=True)``):
    two memories in different languages, exactly one negated (:func:`negated_across_languages`), each
    the other's nearest memory in its language among the namespace's ``ids`` (with their unit
    ``vectors``; ``row_of``: id -> row, when a loaded index has it). So a Swedish negation is set
    beside the one English memory closest to it, not beside every English memory on its topic.
    ``texts`` gives the texts of memory ids; only the pairs that pass the negation test (few) cost
    a scan of the namespace; a pair whose check would read the language of more than
    :data:`ACROSS_WALK` closer memories is left out. Only for a model whose vectors are comparable
    across languages (``ModelDefaults.across_languages``): the caller checks that."""
    row_of = {int(m): r for r, m in enumerate(ids.tolist())} if row_of is None else row_of
    languages: dict[int, str] = {}

    def language(mids: list[int]) -> list[str]:
        missing = [m for m in mids if m not in languages]
        if missing:
            languages.update({m: detect_language(t) for m, t in texts(missing).items()})
        return [languages.get(m, "") for m in mids]

    def nearest_in(row: int, other: int, wanted: str) -> bool:
        # Whether no memory of language ``wanted`` is closer to ``row`` than ``other`` is.
        sims = products(vectors[[row]], vectors)[0]
        closer = np.flatnonzero(sims > sims[other])
        if len(closer) > ACROSS_WALK + 1:
            return False
        closer = closer[np.argsort(-sims[closer], kind="stable")]
        for start in range(0, len(closer), 64):  # nearest first: most walks end in the first block
            block = [int(ids[r]) for r in closer[start:start + 64] if r != row]
            if wanted in language(block):
                return False
        return True

    found = set()
    for a, b in pairs:
        text = texts([a, b])
        if a not in text or b not in text or negated_across_languages(text[a], text[b]) is None:
            continue
        lang_a, lang_b = language([a, b])
        ra, rb = row_of[a], row_of[b]
        if nearest_in(ra, rb, lang_b) and nearest_in(rb, ra, lang_a):
            found.add((min(a, b), max(a, b)))
    return found


def find(pairs: Sequence[tuple[int, int]], ids: np.ndarray, vectors: np.ndarray, memories: Mapping[int, Any],
         known: Collection[tuple[int, int]], *, memory_ids: Collection[int] | None = None,
         client: LLMClient | None = None, max_per_memory: int = 3,
         to_reference: Callable[[float], float] = float,
         across: Collection[tuple[int, int]] = ()) -> list[dict[str, Any]]:
    """Judge the candidate ``pairs`` (:func:`pairs_to_judge` of ``ids`` and ``vectors``) and return the
    contradictions worth recording, as rows for :meth:`MemoryBank.record_conflicts`. Writes nothing.

    :func:`judge` decides, only on pairs about one subject (:func:`~.subject.same_subject`; a pair in
    two languages when ``across`` vouches for it): the LLM when ``client`` works, else the rules and
    the supersede signals, whose confidence is the calibrated table of :func:`~.subject.confidence`
    (below :data:`~.subject.OFFER_FLOOR` a pair is not recorded). ``memories`` holds at least the
    memories of ``pairs``; pairs in ``known`` (older id, newer id), recorded before whatever became of
    them, are not flagged again. With ``memory_ids`` (the new memories), each is flagged against at
    most ``max_per_memory`` stored ones, the clearest first. ``to_reference`` puts the model's cosine
    on the scale :func:`topic_confidence` (pairs across languages) was measured on (``ModelDefaults.to_reference``).
    ``across`` (:func:`across_language_pairs`, as (smaller id, larger id)): the pairs the rules may
    also judge across languages.
    """
    row_of = {int(m): r for r, m in enumerate(ids.tolist())}
    wanted = set() if memory_ids is None else {int(i) for i in memory_ids}
    judged = []
    for a_id, b_id in pairs:
        a, b = sorted((memories[a_id], memories[b_id]), key=lambda m: (m.created_at, m.id))
        if (a.id, b.id) in known:
            continue
        vouched = (min(a.id, b.id), max(a.id, b.id)) in across
        # The candidate rule: one subject (a shared slot or content word, one category); a pair in
        # two languages shares no word, and is judged only when the cross-language gate vouches for it.
        shared = same_subject(a.text, b.text, getattr(a, "category", None), getattr(b, "category", None))
        if shared is None and not vouched:
            continue
        view_a, view_b = MemoryView.from_memory(a), MemoryView.from_memory(b)
        verdict = judge(view_a, view_b, client, across_languages=vouched)
        cos = float(vectors[row_of[a.id]] @ vectors[row_of[b.id]])
        confidence = verdict.confidence
        # Across languages, a pair that shares a subject slot and carries a supersede signal is read
        # by the signal's evidence, as in one language; the rules' cross_language flag is only a
        # negation on one side, no evidence about the subject (the pair's fallback, for review).
        crossed = verdict.kind == "cross_language"
        if verdict.path == "rules" and shared is not None and not (crossed and signal_verdict(a.text, b.text, shared) is None):
            confidence = subject_confidence(verdict.conflict and not crossed, a.text, b.text, shared)
            if confidence < OFFER_FLOOR:
                continue
            if crossed:
                verdict = Verdict(conflict=False, kind="none", confidence=0.0, suggestion="keep_both",
                                  evidence="", path="rules")
            if not verdict.conflict:  # a supersede signal about the shared subject: the newer replaced it
                signal = signal_verdict(a.text, b.text, shared)
                about = ", ".join(sorted(shared.slots | shared.words))
                verdict = Verdict(conflict=True, kind="switch", confidence=confidence, suggestion="review",
                                  evidence=f'switch: supersede signal "{signal}" in the newer memory about {about}',
                                  path="rules")
        elif verdict.path == "rules":  # across languages: only as close in meaning as the gate asks
            confidence = min(confidence, topic_confidence(verdict.kind, to_reference(cos)))
            if confidence == 0.0:
                continue
        if not verdict.conflict:
            continue
        suggestion = suggest(view_a, view_b, verdict.kind, confidence) if verdict.path == "rules" \
            else verdict.suggestion
        judged.append(((confidence, cos), dict(a_id=a.id, b_id=b.id, kind=verdict.kind, evidence=verdict.evidence,
                                               confidence=confidence, suggestion=suggestion, path=verdict.path)))
    if memory_ids is not None:
        # A new memory is flagged against the few stored ones it most clearly contradicts; a flood
        # of flags on one write helps no operator (and templated logs would cause one).
        judged.sort(key=lambda j: j[0], reverse=True)
        per_memory: dict[int, int] = {}
        kept = []
        for key, row in judged:
            new = row["a_id"] if row["a_id"] in wanted else row["b_id"]
            if per_memory.get(new, 0) < max_per_memory:
                per_memory[new] = per_memory.get(new, 0) + 1
                kept.append((key, row))
        judged = kept
    return [row for _, row in judged]


def preview(found: Iterable[Mapping[str, Any]], memories: Mapping[int, Any], namespace: str) -> list[Any]:
    """The conflicts :func:`find` found, as a dry run shows them: unrecorded (id 0), open."""
    from ...models import Conflict

    now = datetime.now(timezone.utc)
    return [Conflict(id=0, namespace=namespace, a=memories[row["a_id"]], b=memories[row["b_id"]],
                     kind=row["kind"], evidence=row["evidence"], confidence=row["confidence"],
                     suggestion=row["suggestion"], path=row["path"], status="open", resolution=None,
                     detected_at=now) for row in found]


def auto_rule(conflict: Any, min_confidence: float = AUTO_BAR) -> str | None:
    """The rule an automatic policy applies to a recorded conflict, or None to leave it to an
    operator: only the two clear rules, only at :data:`~.subject.AUTO_BAR` (the bar where held-out
    precision is 0.95 or more) or the plan's own bar, never on a pinned memory. Maintenance calls this."""
    if conflict.status != "open" or conflict.a.pinned or conflict.b.pinned:
        return None
    if conflict.a.status != "active" or conflict.b.status != "active":
        return None
    verdict = Verdict(conflict=True, kind=conflict.kind or "switch", evidence=conflict.evidence or "",
                      confidence=float(conflict.confidence), suggestion=conflict.suggestion or "review",
                      path=conflict.path or "rules")
    return auto_resolution(verdict, MemoryView.from_memory(conflict.a), MemoryView.from_memory(conflict.b),
                           min_confidence=min_confidence)
