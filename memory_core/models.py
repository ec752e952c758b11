"""The records memory_core hands out (Memory, Hit, Event, ImportReport), input validation, and
rendering recalled memories for a prompt.

Records a server sends have a ``to_dict`` (JSON-ready, dates as ISO 8601) and a ``from_dict`` that
reads it back (what :class:`memory_core.client.RemoteBank` does with a response); the pair lives
here, one next to the other.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, field, fields
from datetime import date, datetime, timezone
from typing import Any, Iterable

from .errors import ValidationError

KINDS = ("explicit", "inferred")
# Whether a memory lasts or its time passes (memory_core.language.durability reads it from the text).
DURABILITIES = ("durable", "transient")
DEFAULT_IMPORTANCE = 0.5  # what a memory written without one gets (REST, MCP, the library)
CATEGORIES = ("preference", "goal", "decision", "difficulty", "fact", "profile", "other")
STATUSES = ("active", "archived", "merged", "superseded", "deleted")
PII_MODES = ("redact", "refuse", "allow")  # what ingest does with personal identifiers in a conversation
MAINTENANCE_STEPS = ("cleanup", "merge")  # the steps of a maintenance run (memory_core.curation.maintenance)
INDEX_MODES = ("exact", "ivf")  # how recall searches a large namespace: exact, or the approximate IVF index
MAX_ID = 2**63 - 1  # ids are 64-bit integers in the store
MAX_TEXT = 1_000_000  # characters; memories are meant to be short, but nothing valid is refused


def _shallow(record: Any) -> dict[str, Any]:
    """A dataclass's fields as a dict, values as they are (what asdict gives for plain values)."""
    return {f.name: getattr(record, f.name) for f in fields(record)}


@dataclass(frozen=True)
class Memory:
    """One stored memory. ``text`` is None once the memory has been hard-deleted."""

    id: int
    text: str | None
    namespace: str
    kind: str
    category: str
    importance: float
    created_at: datetime
    updated_at: datetime
    last_accessed_at: datetime | None
    access_count: int
    status: str
    pinned: bool = False
    source: str | None = None
    content_hash: str = ""
    embedding_model: str | None = None
    superseded_by: int | None = None
    merged_into: int | None = None
    # Text that situates the memory for retrieval (e.g. the conversation turns around it): matched
    # lexically alongside ``text`` by recall, never shown as the memory itself.
    context: str | None = None
    # How many recalls' answers used this memory (feedback decided it), where ``access_count``
    # counts every recall that returned it; ScoringParams.frequency_from picks which one ranks.
    use_count: int = 0
    # Durable (who someone is, what they prefer, want, find hard or decided) or transient (an
    # event, a day's or a week's state, a log): maintenance expires only transient memories.
    durability: str = "durable"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields, dates as ISO 8601 strings."""
        # every field is a plain value: asdict's deep copy is slow (see BENCHMARKS.md, "Figures behind the code")
        out = _shallow(self)
        for key in ("created_at", "updated_at", "last_accessed_at"):
            if out[key] is not None:
                out[key] = out[key].isoformat()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Memory":
        """The memory :meth:`to_dict` gave (fields it does not know, from a newer server, are left out)."""
        return cls(**_dated(_known(cls, data), "created_at", "updated_at", "last_accessed_at"))


@dataclass(frozen=True)
class Hit:
    """A recalled memory with the score that let it through and the parts of that score."""

    memory: Memory
    score: float
    components: dict[str, float]
    rank: int = 0
    # The id of a memory this one contradicts, when an operator chose to keep both: recall then
    # returns the pair together and format_for_prompt states the contradiction with both dates.
    conflict_with: int | None = None
    # True when the bank's approximate index mode found this hit: the top k may then miss a memory
    # exact scoring would have returned (see MemoryBank.set_index_mode).
    approximate: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "score": self.score, "components": dict(self.components),
                "memory": self.memory.to_dict(), "conflict_with": self.conflict_with,
                "approximate": self.approximate}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Hit":
        out = _known(cls, data)
        return cls(**{**out, "memory": Memory.from_dict(data["memory"]), "components": dict(data["components"])})


@dataclass(frozen=True)
class Event:
    """One entry of a bank's history: who changed what, when, from what to what."""

    id: int
    at: datetime
    actor: str
    action: str
    memory_id: int | None
    before: dict | None
    after: dict | None
    note: str | None = None
    group_id: int | None = None  # events of one operation share it; undo_group reverses them all
    undone_by: int | None = None  # the group of the undo that reversed this event

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["at"] = self.at.isoformat()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Event":
        return cls(**_dated(_known(cls, data), "at"))


