"""SQL on the bank's tables that several services share, as plain functions of a connection.

Meta counters and the change sequence, bulk inserts of memories and events, reading memory
rows (whole, paged, streamed, or only the fields scoring needs), the recall log's bulk write and
scrubbing erased text. Everything here runs on any :class:`~memory_core.storage.Connection`:
portable SQL, with what differs between engines taken from ``con.dialect``. A service's own
SQL (one table, one concern) stays in the service.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from datetime import datetime
from typing import TYPE_CHECKING, Any, Iterable, Iterator, NamedTuple, Sequence

import numpy as np
import pyarrow as pa

from .clock import to_naive_utc
from .schema import BANK_WIDE

if TYPE_CHECKING:
    from .interface import Connection

MEMORY_COLUMNS = (
    "id", "namespace", "text", "kind", "category", "importance", "created_at", "updated_at",
    "last_accessed_at", "access_count", "status", "pinned", "source", "content_hash",
    "embedding_model", "superseded_by", "merged_into", "seq", "context", "use_count", "durability",
    "language",
)

# The Arrow type of each memory column as the schema stores it: a bulk insert's table is typed by
# it, never inferred (a column of only None would have no type for an engine to check).
MEMORY_ARROW_TYPES: dict[str, pa.DataType] = {
    "id": pa.int64(), "namespace": pa.string(), "text": pa.string(), "kind": pa.string(),
    "category": pa.string(), "importance": pa.float64(), "created_at": pa.timestamp("us"),
    "updated_at": pa.timestamp("us"), "last_accessed_at": pa.timestamp("us"), "access_count": pa.int64(),
    "status": pa.string(), "pinned": pa.bool_(), "source": pa.string(), "content_hash": pa.string(),
    "embedding_model": pa.string(), "superseded_by": pa.int64(), "merged_into": pa.int64(), "seq": pa.int64(),
    "context": pa.string(), "use_count": pa.int32(), "durability": pa.string(),
    "language": pa.string(),
}

_TIME_COLUMNS = ("created_at", "updated_at", "last_accessed_at")
# The columns an event is written with (undone_by is set later, by an undo).
EVENT_INSERT_COLUMNS = ("id", "happened_at", "actor", "action", "memory_id", "before", "after", "note", "group_id",
                        "namespace")
SMALL_INSERT = 32  # rows below which an insert's "add" events are built in Python
# The memory as an "add" event records it (the fields a caller gave, in this order, and its id).
_ADD_EVENT_FIELDS = ("text", "namespace", "importance", "kind", "category", "created_at", "updated_at",
                     "last_accessed_at", "status", "pinned", "source", "content_hash", "superseded_by",
                     "merged_into", "access_count", "durability", "id")

# Columns the recall writer reads back for the memories whose access counts it changed.
ACCESS_COLUMNS = ("id", "namespace", "status", "created_at", "last_accessed_at", "importance",
                  "access_count", "use_count", "seq")
_IN_LIST_MAX = 2000  # ids written into the SQL as a list at most; more go through a scan

# Free-text columns that may quote a memory (evidence, reports, notes, a query typed from it).
QUOTING_COLUMNS = (("conflicts", "evidence"), ("merges", "detail"), ("maintenance_runs", "plan"),
                   ("maintenance_runs", "report"), ("events", "note"), ("retrievals", "query"),
                   ("labels", "query"), ("feedback", "answer"), ("ablation_cases", "question"),
                   ("ablation_cases", "expected"), ("ablation_cases", "answer_without"))


def content_hash(text: str) -> str:
    """SHA-256 of the NFC-normalized, whitespace-collapsed text: equal for exact duplicates."""
    norm = " ".join(unicodedata.normalize("NFC", text).split())
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()


# -- meta ------------------------------------------------------------------------------------------


def meta(con: Connection) -> dict[str, str]:
    return dict(con.execute("SELECT key, value FROM meta").fetchall())


def set_meta(con: Connection, key: str, value: str) -> None:
    """Change an existing meta row."""
    con.execute("UPDATE meta SET value = ? WHERE key = ?", [value, key])


def put_meta(con: Connection, key: str, value: str) -> None:
    """Set a meta row, adding it if the bank has none by that key yet."""
    con.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [key, value])


def take_ids(con: Connection, counter: str, n: int) -> int:
    """Reserve ``n`` consecutive ids from a meta counter; returns the first."""
    first = int(con.execute("SELECT value FROM meta WHERE key = ?", [counter]).fetchone()[0])
    set_meta(con, counter, str(first + n))
    return first


# How take_counters' statements begin, alone or first in run_as_one's: a connection that keeps the
# counters' values (``known_counters``) forgets them on any other statement that writes meta.
COUNTER_WRITES = ("UPDATE meta SET value = CASE key ", "UPDATE meta SET value = CAST(CAST(value AS BIGINT) + CASE key ",
                  "WITH w0 AS (UPDATE meta SET value = CASE key ")


def take_counters(con: Connection, wanted: dict[str, int], pending: list[Statement] | None = None) -> dict[str, int]:
    """Reserve ids from several meta counters in one statement (``{counter: n}``); returns the first
    id of each. A single add takes four counters: two statements each cost as much as its insert.

    Where the connection knows the counters' values (``con.known_counters``: a bank file's lease,
    which no other process can write while it lives), the statement writes the new values
    instead of reading and adding to the stored ones: reading the rows back and the casts cost
    a third of the statement (see BENCHMARKS.md, "Figures behind the code"). Then, given
    ``pending``, the statement is added to it instead of run (see :func:`run_as_one`)."""
    wanted = {k: int(n) for k, n in wanted.items() if n}
    if not wanted:
        return {}
    known: dict[str, int] | None = getattr(con, "known_counters", None)
    # The keys as an IN list of placeholders: planning IN (SELECT unnest(?)) made the statement a
    # quarter slower on DuckDB, side by side (see BENCHMARKS.md, "Figures behind the code").
    case = " ".join("WHEN ? THEN ?" for _ in wanted)
    keys = ", ".join("?" for _ in wanted)
    if known is not None and all(k in known for k in wanted):
        first = {k: known[k] for k in wanted}
        params: list[Any] = [x for k, n in wanted.items() for x in (k, str(first[k] + n))] + list(wanted)
        sql = f"UPDATE meta SET value = CASE key {case} END WHERE key IN ({keys})"
        if pending is not None:
            pending.append(Statement(sql, params, "key"))
        else:
            con.execute(sql, params)
        known.update({k: first[k] + n for k, n in wanted.items()})
        return first
    params = [x for k, n in wanted.items() for x in (k, n)] + list(wanted)
    rows = con.execute(f"UPDATE meta SET value = CAST(CAST(value AS BIGINT) + CASE key {case} END AS VARCHAR) "
                       f"WHERE key IN ({keys}) RETURNING key, value", params).fetchall()
    if known is not None:
        known.update({key: int(value) for key, value in rows})
    return {key: int(value) - wanted[key] for key, value in rows}


def knows_counters(con: Connection, counters: Iterable[str]) -> bool:
    """Whether :func:`take_counters` can take these counters without reading them (see there)."""
    known: dict[str, int] | None = getattr(con, "known_counters", None)
    return known is not None and all(k in known for k in counters)


class Statement(NamedTuple):
    """One statement that writes, held back to run with others as one (:func:`run_as_one`);
    ``returning``: a column it can return, which a statement inside WITH must."""
    sql: str
    params: list[Any]
    returning: str


def run_as_one(con: Connection, statements: Sequence[Statement]) -> None:
    """Run statements that write as one: all but the last inside WITH (each ``... RETURNING``), the
    last as the statement itself. Outside a transaction it is one of its own, which commits all or
    nothing: a single add is then one statement, where BEGIN, three writes and COMMIT each paid
    DuckDB's cost of a statement (see BENCHMARKS.md, "Figures behind the code"). A failure forgets
    the counters the connection knew: they were taken for this write."""
    *first, last = statements
    parts = [f"w{k} AS ({st.sql} RETURNING {st.returning})" for k, st in enumerate(first)]
    sql = ("WITH " + ", ".join(parts) + " " if parts else "") + last.sql
    try:
        con.execute(sql, [x for st in statements for x in st.params])
    except BaseException:
        known = getattr(con, "known_counters", None)
        if known is not None:
            known.clear()
        raise


def change_seq(con: Connection) -> int:
    return int(con.execute("SELECT value FROM meta WHERE key = 'change_seq'").fetchone()[0])


def next_seq(con: Connection) -> int:
    """Advance the bank's change sequence: every row changed in this transaction gets it."""
    return take_ids(con, "change_seq", 1) + 1


