"""What the contradiction engines give and take: the memories they compare (:class:`MemoryView`), a
judgement (:class:`Verdict`), the kinds, suggestions and resolution paths, and the timing constants
the clear rules use."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Final

from ...errors import ValidationError
from ...models import KINDS


# --------------------------------------------------------------------------- #
# Public records
# --------------------------------------------------------------------------- #

CONFLICT_KINDS: Final = ("polarity", "value_change", "switch", "cross_language", "llm", "none")
"""What a verdict calls a contradiction (or "none"); a memory's own kind is one of models.KINDS."""
SUGGESTIONS: Final = ("newer_wins", "explicit_wins", "keep_both", "review")
PATHS: Final = ("rules", "llm")
AUTO_RULES: Final = ("newer_wins", "explicit_wins")
"""The two clear rules an automatic policy may apply; keep_both and review need an operator."""

REVIEW_BELOW: Final = 0.65
"""A conflict verdict less sure than this is suggested for review, whatever the dates and kinds."""
MUCH_NEWER: Final = timedelta(days=90)
"""An inferred memory this much newer than the explicit one it contradicts is not overruled by it
automatically: 90 days is where the design's warm tier ends, long enough for the user to change."""
SAME_DAY: Final = timedelta(days=1)
"""Memories of the same kind less than this apart have no trustworthy order (same conversation,
import batches, clock skew), so "newer wins" is not a clear rule for them."""


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _utc(moment: datetime) -> datetime:
    # Naive datetimes are taken as UTC (the store keeps UTC) so naive and aware ones compare.
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)


@dataclass(frozen=True)
class MemoryView:
    """What a judge needs to know about one memory.

    ``id``: the memory's id; ``text``: its statement; ``created_at``: when it was stored (naive
    datetimes count as UTC); ``kind``: ``"explicit"`` (the user said it) or ``"inferred"`` (the
    agent concluded it); ``importance``: 0..1. Invalid values raise ValidationError.
    """

    id: int
    text: str
    created_at: datetime
    kind: str
    importance: float = 0.5

    def __post_init__(self) -> None:
        if not isinstance(self.id, int) or isinstance(self.id, bool):
            raise ValidationError(f"MemoryView.id must be an int, got {type(self.id).__name__}")
        if not isinstance(self.text, str) or not self.text.strip():
            raise ValidationError(f"MemoryView.text must be a non-empty string (memory {self.id})")
        if not isinstance(self.created_at, datetime):
            raise ValidationError(
                f"MemoryView.created_at must be a datetime, got {type(self.created_at).__name__} (memory {self.id})"
            )
        if self.kind not in KINDS:
            raise ValidationError(
                f"MemoryView.kind must be one of {', '.join(KINDS)}, got {self.kind!r} (memory {self.id})"
            )
        if not _is_number(self.importance) or not math.isfinite(self.importance) or not 0 <= self.importance <= 1:
            raise ValidationError(f"MemoryView.importance must be a number in [0, 1], got {self.importance!r}")

    @classmethod
    def from_memory(cls, memory: Any) -> MemoryView:
        """Build a view from a :class:`memory_core.models.Memory` (or anything with the same fields).

        Raises ValidationError for a hard-deleted memory (its text is gone, there is nothing to judge).
        """
        if getattr(memory, "text", None) is None:
            raise ValidationError(f"memory {getattr(memory, 'id', '?')} has no text (hard-deleted); it cannot be judged")
        return cls(
            id=memory.id, text=memory.text, created_at=memory.created_at, kind=memory.kind,
            importance=float(memory.importance),
        )


@dataclass(frozen=True)
class Verdict:
    """A judge's answer for one pair of memories.

    ``conflict``: whether they contradict. ``kind``: ``"polarity"`` (a negation flips),
    ``"value_change"`` (same attribute, new value), ``"switch"`` (explicit change words),
    ``"cross_language"`` (two languages, exactly one negated: for review), ``"llm"`` (the model
    found a conflict of another kind) or ``"none"`` (exactly when there is no conflict).
    ``evidence``: what disagrees, for a human. ``confidence``: 0..1, how sure the judge is of
    ``conflict``. ``suggestion``: one of :data:`SUGGESTIONS` (see :func:`suggest`).
    ``path``: ``"rules"`` or ``"llm"``, whichever decided.
    """

    conflict: bool
    kind: str
    evidence: str
    confidence: float
    suggestion: str
    path: str

    def __post_init__(self) -> None:
        # Verdicts are shown to operators and may drive automatic resolution: refuse garbage early.
        if not isinstance(self.conflict, bool):
            raise ValidationError(f"Verdict.conflict must be a bool, got {type(self.conflict).__name__}")
        if self.kind not in CONFLICT_KINDS:
            raise ValidationError(f"Verdict.kind must be one of {', '.join(CONFLICT_KINDS)}, got {self.kind!r}")
        if (self.kind == "none") == self.conflict:
            raise ValidationError("Verdict.kind must be 'none' exactly when conflict is False")
        if not isinstance(self.evidence, str):
            raise ValidationError(f"Verdict.evidence must be a str, got {type(self.evidence).__name__}")
        if not _is_number(self.confidence) or not math.isfinite(self.confidence) or not 0 <= self.confidence <= 1:
            raise ValidationError(f"Verdict.confidence must be a number in [0, 1], got {self.confidence!r}")
        if self.suggestion not in SUGGESTIONS:
            raise ValidationError(f"Verdict.suggestion must be one of {', '.join(SUGGESTIONS)}, got {self.suggestion!r}")
        if self.path not in PATHS:
            raise ValidationError(f"Verdict.path must be 'rules' or 'llm', got {self.path!r}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with keys conflict, kind, evidence, confidence, suggestion, path."""
        return asdict(self)