@dataclass(frozen=True)
class Conflict:
    """Two live memories of one namespace that disagree, and what became of it."""

    id: int
    namespace: str
    a: Memory  # the older of the two
    b: Memory
    kind: str
    evidence: str
    confidence: float
    suggestion: str
    path: str  # "rules" or "llm": what decided it is a conflict
    status: str  # open, resolved, acknowledged, dismissed
    resolution: str | None
    detected_at: datetime
    resolved_at: datetime | None = None
    group_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out = _shallow(self)
        out["a"], out["b"] = self.a.to_dict(), self.b.to_dict()
        for key in ("detected_at", "resolved_at"):
            if out[key] is not None:
                out[key] = out[key].isoformat()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Conflict":
        out = _dated(_known(cls, data), "detected_at", "resolved_at")
        return cls(**{**out, "a": Memory.from_dict(data["a"]), "b": Memory.from_dict(data["b"])})


@dataclass(frozen=True)
class MergeRecord:
    """One merge: the new memory, its members, and whether it was undone."""

    id: int
    namespace: str
    merged_id: int
    member_ids: tuple[int, ...]
    path: str | None
    detail: str | None
    group_id: int
    created_at: datetime
    undone_at: datetime | None = None


@dataclass(frozen=True)
class Profile:
    """A namespace's core memories, grouped for a prompt: who they are, what they want, what they like."""

    namespace: str
    memories: list[Memory]

    SECTIONS = (("profile", "About"), ("goal", "Goals"), ("preference", "Preferences"))

    def sections(self) -> dict[str, list[Memory]]:
        return {title: [m for m in self.memories if m.category == cat] for cat, title in self.SECTIONS}

    def text(self) -> str:
        """Markdown-free lines ready for a system prompt; empty when nothing is known."""
        lines = []
        for title, ms in self.sections().items():
            if ms:
                lines.append(f"{title}: " + "; ".join(m.text for m in ms))
        return "\n".join(lines)


@dataclass(frozen=True)
class LabeledQuery:
    """A query an operator judged: which memories it should bring back, and which not.

    No ``relevant`` id means recall should come back empty for it. Memories not named either
    way count as not relevant when scoring (labels name what should come back). ``as_of`` is
    the moment the query is asked (None: whenever it is evaluated).
    """

    namespace: str
    query: str
    relevant: tuple[int, ...] = ()
    irrelevant: tuple[int, ...] = ()
    as_of: datetime | None = None
    set_name: str = "default"

    def to_dict(self) -> dict[str, Any]:
        """The JSONL form: {"namespace", "query", "relevant", "irrelevant"[, "as_of"][, "set"]}."""
        out: dict[str, Any] = {"namespace": self.namespace, "query": self.query,
                               "relevant": list(self.relevant), "irrelevant": list(self.irrelevant)}
        if self.as_of is not None:
            out["as_of"] = self.as_of.isoformat().replace("+00:00", "Z")
        out["set"] = self.set_name
        return out


CONFLICT_STATUSES = ("open", "resolved", "acknowledged", "dismissed")
RESOLUTIONS = ("newer_wins", "explicit_wins", "keep_both", "edit", "dismiss")