# -- memories --------------------------------------------------------------------------------------


def insert_memories(con: Connection, rows: dict[str, list], embeddings: np.ndarray,
                    log: tuple[str, datetime, int | None] | None = None, first_event: int | None = None,
                    pending: list[Statement] | None = None) -> None:
    """Bulk insert through Arrow (one statement, not one per row).

    With ``log = (actor, at, group)`` each new memory also gets its "add" event, whose ``after``
    (the memory as added) the engine writes as JSON from the same Arrow table: building 100k JSON
    strings in Python cost as much as the insert itself. ``first_event``: the events' ids are
    already reserved from there (else they are taken here). ``pending``: a few rows (at most
    :data:`SMALL_INSERT`, their events' ids reserved) are added to it instead of inserted (see
    :func:`run_as_one`).
    """
    n = len(rows["id"])
    if 0 < n <= SMALL_INSERT:
        _insert_few(con, rows, embeddings, log, first_event, pending)
        return
    if pending is not None:
        raise ValueError("only a few rows, with their events' ids reserved, are written with other statements")
    flat = pa.array(np.ascontiguousarray(embeddings, dtype=np.float32).reshape(-1))
    offsets = pa.array(np.arange(0, n + 1, dtype=np.int32) * embeddings.shape[1])
    table = pa.table({
        **{c: pa.array(rows[c], MEMORY_ARROW_TYPES[c]) for c in MEMORY_COLUMNS},
        "embedding": pa.ListArray.from_arrays(offsets, flat),
    })
    with con.registered(_incoming=table):
        cols = ", ".join(MEMORY_COLUMNS + ("embedding",))
        con.execute(f"INSERT INTO memories ({cols}) SELECT {cols} FROM _incoming")
        if log is not None and n:
            actor, at, group = log
            first = take_ids(con, "next_event_id", n) if first_event is None else first_event
            after = con.dialect.json_object(
                [(c, con.dialect.iso_utc(c) if c in _TIME_COLUMNS else c) for c in _ADD_EVENT_FIELDS])
            con.execute(
                "INSERT INTO events (id, happened_at, actor, action, memory_id, before, after, note, group_id, "
                f"namespace) SELECT ? + row_number() OVER (ORDER BY id) - 1, ?, ?, 'add', id, NULL, {after}, NULL, "
                "?, namespace FROM _incoming",
                [first, to_naive_utc(at), actor, group])


