"""Reading the bank: memories by id or by filter, namespaces, statistics, the recall log.

:func:`memory_filter` is the one filter builder: the Browse page, the CLI and the façade's
``memories``/``count`` all filter through it. Nothing here changes the bank.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from . import rows as rowmod
from ..storage.clock import to_aware, to_naive_utc, utcnow
from ..embedding.embedder import E5_MODEL, ENGLISH_ONLY
from ..errors import ValidationError
from ..language.durability import check_durability
from ..models import (
    CATEGORIES, KINDS, STATUSES, Memory, Profile, check_choice, check_id, check_importance, check_namespace,
    parse_time,
)
from ..index.scoring import TIERS, tier_bounds
from .settings import Settings
from ..storage import tables
from ..language.text import LANGUAGE_NAMES

NOTICEABLE_SHARE = 0.1  # of memories in other languages before an English-only model is worth a warning

if TYPE_CHECKING:
    from .core import Core

ORDERS = {  # the sort orders Browse offers; never user text in ORDER BY
    "newest": "created_at DESC, id DESC", "oldest": "created_at, id",
    "importance": "importance DESC, created_at DESC, id DESC",
    "most used": "access_count DESC, created_at DESC, id DESC",
    "recently used": "last_accessed_at DESC NULLS LAST, id DESC",
}
FILTER_NAMES = ("kind", "category", "contains", "pinned", "min_importance", "max_importance", "created_after",
                "created_before", "used_after", "used_before", "tier", "now", "durability", "language")


def check_filter_names(filters: dict[str, Any]) -> None:
    unknown = sorted(set(filters) - set(FILTER_NAMES))
    if unknown:
        raise ValidationError(f"unknown filter(s) {', '.join(unknown)}; filters: {', '.join(FILTER_NAMES)}")


def where_equal(**equal: Any) -> tuple[str, list[Any]]:
    """``col = ?`` for every value that is not None, joined by AND (columns are our own names)."""
    items = [(col, value) for col, value in equal.items() if value is not None]
    return " AND ".join(["TRUE"] + [f"{col} = ?" for col, _ in items]), [value for _, value in items]


def memory_filter(namespace: str | None, status: str | None, *, kind: str | None = None,
             category: str | None = None, contains: str | None = None, pinned: bool | None = None,
             min_importance: float | None = None, max_importance: float | None = None,
             created_after: Any = None, created_before: Any = None, used_after: Any = None,
             used_before: Any = None, tier: str | None = None, now: Any = None,
             durability: str | None = None, language: str | None = None) -> tuple[str, list[Any]]:
    if pinned is not None and not isinstance(pinned, bool):
        raise ValidationError("pinned must be true, false or None")
    where, params = where_equal(
        namespace=None if namespace is None else check_namespace(namespace),
        status=None if status is None else check_choice(status, STATUSES, "status"),
        kind=None if kind is None else check_choice(kind, KINDS, "kind"),
        category=None if category is None else check_choice(category, CATEGORIES, "category"),
        durability=None if durability is None else check_durability(durability),
        language=None if language is None else check_choice(language, tuple(LANGUAGE_NAMES), "language"),
        pinned=pinned)
    if contains:
        where += " AND strpos(lower(text), lower(?)) > 0"
        params.append(str(contains))
    for sql, value, check in (
        ("importance >= ?", min_importance, check_importance), ("importance <= ?", max_importance, check_importance),
        ("created_at >= ?", created_after, parse_time), ("created_at <= ?", created_before, parse_time),
        ("last_accessed_at >= ?", used_after, parse_time), ("last_accessed_at <= ?", used_before, parse_time),
    ):
        if value is not None:
            checked = check(value)
            where += f" AND {sql}"
            params.append(to_naive_utc(checked) if isinstance(checked, datetime) else checked)
    if tier is not None:
        # The tier rule is scoring's (tier_bounds): bounds on when the memory was last touched.
        check_choice(tier, TIERS, "tier")
        after, before = tier_bounds(tier, to_naive_utc(parse_time(now, "now") or utcnow()))
        touched = "greatest(created_at, coalesce(last_accessed_at, created_at))"
        for op, bound in ((">=", after), ("<=", before)):
            if bound is not None:
                where += f" AND {touched} {op} ?"
                params.append(bound)
    return where, params



def _tier_counts(con: Any, where: str, params: list[Any], moments: list[datetime]) -> list[dict[str, int]]:
    """Active memories matching ``where`` by tier as of each of ``moments`` (naive UTC), from one
    read of when each was created and last touched; the tier rule is scoring's (tier_bounds)."""
    table = con.arrow(f"SELECT created_at, greatest(created_at, coalesce(last_accessed_at, created_at)) "
                      f"AS touched FROM memories WHERE {where} AND status = 'active'", params)
    created, touched = (rowmod.timestamps(table.column(c)) for c in ("created_at", "touched"))
    out = []
    for moment in moments:
        live = created <= rowmod.ts(moment)
        counts = {}
        for tier in TIERS:
            after, before = tier_bounds(tier, moment)
            chosen = live.copy()
            if after is not None:
                chosen &= touched >= rowmod.ts(after)
            if before is not None:
                chosen &= touched <= rowmod.ts(before)
            counts[tier] = int(chosen.sum())
        out.append(counts)
    return out

