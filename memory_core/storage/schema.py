"""The bank's schema: its version and the migrations that bring any bank to it.

Every store (DuckDB today, PostgreSQL next) runs the same migrations, in order, each once; a
bank records the versions it has in ``schema_migrations``. The DDL is written in types both
engines read the same way: ``DOUBLE PRECISION`` (8 bytes), ``REAL[]`` (a list of 4-byte floats),
``VARCHAR``, ``BIGINT[]``, naive ``TIMESTAMP`` (UTC, see :mod:`memory_core.storage.clock`). A new
migration appends a version here (and its undo in tests/conftest.py).
"""

from __future__ import annotations

from typing import Any

from .clock import to_naive_utc, utcnow
from ..errors import CorruptBankError

SCHEMA_VERSION = 12

# The key of each tenant table that has one (version 1-3); version 10 adds the namespace to it on
# PostgreSQL. The tenant tables without a key (hits, feedback hits, removed memories, ablation
# cases) have no unique constraint for a distribution by namespace to break.
TENANT_KEYS = {"memories": "id", "events": "id", "retrievals": "id", "conflicts": "id", "merges": "id",
               "labels": "id", "feedback": "retrieval_id"}

# A statement is SQL for every store, or ``{store: SQL}`` for the stores it applies to (a
# dialect's ``name``): what one engine stores differently.
MIGRATIONS: dict[int, list[str | dict[str, str]]] = {
    1: [
        "CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
        """CREATE TABLE memories (
            id BIGINT PRIMARY KEY,
            namespace VARCHAR NOT NULL,
            text VARCHAR,                 -- NULL once hard-deleted
            kind VARCHAR NOT NULL,
            category VARCHAR NOT NULL,
            importance DOUBLE PRECISION NOT NULL,
            created_at TIMESTAMP NOT NULL,
            updated_at TIMESTAMP NOT NULL,
            last_accessed_at TIMESTAMP,
            access_count BIGINT NOT NULL,
            status VARCHAR NOT NULL,
            pinned BOOLEAN NOT NULL,
            source VARCHAR,
            content_hash VARCHAR NOT NULL,
            embedding REAL[],             -- NULL once hard-deleted
            embedding_model VARCHAR,
            superseded_by BIGINT,
            merged_into BIGINT,
            seq BIGINT NOT NULL           -- change sequence of the row's last change
        )""",
        """CREATE TABLE events (
            id BIGINT PRIMARY KEY, happened_at TIMESTAMP NOT NULL, actor VARCHAR NOT NULL,
            action VARCHAR NOT NULL, memory_id BIGINT, before VARCHAR, after VARCHAR,
            note VARCHAR
        )""",
        """CREATE TABLE retrievals (
            id BIGINT PRIMARY KEY, recalled_at TIMESTAMP NOT NULL, actor VARCHAR, namespace VARCHAR NOT NULL,
            query VARCHAR, params VARCHAR, preset VARCHAR, gate VARCHAR, recalled BOOLEAN NOT NULL,
            latency_ms DOUBLE PRECISION, n_results INTEGER NOT NULL
        )""",
        """CREATE TABLE retrieval_hits (
            retrieval_id BIGINT NOT NULL, rank INTEGER NOT NULL, memory_id BIGINT NOT NULL,
            score DOUBLE PRECISION, similarity DOUBLE PRECISION, lexical DOUBLE PRECISION, recency DOUBLE PRECISION,
            importance DOUBLE PRECISION, frequency DOUBLE PRECISION
        )""",
        """CREATE TABLE presets (
            name VARCHAR PRIMARY KEY, params VARCHAR NOT NULL, description VARCHAR,
            created_at TIMESTAMP NOT NULL, updated_at TIMESTAMP NOT NULL
        )""",
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMP NOT NULL)",
    ],
    # Curation: operations that change several memories at once are undone as a whole (group_id);
    # contradictions, merges and maintenance runs are recorded.
    2: [
        "ALTER TABLE events ADD COLUMN group_id BIGINT",
        "ALTER TABLE events ADD COLUMN undone_by BIGINT",
        """CREATE TABLE conflicts (
            id BIGINT PRIMARY KEY, namespace VARCHAR NOT NULL, a_id BIGINT NOT NULL, b_id BIGINT NOT NULL,
            kind VARCHAR, evidence VARCHAR, confidence DOUBLE PRECISION, suggestion VARCHAR, path VARCHAR,
            status VARCHAR NOT NULL,      -- open, resolved, acknowledged, dismissed
            resolution VARCHAR, detected_at TIMESTAMP NOT NULL, resolved_at TIMESTAMP, resolved_by VARCHAR,
            group_id BIGINT               -- the operation that resolved it (undo reverses that group)
        )""",
        # Rows removed outright (undoing a merge removes the merged memory): other processes drop
        # them from their indexes by change sequence, as they do for changed rows.
        "CREATE TABLE removed_memories (id BIGINT NOT NULL, namespace VARCHAR NOT NULL, seq BIGINT NOT NULL)",
        """CREATE TABLE merges (
            id BIGINT PRIMARY KEY, namespace VARCHAR NOT NULL, merged_id BIGINT NOT NULL,
            member_ids BIGINT[] NOT NULL, path VARCHAR, detail VARCHAR, group_id BIGINT NOT NULL,
            created_at TIMESTAMP NOT NULL, undone_at TIMESTAMP
        )""",
        """CREATE TABLE maintenance_runs (
            id BIGINT PRIMARY KEY, started_at TIMESTAMP NOT NULL, finished_at TIMESTAMP, actor VARCHAR,
            dry_run BOOLEAN NOT NULL, plan VARCHAR, report VARCHAR
        )""",
        "INSERT INTO meta VALUES ('next_group_id', '1'), ('next_conflict_id', '1'), ('next_merge_id', '1'), "
        "('next_run_id', '1')",
    ],
    # Usage feedback and ablations. Feedback is one row per retrieval (giving it again replaces
    # it) plus one row per returned memory saying whether the answer used it and what decided
    # that. Ablation cases keep memory ids, never memory texts, so a hard delete still erases
    # the text everywhere (the page looks texts up when it shows a case).
    3: [
        """CREATE TABLE feedback (
            retrieval_id BIGINT PRIMARY KEY, namespace VARCHAR NOT NULL, given_at TIMESTAMP NOT NULL,
            actor VARCHAR, answer VARCHAR, helpful BOOLEAN
        )""",
        """CREATE TABLE feedback_hits (
            retrieval_id BIGINT NOT NULL, memory_id BIGINT NOT NULL, used BOOLEAN NOT NULL,
            decided_by VARCHAR NOT NULL,  -- given, citation, similarity
            similarity DOUBLE PRECISION   -- best cosine of an answer sentence (similarity path)
        )""",
        """CREATE TABLE ablation_runs (
            id BIGINT PRIMARY KEY, started_at TIMESTAMP NOT NULL, finished_at TIMESTAMP, actor VARCHAR,
            namespace VARCHAR, answer_model VARCHAR, judge_model VARCHAR, seed BIGINT, source VARCHAR,
            n_cases INTEGER NOT NULL, better INTEGER NOT NULL, worse INTEGER NOT NULL, ties INTEGER NOT NULL,
            errors INTEGER NOT NULL, settings VARCHAR
        )""",
        """CREATE TABLE ablation_cases (
            run_id BIGINT NOT NULL, case_no INTEGER NOT NULL, namespace VARCHAR NOT NULL,
            question VARCHAR NOT NULL, expected VARCHAR, memory_ids BIGINT[] NOT NULL,
            answer_with VARCHAR, answer_without VARCHAR,
            first_shown VARCHAR,          -- with / without: which answer the judge saw as A
            judge_choice VARCHAR,         -- the judge's own words: A, B or tie
            verdict VARCHAR NOT NULL,     -- with, without, tie, or error
            reason VARCHAR, error VARCHAR
        )""",
        "INSERT INTO meta VALUES ('next_ablation_run_id', '1')",
    ],
    # Labeled query sets: an operator's judgement of which memories a query should (not) bring
    # back. A row with a NULL memory_id only records that the query is labeled (nothing relevant,
    # nothing marked): "recall should come back empty". as_of is the moment the query is asked
    # (NULL: whenever it is evaluated), so one text can mean different memories at different times.
    4: [
        """CREATE TABLE labels (
            id BIGINT PRIMARY KEY, set_name VARCHAR NOT NULL, namespace VARCHAR NOT NULL,
            query VARCHAR NOT NULL, as_of TIMESTAMP, memory_id BIGINT, relevant BOOLEAN,
            labeled_by VARCHAR NOT NULL, labeled_at TIMESTAMP NOT NULL
        )""",
        "INSERT INTO meta VALUES ('next_label_id', '1')",
    ],
    # A memory's retrieval context: text that situates it (the conversation turns around it),
    # indexed for lexical match alongside the text but never shown as the memory. NULL: none.
    5: [
        "ALTER TABLE memories ADD COLUMN context VARCHAR",
    ],
    # How many recalls' answers used each memory (feedback_hits.used), beside access_count (how
    # many recalls returned it): scoring's frequency can count uses instead of retrievals. Kept
    # by MemoryBank.feedback; an existing bank's count is rebuilt from the feedback it holds.
    6: [
        "ALTER TABLE memories ADD COLUMN use_count INTEGER NOT NULL DEFAULT 0",
        """UPDATE memories SET use_count = u.n
           FROM (SELECT memory_id, count(DISTINCT retrieval_id) AS n FROM feedback_hits WHERE used
                 GROUP BY memory_id) AS u
           WHERE memories.id = u.memory_id""",
    ],
    # Access tokens of the server (memctl serve): only a hash of each secret is kept, with the
    # namespaces it may use. They live in the bank, so they move with it (backup, copy).
    7: [
        """CREATE TABLE tokens (
            name VARCHAR PRIMARY KEY, secret_hash VARCHAR NOT NULL UNIQUE, namespaces VARCHAR[] NOT NULL,
            read_only BOOLEAN NOT NULL, admin BOOLEAN NOT NULL, created_at TIMESTAMP NOT NULL
        )""",
    ],
    # The namespace in every table that holds a tenant's rows, so the schema can be distributed
    # or partitioned by namespace (docs/scale-out.md). Filled from the row it belongs to: an
    # event from its memory, a hit from its retrieval (or its memory), feedback hits from their
    # feedback. Rows that belong to no namespace (an event about a preset, a token, the model)
    # carry '' (BANK_WIDE), which no namespace can be. Existing events that name no memory
    # (labels, conflicts, merges, feedback, undo written before this version) become bank-wide;
    # new ones carry their namespace.
    8: [
        # NOT NULL with a default at once, before any UPDATE: DuckDB cannot change a constraint
        # of a table with outstanding updates in the transaction. The default goes at the end.
        "ALTER TABLE events ADD COLUMN namespace VARCHAR NOT NULL DEFAULT ''",
        "ALTER TABLE retrieval_hits ADD COLUMN namespace VARCHAR NOT NULL DEFAULT ''",
        "ALTER TABLE feedback_hits ADD COLUMN namespace VARCHAR NOT NULL DEFAULT ''",
        "UPDATE events SET namespace = m.namespace FROM memories AS m WHERE events.memory_id = m.id",
        "UPDATE retrieval_hits SET namespace = r.namespace FROM retrievals AS r WHERE retrieval_hits.retrieval_id = r.id",
        "UPDATE retrieval_hits SET namespace = m.namespace FROM memories AS m "
        "WHERE retrieval_hits.namespace = '' AND retrieval_hits.memory_id = m.id",
        "UPDATE feedback_hits SET namespace = f.namespace FROM feedback AS f WHERE feedback_hits.retrieval_id = f.retrieval_id",
        "UPDATE feedback_hits SET namespace = m.namespace FROM memories AS m "
        "WHERE feedback_hits.namespace = '' AND feedback_hits.memory_id = m.id",
        "ALTER TABLE events ALTER COLUMN namespace DROP DEFAULT",
        "ALTER TABLE retrieval_hits ALTER COLUMN namespace DROP DEFAULT",
        "ALTER TABLE feedback_hits ALTER COLUMN namespace DROP DEFAULT",
    ],
    # PostgreSQL keeps a vector as bytes (BYTEA: dim float32 values, little-endian), not REAL[]:
    # a binary COPY of bytes is a copy both ways, where REAL[] made the server parse and print
    # every element (bulk import and cold load spent most of their store time there). DuckDB
    # keeps REAL[] (its lists are columnar already). The column keeps its name; an existing
    # bank's vectors are converted in place.
    9: [
        {"postgres": "ALTER TABLE memories ADD COLUMN embedding_bytes BYTEA"},
        {"postgres": """UPDATE memories SET embedding_bytes = (
            SELECT string_agg(substr(b, 4, 1) || substr(b, 3, 1) || substr(b, 2, 1) || substr(b, 1, 1), ''::BYTEA
                              ORDER BY i)
            FROM (SELECT float4send(v) AS b, i FROM unnest(embedding) WITH ORDINALITY AS u(v, i)) AS elements)
            WHERE embedding IS NOT NULL"""},
        {"postgres": "ALTER TABLE memories DROP COLUMN embedding"},
        {"postgres": "ALTER TABLE memories RENAME COLUMN embedding_bytes TO embedding"},
    ],
    # Every key of a tenant's table includes its namespace, as Citus requires of a table
    # distributed by namespace and PostgreSQL of one partitioned by it (docs/scale-out.md).
    # The id leads, so a lookup by id alone still walks the key; ids stay unique bank-wide (they
    # come from counters), so no row changes. DuckDB keeps its keys of version 1: it cannot drop
    # a primary key, and a file is neither distributed nor partitioned.
    10: [{"postgres": f"ALTER TABLE {table} DROP CONSTRAINT {table}_pkey, ADD PRIMARY KEY ({key}, namespace)"}
         for table, key in TENANT_KEYS.items()],
    # Each memory's durability (durable or transient, memory_core.language.durability): maintenance
    # expires a transient memory once its time has passed and only lists a durable one for review.
    # The rule is the library's, not SQL's: the column starts NULL and the meta key
    # 'durability_unread' asks the bank's opener to read every memory whose durability is NULL
    # (services/core.py), in the same transaction, then drops the key.
    11: [
        "ALTER TABLE memories ADD COLUMN durability VARCHAR",
        "INSERT INTO meta VALUES ('durability_unread', '1')",
    ],
    # Each memory's language (en, sv or zh: memory_core.language.text.detect_language), so Browse
    # filters and counts by it in SQL. Read like durability: 'language_unread' asks the opener.
    12: [
        "ALTER TABLE memories ADD COLUMN language VARCHAR",
        "INSERT INTO meta VALUES ('language_unread', '1')",
    ],
}