def _insert_few(con: Connection, rows: dict[str, list], embeddings: np.ndarray,
                log: tuple[str, datetime, int | None] | None, first_event: int | None,
                pending: list[Statement] | None = None) -> None:
    """:func:`insert_memories` for a few rows (a single add, a server's group): one ``INSERT ...
    VALUES`` for the memories and one for their events, built in Python. Registering a one-row
    Arrow table and planning the bulk SQL cost about twice as much, measured side by side on DuckDB
    (see BENCHMARKS.md, "Figures behind the code"). A vector goes as a numpy parameter: a list on DuckDB, bytes on
    PostgreSQL."""
    n = len(rows["id"])
    vectors = np.ascontiguousarray(embeddings, dtype=np.float32)
    insert_values(con, "memories", MEMORY_COLUMNS + ("embedding",),
                  [[rows[c][j] for c in MEMORY_COLUMNS] + [vectors[j]] for j in range(n)], pending)
    if log is None:
        return
    actor, at, group = log
    if first_event is None and pending is not None:
        raise ValueError("events written with other statements need their ids reserved")
    first = take_ids(con, "next_event_id", n) if first_event is None else first_event
    order = sorted(range(n), key=lambda j: rows["id"][j])
    insert_values(con, "events", EVENT_INSERT_COLUMNS,
                  [(first + k, to_naive_utc(at), actor, "add", rows["id"][j], None, _add_event_json(rows, j), None,
                    group, rows["namespace"][j]) for k, j in enumerate(order)], pending)


VALUES_CHUNK = 500  # rows in one INSERT ... VALUES at most (PostgreSQL allows 65,535 parameters)