@dataclass(frozen=True)
class HitUsage:
    """Whether the answer used one returned memory, and what decided it (see :mod:`memory_core.evaluation.usage`).

    ``decided_by`` is ``"given"``, ``"citation"`` or ``"similarity"``; ``similarity`` is the best
    cosine of an answer sentence with the memory (similarity path only; None when the memory's
    vector is gone, e.g. hard-deleted).
    """

    memory_id: int
    used: bool
    decided_by: str
    similarity: float | None = None

    def to_dict(self) -> dict:
        return {"memory_id": self.memory_id, "used": self.used, "decided_by": self.decided_by,
                "similarity": self.similarity}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HitUsage":
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class Feedback:
    """What an agent reported after a recall, and what was decided for each returned memory.

    ``hits`` holds one :class:`HitUsage` per memory the recall returned (in
    rank order; empty when only ``helpful`` was given or nothing was returned). ``replaced`` is
    true when this feedback replaced earlier feedback for the same retrieval.
    """

    retrieval_id: int
    namespace: str
    given_at: datetime
    answer: str | None
    helpful: bool | None
    hits: tuple = ()
    replaced: bool = False

    @property
    def used_ids(self) -> list[int]:
        """Ids of the memories the answer used."""
        return [h.memory_id for h in self.hits if h.used]

    @property
    def decided_by(self) -> str | None:
        """The path that decided usage: given, citation or similarity (None without hits)."""
        return self.hits[0].decided_by if self.hits else None

    def to_dict(self) -> dict[str, Any]:
        return {"retrieval_id": self.retrieval_id, "namespace": self.namespace, "given_at": self.given_at.isoformat(),
                "answer": self.answer, "helpful": self.helpful, "replaced": self.replaced,
                "hits": [h.to_dict() for h in self.hits]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Feedback":
        out = _dated(_known(cls, data), "given_at")
        return cls(**{**out, "hits": tuple(HitUsage.from_dict(h) for h in data.get("hits", ()))})


@dataclass
class ImportReport:
    """What an import did. ``errors`` lists ``(line_number, message)``, 1-based."""

    added: int = 0
    skipped_existing: int = 0
    errors: list[tuple[int, str]] = field(default_factory=list)
    ids: list[int] = field(default_factory=list)


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """The items of ``data`` that are fields of the dataclass ``cls`` (a newer sender may add more)."""
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def _dated(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    """``data`` with the ISO 8601 strings under ``keys`` read back into datetimes."""
    for key in keys:
        if isinstance(data.get(key), str):
            data[key] = datetime.fromisoformat(data[key])
    return data


# -- validation ------------------------------------------------------------------------------------


def check_id(value: Any, what: str = "a memory id") -> int:
    """A whole-number id (a memory's, an event's, a conflict's...), as int."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValidationError(f"{what} is a whole number, got {value!r}")
    if not -MAX_ID <= int(value) <= MAX_ID:  # the store's ids are 64-bit: nothing beyond can exist
        raise ValidationError(f"{what} is out of range (at most {MAX_ID}), got {value!r}")
    return int(value)


def check_unicode(value: str, what: str) -> str:
    """``value`` if it is valid Unicode text; a lone surrogate (half of a UTF-16 pair, e.g. from a
    JSON escape ``\\ud800`` without its partner) cannot be stored, hashed or sent as UTF-8."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = value[exc.start]
        raise ValidationError(
            f"{what} contains a lone surrogate (U+{ord(bad):04X}) at character {exc.start + 1}, which is not "
            "Unicode text: half of a UTF-16 pair (a JSON escape such as \\ud800 without its partner) or bytes "
            "that were not UTF-8. Send UTF-8 text") from None
    return value


def check_text(text: Any, what: str = "text") -> str:
    if not isinstance(text, str):
        raise ValidationError(f"{what} must be a string, got {type(text).__name__}")
    check_unicode(text, what)
    if not text.strip():
        hint = "write the memory as a short statement" if what == "text" else f"pass a non-empty {what}"
        raise ValidationError(f"{what} must not be empty: {hint}")
    if len(text) > MAX_TEXT:
        raise ValidationError(f"{what} is {len(text):,} characters; the limit is {MAX_TEXT:,}")
    if "\x00" in text:
        raise ValidationError(f"{what} contains a NUL character; remove it")
    return text


def check_reason(reason: Any) -> str | None:
    """The optional note of a change (why a memory was forgotten): None or text."""
    if reason is None:
        return None
    if not isinstance(reason, str):
        raise ValidationError(f"reason must be a string or None, got {type(reason).__name__}")
    if "\x00" in reason:
        raise ValidationError("reason contains a NUL character; remove it")
    return check_unicode(reason, "reason")


def check_namespace(namespace: Any) -> str:
    if not isinstance(namespace, str) or not namespace.strip():
        raise ValidationError("namespace must be a non-empty string (an agent or user name)")
    if len(namespace) > 256 or "\x00" in namespace:
        raise ValidationError("namespace must be at most 256 characters, without NUL")
    return check_unicode(namespace, "namespace")


def check_context(context: Any) -> str | None:
    """A memory's optional retrieval context: None, or text (blank text counts as none)."""
    if context is None:
        return None
    if not isinstance(context, str):
        raise ValidationError(f"context must be a string or null, got {type(context).__name__}")
    if not context.strip():
        return None
    if len(context) > MAX_TEXT:
        raise ValidationError(f"context is {len(context):,} characters; the limit is {MAX_TEXT:,}")
    if "\x00" in context:
        raise ValidationError("context contains a NUL character; remove it")
    return check_unicode(context, "context")


def check_importance(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(f"importance must be a number between 0 and 1, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ValidationError(f"importance must be between 0 and 1, got {value}")
    return value


def check_choice(value: Any, choices: Iterable[str], what: str) -> str:
    choices = tuple(choices)
    if value not in choices:
        raise ValidationError(f"{what} must be one of {', '.join(choices)}; got {value!r}")
    return value


def parse_time(value: Any, what: str = "time") -> datetime | None:
    """An aware UTC datetime from a datetime, a date, an ISO 8601 string or POSIX seconds.

    Naive values are taken as UTC. None stays None (the caller decides what "now" is).
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValidationError(f"{what} must be a datetime or an ISO 8601 string, got {value!r}")
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith("Z") or text.endswith("z"):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            raise ValidationError(
                f"{what} {value!r} is not an ISO 8601 date or time (e.g. 2026-03-12 or 2026-03-12T08:30:00Z)"
            ) from None
    elif isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValidationError(f"{what} must be finite, got {value}")
        try:
            dt = datetime.fromtimestamp(value, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            raise ValidationError(f"{what} {value} is out of range") from None
    else:
        raise ValidationError(f"{what} must be a datetime or an ISO 8601 string, got {type(value).__name__}")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    try:
        dt = dt.astimezone(timezone.utc)
    except (OverflowError, ValueError):  # year 1 or 9999 with an offset falls off the calendar
        raise ValidationError(f"{what} {value!r} is outside the years 1900-2200") from None
    if not 1900 <= dt.year <= 2200:
        raise ValidationError(f"{what} {dt.isoformat()} is outside the years 1900-2200")
    return dt


# -- prompt rendering ------------------------------------------------------------------------------


def humanize_age(then: datetime, now: datetime) -> str:
    """'today', 'yesterday', '3 days ago', '2 weeks ago', '5 months ago', '1 year ago'."""
    days = (now - then).total_seconds() / 86400.0
    if days < 0:
        return "in the future"
    if days < 1:
        return "today"
    if days < 2:
        return "yesterday"
    if days < 14:
        return f"{int(days)} days ago"
    if days < 60:
        return f"{int(days // 7)} weeks ago"
    if days < 365:
        return f"{int(days // 30)} months ago"
    years = int(days // 365)
    return "1 year ago" if years == 1 else f"{years} years ago"


def format_for_prompt(hits: Iterable[Hit], now: Any = None, header: str = "Relevant memories:",
                      cite: bool = False) -> str:
    """Render recalled memories for a prompt, one line each, with age and relevance.

    ``"- 3 days ago (12 Mar 2026), relevance 0.72: Prefers vegetarian food"``. Returns an empty
    string when there are no hits, so nothing is added to a prompt that needs no memory.
    ``cite=True`` starts each line with the memory's marker ``[m:ID]``, so a model asked to cite
    what it uses lets ``bank.feedback`` decide usage from citations instead of similarity.
    """
    hits = list(hits)
    if not hits:
        return ""
    now_dt = parse_time(now, "now") or datetime.now(timezone.utc)
    by_id = {h.memory.id: h for h in hits}
    lines = [header]
    done: set[int] = set()
    for hit in hits:
        m = hit.memory
        if m.id in done:
            continue
        other = by_id.get(hit.conflict_with) if hit.conflict_with is not None else None
        if other is not None:
            # A visible contradiction beats a silent pick: say both, oldest first, with dates.
            first, second = sorted((hit, other), key=lambda h: (h.memory.created_at, h.memory.id))
            done.update((first.memory.id, second.memory.id))
            lines.append(
                f"- {f'[m:{first.memory.id}] [m:{second.memory.id}] ' if cite else ''}Contradiction (both kept): on {_day(first.memory.created_at)} you said "
                f"\"{first.memory.text}\"; on {_day(second.memory.created_at)}, \"{second.memory.text}\""
            )
            continue
        when = f"{humanize_age(m.created_at, now_dt)} ({_day(m.created_at)})"
        kind = "" if m.kind == "explicit" else " [inferred]"
        lines.append(f"- {f'[m:{m.id}] ' if cite else ''}{when}, relevance {hit.score:.2f}{kind}: {m.text}")
    return "\n".join(lines)


def _day(dt: datetime) -> str:
    return f"{dt.day} {dt:%b %Y}"