class Queries:
    """Reads one bank's memories, namespaces, statistics and recall log."""

    def __init__(self, core: "Core", settings: Settings):
        self.core = core
        self.settings = settings

    def get(self, memory_id: int) -> Memory:
        """The memory with this id (a hard-deleted one comes back with ``text=None``), through the
        by-id cache that the session's catch-up keeps true, as :meth:`get_many`."""
        mid = check_id(memory_id)
        with self.core.session(write=False) as con:
            return self.core.get_many(con, [mid])[mid]

    def get_many(self, ids: Iterable[int]) -> dict[int, Memory]:
        """Several memories by id, in one read of those this bank has not cached (the session
        caught up with every other writer first); NotFoundError names the first missing id."""
        wanted = [check_id(i) for i in ids]
        with self.core.session(write=False) as con:
            return self.core.get_many(con, wanted)

    def memories(
        self,
        namespace: str | None = None,
        status: str | None = "active",
        *,
        limit: int | None = 100,
        offset: int = 0,
        order: str = "newest",
        **filters: Any,
    ) -> list[Memory]:
        """Memories matching the filters, newest first by default. ``status=None`` means every status.

        Filters: ``kind``, ``category``, ``contains`` (plain text), ``pinned``, ``min_importance``,
        ``max_importance``, ``created_after``, ``created_before``, ``used_after``, ``used_before``,
        ``tier`` (hot, warm or cold as of ``now``), ``durability`` (durable or transient), ``language``
        (en, sv or zh, read from the text when it is written).
        ``order`` is one of newest, oldest, importance, most used, recently used.
        """
        check_filter_names(filters)
        for name, value in (("limit", limit), ("offset", offset)):
            if value is None and name == "limit":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ValidationError(f"{name} must be a whole number >= 0{' or None' if name == 'limit' else ''}, "
                                      f"got {value!r}")
        where, params = memory_filter(namespace, status, **filters)
        order_sql = ORDERS.get(check_choice(order, ORDERS, "order"))
        with self.core.session(write=False) as con:
            rows = tables.fetch_rows(con, where, params, order=order_sql, limit=limit, offset=offset).to_pylist()
        return [rowmod.memory_from_row(r) for r in rows]

    def count(self, namespace: str | None = None, status: str | None = "active", **filters: Any) -> int:
        """How many memories match the filters of :meth:`memories`."""
        check_filter_names(filters)
        where, params = memory_filter(namespace, status, **filters)
        with self.core.session(write=False) as con:
            return int(con.execute(f"SELECT count(*) FROM memories WHERE {where}", params).fetchone()[0])

    def namespaces(self) -> list[tuple[str, int]]:
        """Every namespace with its number of active memories, largest first."""
        with self.core.session(write=False) as con:
            return [(ns, int(n)) for ns, n in con.execute(
                "SELECT namespace, count(*) FILTER (WHERE status = 'active') AS n FROM memories "
                "GROUP BY namespace ORDER BY n DESC, namespace").fetchall()]

    def languages(self, sample: int = 2000) -> dict[str, float]:
        """The share of the newest ``sample`` active memories in each language (en, sv, zh)."""
        with self.core.session(write=False) as con:
            counts = dict(con.execute(
                "SELECT language, count(*) FROM (SELECT language FROM memories WHERE status = 'active' "
                "AND text IS NOT NULL ORDER BY id DESC LIMIT ?) AS newest GROUP BY 1", [int(sample)]).fetchall())
        total = sum(counts.values())
        return {str(lang): n / total for lang, n in sorted(counts.items(), key=lambda kv: -kv[1])}

    def language_notice(self, share: float = NOTICEABLE_SHARE) -> str | None:
        """What to tell an operator whose bank's model reads English only while at least ``share``
        of its memories are in another language; None when there is nothing to tell."""
        if self.core.model not in ENGLISH_ONLY:
            return None
        other = {lang: v for lang, v in self.languages().items() if lang != "en"}
        if sum(other.values()) < share:
            return None
        names = ", ".join(f"{LANGUAGE_NAMES.get(lang, lang)} {v:.0%}" for lang, v in other.items())
        return (f"This bank's model ({self.core.model}) reads English only, but {sum(other.values()):.0%} of its "
                f"memories are in other languages ({names}): recall misses them and finds unrelated ones. "
                f"Move it to the multilingual model with: memctl --bank {self.core.store.location} reembed "
                f"--model {E5_MODEL}")

    def stats(self, namespace: str | None = None, now: Any = None) -> dict[str, Any]:
        """Counts by status, kind, category, tier, language and durability, plus the bank's model and activity."""
        now_dt = parse_time(now, "now") or utcnow()
        where, params = ("namespace = ?", [check_namespace(namespace)]) if namespace else ("TRUE", [])
        with self.core.session(write=False) as con:
            def group(col: str, extra: str = "") -> dict[str, int]:
                return {str(k): int(v) for k, v in con.execute(
                    f"SELECT {col}, count(*) FROM memories WHERE {where} {extra} GROUP BY 1 ORDER BY 2 DESC",
                    params).fetchall()}
            by_status = group("status")
            by_kind = group("kind", "AND status = 'active'")
            by_category = group("category", "AND status = 'active'")
            by_language = group("language", "AND status = 'active'")
            by_durability = group("durability", "AND status = 'active'")
            retrievals = con.execute(
                f"SELECT count(*), count(*) FILTER (WHERE n_results = 0) FROM retrievals WHERE {where}",
                params).fetchone()
            meta = tables.meta(con)
            name, _ = self.settings.active(con)
            open_conflicts = con.execute(f"SELECT count(*) FROM conflicts WHERE {where} AND status = 'open'",
                                         params).fetchone()[0]
            by_month = {f"{int(y):04d}-{int(m):02d}": int(v) for y, m, v in con.execute(
                "SELECT extract(year FROM created_at), extract(month FROM created_at), count(*) FROM memories "
                f"WHERE {where} GROUP BY 1, 2 ORDER BY 1, 2", params).fetchall()}
            (tiers,) = _tier_counts(con, where, params, [to_naive_utc(now_dt)])
        return {
            "path": self.core.store.location, "model": self.core.model, "dim": self.core.dim,
            "total": sum(by_status.values()), "active": by_status.get("active", 0),
            "by_status": by_status, "by_kind": by_kind, "by_category": by_category, "by_tier": tiers,
            "by_language": by_language, "by_durability": by_durability,
            "namespaces": len(self.namespaces()) if namespace is None else 1,
            "retrievals": int(retrievals[0]), "empty_retrievals": int(retrievals[1]),
            "active_preset": name, "change_seq": int(meta["change_seq"]),
            "open_conflicts": int(open_conflicts), "by_month": by_month,
            "file_bytes": self.core.store.size_bytes(),
        }

    def tiers_over_time(self, namespace: str | None, moments: Iterable[Any]) -> list[dict[str, int]]:
        """Live memories by tier as of each moment (what :meth:`stats` gives for ``now=moment``), from
        one read of when each was created and last touched, so a trend of many points costs one query."""
        at = [to_naive_utc(parse_time(m, "moment") or utcnow()) for m in moments]
        where, params = ("namespace = ?", [check_namespace(namespace)]) if namespace else ("TRUE", [])
        with self.core.session(write=False) as con:
            return _tier_counts(con, where, params, at)

    def live_vectors(self, namespace: str) -> tuple[np.ndarray, np.ndarray]:
        """Ids and unit vectors of a namespace's live memories, for clustering and for finding
        conflict candidates without scanning other namespaces. Read-only views, not copies: a
        large namespace is not copied on every added memory."""
        check_namespace(namespace)
        with self.core.session(write=False) as con:
            idx = self.core.ns_index(con, namespace)
        if idx is None:
            return np.zeros(0, dtype=np.int64), np.zeros((0, self.core.dim or 0), dtype=np.float32)
        ids, emb = idx.ids[: idx.n], idx.emb[: idx.n]
        ids.flags.writeable = False
        emb.flags.writeable = False
        return ids, emb

    def expiry_candidates(self, *, now: Any = None, older_than_days: float, below_importance: float | None,
                          unused_days: float, namespace: str | None = None,
                          durability: str | None = None) -> list[Memory]:
        """Live, unpinned memories created more than ``older_than_days`` before ``now``, with importance
        under ``below_importance`` (None: any), not recalled for ``unused_days`` (or never), of one
        ``durability`` when given: what maintenance weighs for expiry or review."""
        now_dt = parse_time(now, "now") or utcnow()
        for name, value in (("older_than_days", older_than_days), ("unused_days", unused_days)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ValidationError(f"{name} must be a number of days >= 0")
        created_before = to_naive_utc(now_dt) - timedelta(days=older_than_days)
        used_before = to_naive_utc(now_dt) - timedelta(days=unused_days)
        where = ("status = 'active' AND NOT pinned AND created_at < ? "
                 "AND (last_accessed_at IS NULL OR last_accessed_at < ?)")
        params: list[Any] = [created_before, used_before]
        if below_importance is not None:
            where += " AND importance < ?"
            params.append(float(check_importance(below_importance)))
        if durability is not None:
            where += " AND durability = ?"
            params.append(check_durability(durability))
        if namespace is not None:
            where += " AND namespace = ?"
            params.append(check_namespace(namespace))
        with self.core.session(write=False) as con:
            return [rowmod.memory_from_row(r) for r in tables.fetch_rows(con, where, params, order="created_at, id").to_pylist()]

    def usage_summary(self, namespace: str | None = None) -> dict[str, Any]:
        """Totals a maintenance report carries: live memories, average access count, never recalled."""
        where, params = ("status = 'active'" + (" AND namespace = ?" if namespace else ""),
                         [check_namespace(namespace)] if namespace else [])
        with self.core.session(write=False) as con:
            total, avg, never = con.execute(
                f"SELECT count(*), coalesce(avg(access_count), 0), count(*) FILTER (WHERE access_count = 0) "
                f"FROM memories WHERE {where}", params).fetchone()
        return {"active": int(total), "average_access_count": round(float(avg), 3), "never_accessed": int(never)}

    def profile(self, namespace: str, *, limit: int = 12, min_importance: float = 0.6) -> Profile:
        """The core of what the bank knows about a namespace: its most important live memories on
        identity, work, skills, goals and standing preferences. Superseded, merged and expired
        memories are not live, so the profile follows curation and maintenance by itself."""
        check_namespace(namespace)
        check_importance(min_importance)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValidationError("limit must be a whole number >= 1")
        with self.core.session(write=False) as con:
            rows = tables.fetch_rows(
                con, "namespace = ? AND status = 'active' AND category IN ('profile', 'goal', 'preference') "
                "AND importance >= ?", [namespace, float(min_importance)],
                order="importance DESC, created_at DESC, id", limit=limit).to_pylist()
        return Profile(namespace, [rowmod.memory_from_row(r) for r in rows])

    def retrievals(self, namespace: str | None = None, limit: int | None = 50, *, since: Any = None,
                   until: Any = None, memory_id: int | None = None) -> list[dict[str, Any]]:
        """Logged recalls, newest first, each with its hits and their score components.

        ``since``/``until`` bound the recall time; ``memory_id`` keeps the recalls that returned
        that memory (its recall log); ``limit=None`` returns them all.
        """
        where, params = where_equal(namespace=None if namespace is None else check_namespace(namespace))
        if since is not None:
            where += " AND recalled_at >= ?"
            params.append(to_naive_utc(parse_time(since, "since")))
        if until is not None:
            where += " AND recalled_at <= ?"
            params.append(to_naive_utc(parse_time(until, "until")))
        if memory_id is not None:
            where += " AND id IN (SELECT retrieval_id FROM retrieval_hits WHERE memory_id = ?)"
            params.append(check_id(memory_id))
        page = "" if limit is None else f" LIMIT {int(limit)}"
        with self.core.session(write=False) as con:
            heads = con.arrow(f"SELECT * FROM retrievals WHERE {where} ORDER BY id DESC{page}", params).to_pylist()
            ids = [h["id"] for h in heads]
            hits = con.arrow("SELECT retrieval_id, rank, memory_id, score, similarity, lexical, recency, importance, "
                             "frequency FROM retrieval_hits WHERE retrieval_id IN (SELECT unnest(?)) "
                             "ORDER BY retrieval_id, rank", [ids]).to_pylist() if ids else []
        by_id: dict[int, list] = {}
        for h in hits:
            by_id.setdefault(h["retrieval_id"], []).append(h)
        for head in heads:
            head["recalled_at"] = to_aware(head["recalled_at"])
            head["params"] = json.loads(head["params"]) if head["params"] else None
            head["gate"] = json.loads(head["gate"]) if head["gate"] else None
            head["hits"] = by_id.get(head["id"], [])
        return heads