def insert_values(con: Connection, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
                  pending: list[Statement] | None = None) -> None:
    """Insert ``rows`` (a value per column each) as one ``INSERT ... VALUES`` per chunk: the few
    rows of one operation (conflicts found by an add, a recall's feedback). ``executemany`` runs
    the statement once per row on DuckDB, each as dear as the whole list in one. Given
    ``pending``, the statements are added to it instead of run (see :func:`run_as_one`)."""
    names = ", ".join(columns)
    one = "(" + ", ".join("?" * len(columns)) + ")"
    for start in range(0, len(rows), VALUES_CHUNK):
        chunk = rows[start:start + VALUES_CHUNK]
        values = ", ".join([one] * len(chunk))
        sql, params = f"INSERT INTO {table} ({names}) VALUES {values}", [x for row in chunk for x in row]
        if pending is not None:
            pending.append(Statement(sql, params, columns[0]))
        else:
            con.execute(sql, params)


def _add_event_json(rows: dict[str, list], j: int) -> str:
    """Row ``j``'s "add" event as the SQL of :func:`insert_memories` writes it for a bulk insert."""
    def value(c: str) -> Any:
        v = rows[c][j]
        return v.strftime("%Y-%m-%dT%H:%M:%S.%f") + "+00:00" if c in _TIME_COLUMNS and v is not None else v

    return json.dumps({c: value(c) for c in _ADD_EVENT_FIELDS}, ensure_ascii=False, separators=(",", ":"))


def fetch_rows(con: Connection, where: str, params: list[Any], with_embedding: bool = False,
               order: str = "id", limit: int | None = None, offset: int = 0) -> pa.Table:
    """Memory rows as an Arrow table; ``where`` is a parameterized SQL condition, ``order`` a
    trusted ORDER BY clause (never user text)."""
    cols = ", ".join(MEMORY_COLUMNS + (("embedding",) if with_embedding else ()))
    page = "" if limit is None else f" LIMIT {int(limit)} OFFSET {int(offset)}"
    return con.arrow(f"SELECT {cols} FROM memories WHERE {where} ORDER BY {order}{page}", params)


def ids_in(column: str, ids: Iterable[int]) -> tuple[str, list[Any]]:
    """The condition "``column`` is one of these ids" and its parameters, for a fixed column name.

    Up to :data:`_IN_LIST_MAX` ids go in as a constant IN list, which DuckDB answers by the key
    where ``IN (SELECT unnest(?))`` plans a join, several times slower (see BENCHMARKS.md, "Figures behind the code").
    Longer lists (a large replayed journal) take
    the join, whose cost does not grow with the list.
    """
    wanted = [int(i) for i in ids]  # ints only: nothing else reaches the SQL
    if len(wanted) <= _IN_LIST_MAX:
        return f"{column} IN ({', '.join(map(str, wanted)) or 'NULL'})", []
    return f"{column} IN (SELECT unnest(?))", [wanted]


def access_rows(con: Connection, ids: list[int]) -> list[dict[str, Any]]:
    """The scoring fields (:data:`ACCESS_COLUMNS`) of these memories."""
    if not ids:
        return []
    cols = ", ".join(ACCESS_COLUMNS)
    where, params = ids_in("id", ids)
    return con.arrow(f"SELECT {cols} FROM memories WHERE {where}", params).to_pylist()


def stream_rows(con: Connection, where: str, params: list[Any], with_embedding: bool = False,
                batch_rows: int = 65_536) -> Iterator[pa.Table]:
    """Memory rows as Arrow tables of up to ``batch_rows`` rows, in storage order: a namespace of
    a million memories loads without the whole result (vectors included) in memory at once."""
    cols = ", ".join(MEMORY_COLUMNS + (("embedding",) if with_embedding else ()))
    with con.scanning():
        yield from con.arrow_stream(f"SELECT {cols} FROM memories WHERE {where}", params, batch_rows)


def embeddings_of(table: pa.Table, dim: int) -> np.ndarray:
    """The ``embedding`` column of an Arrow table as an (n, dim) float32 array."""
    col = table.column("embedding").combine_chunks()
    if len(col) == 0:
        return np.zeros((0, dim), dtype=np.float32)
    return col.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(len(col), dim)