BANK_WIDE = ""  # the namespace of a row that belongs to no namespace (check_namespace refuses "")


# The meta rows of version 1 (later versions add theirs in their migration); the counters are the
# next id to hand out (see :func:`memory_core.storage.tables.take_ids`).
def _initial_meta(model: str, created_at: str) -> dict[str, str]:
    return {"embedding_model": model, "embedding_dim": "", "change_seq": "0", "next_id": "1",
            "next_event_id": "1", "next_retrieval_id": "1", "active_preset": "default",
            "created_at": created_at}


def installed_version(con: Any) -> int:
    """The schema version of a bank that has a ``schema_migrations`` table."""
    return int(con.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()[0])


def migrate(con: Any, version: int, model: str, where: object) -> None:
    """Bring a bank at schema ``version`` (0: an empty store) to :data:`SCHEMA_VERSION` in ``con``'s
    transaction; a new bank records ``model`` as its embedding model. ``where`` names the bank in
    the error a newer schema gives."""
    if version > SCHEMA_VERSION:
        raise CorruptBankError(
            f"{where} has schema version {version}, newer than this memory_core "
            f"({SCHEMA_VERSION}); upgrade memory_core"
        )
    now = to_naive_utc(utcnow())
    for v in range(version + 1, SCHEMA_VERSION + 1):
        for stmt in MIGRATIONS[v]:
            if isinstance(stmt, dict):
                stmt = stmt.get(con.dialect.name)
            if stmt:
                con.execute(stmt)
        con.execute("INSERT INTO schema_migrations VALUES (?, ?)", [v, now])
    if version == 0:
        for key, value in _initial_meta(model, now.isoformat()).items():
            con.execute("INSERT INTO meta VALUES (?, ?)", [key, value])
