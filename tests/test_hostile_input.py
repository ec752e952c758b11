"""Hostile input: every call either works or raises a typed error, and after an error nothing changed.

Property-based (hypothesis) over the public API (add, add_many, update, recall, memories and count
filters) and the JSONL importer: random unicode and control characters, 1 MB strings, NaN and
infinities, wrong types, nulls, duplicate ids, dates far in the past and future. "Works" is
checked too: what was stored reads back exactly. SQL is built with parameters only: filters
carrying SQL (through the library and the dashboard's Browse search) match literally and inject
nothing.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import unicodedata
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from memory_core import MemoryBank, MemoryCoreError, ScoringParams, ValidationError

APP = str(Path(__file__).resolve().parent.parent / "app.py")
HOSTILE = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
BIG = ["a" * 1_000_000, "é" * 999_999 + "\u202e", ("tea " * 250_000)[:1_000_000], "x" * 1_000_001]

texts = st.one_of(
    st.text(max_size=200),  # any unicode, control characters and surrogates excluded by hypothesis itself
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=50),
    st.sampled_from(["", " ", "\x00", "a\x00b", "\u200b", "\ud7ff", "'; DROP TABLE memories; --",
                           "Robert'); DELETE FROM memories; --", "%", "_", "\\", "\n\r\t",
                           # lone surrogates (a JSON escape without its partner; argv bytes that were not UTF-8)
                           "\ud800", "tea \udfff", "\udcff\udcfe", "\ud83d"]),
)
numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(min_value=-10**30, max_value=10**30))
times = st.one_of(
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                 timezones=st.sampled_from([timezone.utc, timezone(timedelta(hours=14)), timezone(timedelta(hours=-12))])),
    st.dates(), st.sampled_from(["0001-01-01", "9999-12-31T23:59:59", "0001-01-01T00:00:00+05:00",
                                 "9999-12-31T23:59:59-05:00", "2026-13-45", "yesterday", "", "NaN"]),
    numbers,
)
junk = st.one_of(st.none(), st.booleans(), numbers, texts, st.binary(max_size=20), st.lists(st.integers(), max_size=3),
                 st.dictionaries(st.text(max_size=5), st.integers(), max_size=2), times)


@pytest.fixture(scope="module")
def hostile_bank(tmp_path_factory, embedder):
    path = tmp_path_factory.mktemp("hostile") / "hostile.duckdb"
    bank = MemoryBank.open(path, embedder=embedder)
    bank.add_many([{"text": t, "namespace": "alice", "created_at": "2026-01-05"} for t in
                   ("Drinks tea every morning", "Moved to Berlin in August", "Uses 100% recycled paper_bags")])
    yield bank
    bank.close()


def snapshot(bank: MemoryBank) -> str:
    """A digest of everything in the file that an operation could change."""
    bank._store.release()  # the bank may keep the file between operations; DuckDB opens it one way
    con = duckdb.connect(str(bank.path), read_only=True)
    try:
        h = hashlib.sha256()
        for table in ("meta", "memories", "events", "retrievals", "retrieval_hits", "presets", "conflicts"):
            for row in con.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall():
                h.update(repr(row).encode("utf-8", "surrogatepass"))
        return h.hexdigest()
    finally:
        con.close()


def attempt(bank: MemoryBank, call) -> tuple[bool, object]:
    """Run ``call``; an error must be typed and leave the bank as it was."""
    before = snapshot(bank)
    try:
        return True, call()
    except MemoryCoreError:
        assert snapshot(bank) == before, "a refused call changed the bank"
        return False, None


def same_text(stored: str, given: str) -> bool:
    """Equal but for whitespace and Unicode normal form (what makes an add repeat a memory)."""
    norm = lambda t: " ".join(unicodedata.normalize("NFC", t).split())  # noqa: E731
    return norm(stored) == norm(given)


def _normal_time(value) -> datetime | None:
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)
    return None


@HOSTILE
@given(text=st.one_of(texts, st.sampled_from(BIG)), namespace=st.one_of(texts, junk), importance=st.one_of(numbers, junk), created_at=times,
       kind=st.one_of(st.sampled_from(["explicit", "inferred"]), junk),
       category=st.one_of(st.sampled_from(["preference", "other"]), junk))
def test_add_works_or_refuses_cleanly(hostile_bank, text, namespace, importance, created_at, kind, category):
    ok, mid = attempt(hostile_bank, lambda: hostile_bank.add(
        text, namespace=namespace, importance=importance, created_at=created_at, kind=kind, category=category,
        detect_conflicts=False))
    if ok:
        m = hostile_bank.get(mid)
        # The same text (whitespace aside) as a stored memory returns that one, reinforced.
        assert same_text(m.text, text) and m.namespace == namespace and m.importance >= float(importance)
        if _normal_time(created_at) is not None:
            assert abs((m.created_at - _normal_time(created_at)).total_seconds()) < 1e-3


@HOSTILE
@given(rows=st.one_of(
    junk,
    st.lists(st.one_of(junk, st.fixed_dictionaries({"text": texts}, optional={
        "namespace": st.one_of(texts, junk), "importance": numbers, "created_at": times,
        "id": st.one_of(st.integers(min_value=-5, max_value=2**63), junk), "status": junk,
        "embedding": st.one_of(junk, st.lists(numbers, max_size=4)), "access_count": junk,
        "pinned": junk, "surprise": junk})), max_size=4)))
def test_add_many_is_all_or_nothing(hostile_bank, rows):
    n = hostile_bank.count(status=None)
    existing = {m.id for m in hostile_bank.memories(status=None, limit=10_000)}
    ok, ids = attempt(hostile_bank, lambda: hostile_bank.add_many(rows))
    if ok:
        # A row repeating a stored memory (or an earlier row) reinforces it instead of adding one.
        assert len(ids) == len(rows) and hostile_bank.count(status=None) == n + len(set(ids) - existing)
        for mid, row in zip(ids, rows):
            assert same_text(hostile_bank.get(mid).text, row["text"])


LONE = ["\ud800", "Drinks tea \udfff", "\udced\udca0\udc80"]  # the last: the bytes of a surrogate, as argv decodes them


@pytest.mark.parametrize("bad", LONE)
def test_a_lone_surrogate_is_a_validation_error_naming_the_field_and_changes_nothing(hostile_bank, bad):
    """Not a UnicodeEncodeError from the content hash or the store: a ValidationError that says what is wrong."""
    mid = hostile_bank.memories("alice", limit=1, order="oldest")[0].id
    hostile_bank.recall("tea", namespace="alice", threshold=0.0)
    rid = hostile_bank.last_retrieval_id
    hostile_bank.flush()  # the recall is written now, not by whichever call below opens the bank first
    calls = {
        "text": lambda: hostile_bank.add(bad, namespace="alice"),
        "namespace": lambda: hostile_bank.add("Drinks tea", namespace=bad),
        "context": lambda: hostile_bank.add("Drinks tea", namespace="alice", context=bad),
        "source": lambda: hostile_bank.add("Drinks tea", namespace="alice", source=bad),
        "row 2: text": lambda: hostile_bank.add_many([{"text": "fine", "namespace": "alice"},
                                                      {"text": bad, "namespace": "alice"}]),
        "query": lambda: hostile_bank.recall(bad, namespace="alice"),
        "reason": lambda: hostile_bank.forget(mid, reason=bad),
        "answer": lambda: hostile_bank.feedback(rid, answer=bad),
    }
    for field, call in calls.items():
        before = snapshot(hostile_bank)
        with pytest.raises(ValidationError) as caught:
            call()
        assert str(caught.value).startswith(f"{field} contains a lone surrogate"), (field, str(caught.value))
        assert "Send UTF-8 text" in str(caught.value)
        assert snapshot(hostile_bank) == before, field
    with pytest.raises(ValidationError, match="text contains a lone surrogate"):
        hostile_bank.update(mid, text=bad)


def test_threshold_out_of_range_is_a_validation_error_like_k(hostile_bank):
    for threshold in (1.5, 100, -0.1, float("nan")):
        with pytest.raises(ValidationError, match="threshold must"):
            hostile_bank.recall("tea", namespace="alice", threshold=threshold)
    assert isinstance(hostile_bank.recall("tea", namespace="alice", threshold=1.0), list)


@HOSTILE
@given(field=st.sampled_from(["text", "namespace", "importance", "created_at", "kind", "category", "pinned",
                              "source", "status", "embedding", "id"]),
       value=st.one_of(junk, texts, times), target=st.one_of(st.just("existing"), junk))
def test_update_works_or_refuses_cleanly(hostile_bank, field, value, target):
    mid = hostile_bank.memories("alice", limit=1, order="oldest")[0].id if target == "existing" else target
    ok, m = attempt(hostile_bank, lambda: hostile_bank.update(mid, **{field: value}))
    if ok:
        assert getattr(m, field) == value or field == "created_at"


@HOSTILE
@given(query=st.one_of(texts, junk), namespace=st.one_of(st.just("alice"), texts, junk), now=st.one_of(st.none(), times),
       k=st.one_of(st.none(), numbers, junk), threshold=st.one_of(st.none(), numbers, junk),
       params=st.one_of(st.none(), st.sampled_from(["default", "weighted-recall", "nope", "'; --"]), junk),
       record=st.one_of(st.booleans(), junk))
def test_recall_works_or_refuses_cleanly(hostile_bank, query, namespace, now, k, threshold, params, record):
    ok, hits = attempt(hostile_bank, lambda: hostile_bank.recall(
        query, namespace=namespace, now=now, k=k, threshold=threshold, params=params, record=record))
    if ok:
        assert isinstance(hits, list) and all(h.memory.namespace == namespace for h in hits)
        assert all(math.isfinite(h.score) for h in hits)


@HOSTILE
@given(filters=st.dictionaries(
    st.sampled_from(["kind", "category", "contains", "pinned", "min_importance", "max_importance", "created_after",
                     "created_before", "used_after", "used_before", "tier", "now", "order", "limit", "offset",
                     "status", "namespace", "bogus"]),
    st.one_of(junk, texts), max_size=4))
def test_memory_filters_work_or_refuse_cleanly(hostile_bank, filters):
    for call in (lambda: hostile_bank.memories(**filters),
                 lambda: hostile_bank.count(**{k: v for k, v in filters.items() if k not in ("order", "limit", "offset")})):
        ok, result = attempt(hostile_bank, call)
        if ok and isinstance(result, list) and isinstance(filters.get("contains"), str) and filters["contains"]:
            assert all(filters["contains"].lower() in m.text.lower() for m in result)


def _json_value():
    return st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
                     st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30),
                     st.lists(st.integers(), max_size=3))


@HOSTILE
@given(lines=st.lists(st.one_of(
    st.text(max_size=80),  # not JSON at all
    st.sampled_from(["{", "[]", "null", "NaN", '{"text": NaN}', '{"text": "ok", "importance": Infinity}',
                     '{"text": "dup", "id": 7}', '{"text": "dup 2", "id": 7}', '{"text": "\\u0000"}',
                     '{"text": "far", "created_at": "0001-01-01T00:00:00+05:00"}',
                     '{"text": "' + "b" * 1_000_001 + '"}']),
    st.builds(lambda d: json.dumps(d, allow_nan=True), st.fixed_dictionaries(
        {"text": st.one_of(texts, _json_value())},
        optional={"id": _json_value(), "namespace": _json_value(), "importance": _json_value(),
                  "created_at": st.one_of(_json_value(), st.sampled_from(["9999-12-31", "1899-12-31", "2026-02-30"])),
                  "status": _json_value(), "embedding": _json_value()})),
), min_size=1, max_size=5), skip=st.booleans())
def test_import_jsonl_refuses_bad_lines_by_number_and_changes_nothing(hostile_bank, lines, skip):
    n = hostile_bank.count(status=None)
    data = "\n".join(lines) + "\n"
    ok, report = attempt(hostile_bank, lambda: hostile_bank.import_jsonl(io.StringIO(data),
                                                                            on_error="skip" if skip else "refuse"))
    if ok:
        assert hostile_bank.count(status=None) == n + report.added
        if not skip:
            assert report.errors == []


INJECTIONS = ["'; DROP TABLE memories; --", "x' OR '1'='1", "%' OR 1=1 --", "\" OR \"\"=\"", "alice' --",
              "); DELETE FROM events; --", "1; UPDATE meta SET value = '0'", "%", "_"]


@pytest.mark.parametrize("payload", INJECTIONS)
def test_filters_carrying_sql_match_literally(hostile_bank, payload):
    before = snapshot(hostile_bank)
    found = hostile_bank.memories(contains=payload, status=None, limit=None)
    assert all(payload.lower() in m.text.lower() for m in found)
    # The module's property tests share this bank and may have written a namespace that is exactly
    # the payload (say "_"): a filter must match that one literally, never as a wildcard.
    named = [m for m in hostile_bank.memories(status=None, limit=None) if m.namespace == payload]
    assert hostile_bank.count(namespace=payload, status=None) == len(named)
    for key in ("kind", "category", "status", "order", "tier"):
        with pytest.raises(MemoryCoreError):
            hostile_bank.memories(**{key: payload})
    assert all(r.memory.namespace == payload for r in hostile_bank.recall(payload, namespace=payload, record=False))
    assert all(c.namespace == payload for c in hostile_bank.conflicts(namespace=payload))
    assert all(m.namespace == payload for m in hostile_bank.merges(namespace=payload))
    assert hostile_bank.stats(namespace=payload)["total"] == len(named)
    assert snapshot(hostile_bank) == before
    if payload == "%":
        # Exactly the memories whose text holds a literal "%" (the seeded one, and any an earlier
        # property test of this module's shared bank added), never all of them as a LIKE wildcard.
        literal = sorted(m.id for m in hostile_bank.memories(status=None, limit=None) if "%" in (m.text or ""))
        assert sorted(m.id for m in found) == literal
        assert "Uses 100% recycled paper_bags" in [m.text for m in found]


def test_browse_search_with_sql_injects_nothing(tmp_path, embedder, monkeypatch):
    path = tmp_path / "browse.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add_many([{"text": "Drinks tea every morning", "namespace": "alice"},
                       {"text": "Works night shifts", "namespace": "bob"}])
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    for payload in INJECTIONS[:4] + ["%"]:
        at = AppTest.from_file(APP, default_timeout=120)
        at.session_state["namespace_choice"] = "(all)"
        at.session_state["text"] = payload  # the "Text contains" box, as typed
        at.run()
        at.switch_page("dashboard/browse.py").run()
        assert not at.exception, at.exception
        assert at.text_input(key="text").value == payload
        assert any("No memory matches" in m.value for m in at.markdown), "the payload matched literally: nothing"
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.count(status=None) == 2 and len(bank.events(limit=100)) == 2


# Everything spliced into SQL text in memory_core, reviewed: column and table names from fixed
# tuples, WHERE clauses built by where_equal/memory_filter with ? placeholders, ORDER BY from a fixed map,
# LIMIT as int(), quoted file paths. A new interpolation fails here until it is reviewed.
REVIEWED_SQL_PIECES = {
    # The services (split out of bank.py, the same pieces): WHERE clauses built with ? placeholders
    # (queries.where_equal / memory_filter, fixed strings), fixed column lists, LIMIT as int().
    "changes.py": {"', '.join(sets)", "EVENT_COLUMNS", "where",
                   # hard delete: the dialect's list-overlap test on a fixed column
                   "con.dialect.list_overlaps('memory_ids')", "con.dialect.list_overlaps('member_ids')"},
    "curation.py": {"int(limit)", "where"},
    # _read_unread(): the fixed column names of what an opener reads for a migrated bank
    # (durability: text, category, kind, importance; language: text)
    "core.py": {"column", "fields"},
    # existing(): tables.ids_in's condition (ids joined after int() each, a fixed column)
    "writer.py": {"where"},
    "tokens.py": {"<sql>"},  # _ACTIVITY_SQL's two constant statements; revoke's and rotate's, passed to _change
    # feedback_log(): the keyword AND or WHERE
    "feedback.py": {"'AND' if where else 'WHERE'", "where"},
    # the index's fixed info columns; a fixed where; store_fingerprint: sums over fixed column
    # names and the dialect's hex-to-int of fixed slices of content_hash (_HASH_PIECES)
    "index_cache.py": {"rowmod.INFO_SQL", "where", "', '.join((f'coalesce({s}, 0)' for s in sums))"},
    # label(): a fixed "col = ? AND ..." string
    "labels.py": {"page", "same", "where"},
    # stats(): group-by columns and extra conditions are fixed strings
    "queries.py": {"col", "extra", "page", "where"},
    # storage/duckdb.py: the connection wrapper passes statements on; quoted file paths; DuckDB's
    # buffer pool sizes (class constants) and thread count (int())
    "duckdb.py": {"<sql>", "_sql_string(backup)", "_sql_string(dest)", "quoted",
                  "DuckDBStore.MEMORY_LIMIT", "DuckDBStore.SCAN_MEMORY_LIMIT", "int(threads)"},
    # storage/postgres.py: the connection wrapper passes statements on (translated: "?" to "%s");
    # temporary tables named by registered()'s keywords with the Arrow table's column names (both
    # from code, quoted); the bank's own table names from information_schema (VACUUM FULL); the
    # lock timeout as int(), and the write lock's statement (empty, or a fixed string around the
    # integer constant WRITE_LOCK_KEY); the fixed trigger DDL of pg_notify.TRIGGER_DDL; the dialect's fixed
    # catalogue query (the tables compact rewrites); the fixed query of what holds an erasure's
    # rewrite back (_HOLDING_SQL, a class constant with a named placeholder)
    "postgres.py": {"<sql>", "<text>", "<rows[0][0]>", "<stmt>", "cols", "name", "self._lock_timeout_ms()", "lock",
                    "<DIALECT.table_names()>", "<cls._HOLDING_SQL>"},
    # storage/pg_notify.py: the fixed channel names (changes, tokens)
    "pg_notify.py": {"CHANNEL", "TOKENS_CHANNEL"},
    # storage/copy.py: the bank's table names from information_schema, their column names
    "copy.py": {"cols", "name"},
    "schema.py": {"<stmt>"},
    "tables.py": {"col", "cols", "order", "page", "table", "where",
                  # insert_memories: the dialect's JSON of the fixed _ADD_EVENT_FIELDS
                  "after",
                  # take_counters: "WHEN ? THEN ?" and "?" repeated once per counter (placeholders only)
                  "case", "keys",
                  # insert_values: fixed table and column names from code, one row of
                  # placeholders per row (placeholders only)
                  "names", "values",
                  # bank_tables: the dialect's fixed catalogue query
                  "<con.dialect.table_names()>",
                  # take_counters' statement, held back or run; run_as_one: statements built by
                  # take_counters and insert_values (the pieces above) joined in one WITH, each
                  # returning a fixed column of its own (a column name from code)
                  "<sql>"},
}


def test_sql_text_interpolates_only_reviewed_pieces():
    import ast

    root = Path(__file__).resolve().parent.parent / "memory_core"
    found: dict[str, set[str]] = {}
    for f in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("execute", "sql", "executemany", "arrow", "arrow_stream") and node.args):
                continue
            arg = node.args[0]
            if isinstance(arg, ast.JoinedStr):
                pieces = {ast.unparse(v.value) for v in arg.values if isinstance(v, ast.FormattedValue)}
            elif isinstance(arg, ast.Constant):
                continue
            else:
                pieces = {f"<{ast.unparse(arg)}>"}
            found.setdefault(f.name, set()).update(pieces)
    unreviewed = {name: sorted(p - REVIEWED_SQL_PIECES.get(name, set())) for name, p in found.items()}
    assert not any(unreviewed.values()), f"SQL built from unreviewed values: {unreviewed}"