def scrub_texts(con: Connection, texts: list[str | None]) -> None:
    """Replace every quotation of these (erased) texts in free-text columns by ``[erased]``:
    as written, JSON-escaped and as a Python repr, the forms reports store them in."""
    forms: set[str] = set()
    for t in texts:
        if t:
            forms |= {t, json.dumps(t)[1:-1], json.dumps(t, ensure_ascii=False)[1:-1], repr(t)[1:-1]}
    for form in sorted(forms, key=len, reverse=True):
        for table, col in QUOTING_COLUMNS:
            con.execute(f"UPDATE {table} SET {col} = replace({col}, ?, '[erased]') WHERE strpos({col}, ?) > 0",
                        [form, form])


def renumber_after_restore(con: Connection, seq_before: int, rows_before: list[tuple[int, str]]) -> None:
    """Make a restored bank look, to processes that had the replaced one open, like one big change:
    a change sequence past theirs, every row changed, and rows that are gone listed as removed.
    ``seq_before`` and ``rows_before`` (id, namespace) are the replaced bank's. Its own transaction
    on a held connection (:func:`renumber` runs in the caller's)."""
    with con.transaction():
        renumber(con, seq_before, rows_before)


def renumber(con: Connection, seq_before: int, rows_before: list[tuple[int, str]]) -> None:
    """:func:`renumber_after_restore` in the caller's transaction."""
    seq = max(seq_before, change_seq(con)) + 1
    set_meta(con, "change_seq", str(seq))
    con.execute("UPDATE memories SET seq = ?", [seq])
    if rows_before:
        table = pa.table({"id": pa.array([r[0] for r in rows_before], pa.int64()),
                          "namespace": pa.array([r[1] for r in rows_before], pa.string())})
        with con.registered(_before=table):
            con.execute("INSERT INTO removed_memories SELECT id, namespace, ? FROM _before "
                        "WHERE id NOT IN (SELECT id FROM memories)", [seq])


def bank_tables(con: Connection) -> list[str]:
    """The tables of the bank (the connection's schema), by name."""
    return sorted(r[0] for r in con.execute(con.dialect.table_names()).fetchall())


# -- the event log ---------------------------------------------------------------------------------


def log_events(con: Connection, actor: str, action: str, memory_ids: list[int], befores: list[dict | None],
               afters: list[dict | None], at: datetime, group: int | None = None, note: str | None = None) -> None:
    """Log one event per memory in bulk (an import of 100k memories writes 100k events), each in
    its memory's namespace."""
    n = len(memory_ids)
    if not n:
        return
    first = take_ids(con, "next_event_id", n)
    dump = lambda d: None if d is None else json.dumps(d, default=str, ensure_ascii=False)  # noqa: E731
    table = pa.table({
        "id": pa.array(range(first, first + n), pa.int64()),
        "happened_at": pa.array([to_naive_utc(at)] * n, pa.timestamp("us")),
        "actor": [actor] * n, "action": [action] * n,
        "memory_id": pa.array(memory_ids, pa.int64()),
        "before": pa.array([dump(b) for b in befores], pa.string()),
        "after": pa.array([dump(a) for a in afters], pa.string()),
        "note": pa.array([note] * n, pa.string()),
        "group_id": pa.array([group] * n, pa.int64()),
    })
    with con.registered(_events=table):
        con.execute("INSERT INTO events (id, happened_at, actor, action, memory_id, before, after, note, "
                    "group_id, namespace) SELECT e.id, e.happened_at, e.actor, e.action, e.memory_id, e.before, "
                    "e.after, e.note, e.group_id, coalesce(m.namespace, ?) FROM _events AS e "
                    "LEFT JOIN memories AS m ON m.id = e.memory_id", [BANK_WIDE])


def log_event(con: Connection, actor: str, action: str, memory_id: int | None, before: dict | None,
              after: dict | None, at: datetime, note: str | None = None, group: int | None = None,
              namespace: str | None = None) -> int:
    """Log one event. Its namespace: ``namespace`` when given, else its memory's, else none
    (:data:`~memory_core.storage.schema.BANK_WIDE`: a preset, a token, the model)."""
    eid = take_ids(con, "next_event_id", 1)
    values = [eid, to_naive_utc(at), actor, action, memory_id,
              None if before is None else json.dumps(before, default=str, ensure_ascii=False),
              None if after is None else json.dumps(after, default=str, ensure_ascii=False), note, group]
    if namespace is None and memory_id is not None:
        con.execute(
            "INSERT INTO events (id, happened_at, actor, action, memory_id, before, after, note, group_id, namespace) "
            "SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, coalesce((SELECT namespace FROM memories WHERE id = ?), ?)",
            [*values, memory_id, BANK_WIDE])
    else:
        insert_values(con, "events", EVENT_INSERT_COLUMNS, [[*values, BANK_WIDE if namespace is None else namespace]])
    return eid


# -- the recall log --------------------------------------------------------------------------------


def write_recalls(con: Connection, entries: list[dict[str, Any]]) -> tuple[int | None, list[int]]:
    """Write journaled recalls (see :mod:`memory_core.services.recall_log`) in bulk: their log rows, their
    hits, and the access counts and last-access times of the memories they returned.

    Idempotent: a retrieval id already in the store is skipped with its access counts, so a
    journal can be written again after a crash. Returns the change sequence given to the
    memories whose counts changed (None when none did) and their ids.
    """
    if not entries:
        return None, []
    ids = [int(e["id"]) for e in entries]
    where, params = ids_in("id", ids)
    have = {r[0] for r in con.execute(f"SELECT id FROM retrievals WHERE {where}", params).fetchall()}
    new = [e for e in entries if int(e["id"]) not in have]
    if not new:
        return None, []
    at = [datetime.fromisoformat(e["recalled_at"]) for e in new]
    heads = pa.table({
        "id": pa.array([int(e["id"]) for e in new], pa.int64()),
        "recalled_at": pa.array(at, pa.timestamp("us")),
        "actor": pa.array([e["actor"] for e in new], pa.string()),
        "namespace": pa.array([e["namespace"] for e in new], pa.string()),
        "query": pa.array([e["query"] for e in new], pa.string()),
        "params": pa.array([e["params"] for e in new], pa.string()),
        "preset": pa.array([e["preset"] for e in new], pa.string()),
        "gate": pa.array([e["gate"] for e in new], pa.string()),
        "recalled": pa.array([bool(e["recalled"]) for e in new], pa.bool_()),
        "latency_ms": pa.array([e["latency_ms"] for e in new], pa.float64()),
        "n_results": pa.array([int(e["n_results"]) for e in new], pa.int32()),
    })
    with con.registered(_heads=heads):
        con.execute("INSERT INTO retrievals (id, recalled_at, actor, namespace, query, params, preset, gate, "
                    "recalled, latency_ms, n_results) SELECT * FROM _heads")
    hit_rows = [(int(e["id"]), *h[:8], e["namespace"]) for e in new for h in e["hits"]]
    if not hit_rows:
        return None, []
    cols = list(zip(*hit_rows))
    hits = pa.table({
        "retrieval_id": pa.array(cols[0], pa.int64()), "rank": pa.array(cols[1], pa.int32()),
        "memory_id": pa.array(cols[2], pa.int64()),
        **{name: pa.array(cols[3 + j], pa.float64()) for j, name in enumerate(
            ("score", "similarity", "lexical", "recency", "importance", "frequency"))},
        "namespace": pa.array(cols[9], pa.string()),
    })
    uses: dict[int, list] = {}
    for e, when in zip(new, at):
        for h in e["hits"]:
            use = uses.setdefault(int(h[1]), [0, when])
            use[0] += 1
            use[1] = max(use[1], when)
    touched = list(uses)
    access = pa.table({"id": pa.array(touched, pa.int64()),
                       "n": pa.array([uses[m][0] for m in touched], pa.int64()),
                       "at": pa.array([uses[m][1] for m in touched], pa.timestamp("us"))})
    with con.registered(_hits=hits, _access=access):
        con.execute("INSERT INTO retrieval_hits (retrieval_id, rank, memory_id, score, similarity, lexical, "
                    "recency, importance, frequency, namespace) SELECT * FROM _hits")
        seq = next_seq(con)
        con.execute(
            "UPDATE memories SET access_count = memories.access_count + _access.n, seq = ?, "
            "last_accessed_at = greatest(coalesce(memories.last_accessed_at, _access.at), _access.at) "
            "FROM _access WHERE memories.id = _access.id AND memories.status = 'active'", [seq])
    return seq, touched
