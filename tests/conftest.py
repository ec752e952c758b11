"""Shared fixtures: the real embedding model (loaded once per run) and banks in temp folders."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import settings

# CI explores the same examples every run, so a red build is reproducible; local runs keep
# exploring new ones (that is how a word-boundary bug in the gate was found).
settings.register_profile("ci", derandomize=True, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# One torch/faiss thread (before torch is imported; child processes inherit it). On 2 cores shared
# with other jobs, two OpenMP threads spin against each other: embedding one short text took
# 0.15 s instead of 0.02 s, a batch of 256 2.5 s instead of 0.7 s (load average about 3.5).
os.environ.setdefault("OMP_NUM_THREADS", "1")
# memctl runs in process unless a test asks for its warm helper (tests/test_cli_warm.py): a helper
# left behind by one test would serve the next one's bank.
os.environ.setdefault("MEMCTL_WARM", "0")
sys.path.insert(0, str(Path(__file__).parent))  # for the stand-in LLM server module

from streamlit import config as _st_config  # noqa: E402

# AppTest runs the pages without a server; they refuse to serve on any address but loopback
# without a password, so the tests say where the dashboard listens, whatever the working folder.
_st_config.set_option("server.address", "127.0.0.1")

# Caches of PostgreSQL banks (index files, recall journals) go to a folder of this run, not ~/.cache.
# Built models are the exception: the multilingual model's runtime takes a while to build and
# check, so every run shares the machine's built models (tests of building use folders of their own).
if "MEMCTL_CACHE_DIR" not in os.environ:
    _cache = Path(tempfile.mkdtemp(prefix="memctl-cache-"))
    _models = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memory-console" / "models"
    _models.mkdir(parents=True, exist_ok=True)
    (_cache / "models").symlink_to(_models, target_is_directory=True)
    os.environ["MEMCTL_CACHE_DIR"] = str(_cache)

from memory_core import MemoryBank  # noqa: E402
from memory_core.embedding.embedder import get_embedder  # noqa: E402

import stores  # noqa: E402

# Test files whose bank runs on both stores: each test that uses the ``store_kind`` fixture (through
# ``bank_path`` or ``bank``) runs once on a DuckDB file and once on a PostgreSQL database.
BOTH_STORES = {
    "test_bank.py", "test_recall_exact.py", "test_curation_bank.py", "test_labels.py", "test_tenants.py",
    "test_forgetting.py", "test_hostile_input.py", "test_dedupe.py", "test_storage_seam.py", "test_namespace_keys.py",
    "test_tokens.py", "test_langgraph_store.py", "test_langchain_standard.py",
}


# Whole files and the marker each gets; single slow tests in other files carry @pytest.mark.slow.
# `make check` leaves out all four markers (`-m "not slow and not browser and not soak and not
# crash"`); `make test` runs everything. The markers are registered in pyproject.toml.
FILE_MARKERS = {
    "test_browser.py": "browser",  # the real dashboard in chromium (Playwright)
    "test_browser_curation.py": "browser",
    "test_browser_console.py": "browser",  # the operator's console (links, memory page, Recalls, Activity) in chromium  # Conflicts' bulk dismissal and Merges' all-namespaces view, in chromium
    "test_server_docs.py": "browser",  # /docs and /redoc of a real server in chromium, offline
    "test_soak.py": "soak",  # bench.soak: three agent processes and the dashboard for 15 s
    "test_crash.py": "crash",  # bench.crash: writers killed with SIGKILL, and its checks
    "test_server_crash.py": "crash",  # memctl serve killed with SIGKILL under 8 writers
    "test_bench.py": "slow",  # every benchmark at its smallest size
    "test_locomo_bench.py": "slow",  # the LoCoMo benchmark on a tiny conversation
    "test_concurrency.py": "slow",  # real processes racing for one bank file
    "test_pg_store.py": "postgres",  # the PostgreSQL store: processes, migrate, two servers
    "test_pg_servers.py": "postgres",  # two real memctl serve over one database: staleness, read-your-writes
    "test_namespace_transactions.py": "postgres",  # no write transaction over two namespaces (audited)
    "test_server_workers.py": "postgres",  # memctl serve --workers 2 over one database
    "test_pg_server_faults.py": "crash",  # SIGKILL of a server, a PostgreSQL restart (marked postgres too)
    "test_detection_quality.py": "slow",  # conflict detection measured on the whole demo set
    "test_server_fuzz.py": "slow",  # generated requests against a real server (schemathesis)
    "test_served_dashboard.py": "slow",  # every page while a server takes 8 writers
}


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    missing = [name for name in FILE_MARKERS if not (here / name).exists()]
    if missing:  # a renamed file would otherwise silently lose its marker and slow `make check`
        raise pytest.UsageError(f"conftest.FILE_MARKERS names files that are not in tests/: {missing}")
    for item in items:
        marker = FILE_MARKERS.get(item.path.name)
        if marker:
            item.add_marker(getattr(pytest.mark, marker))


@pytest.fixture(scope="session")
def embedder():
    """The default model (multilingual-e5-small), loaded once for the whole run. Test files that
    read MiniLM's cosines override this fixture with their own."""
    return get_embedder()


def pytest_generate_tests(metafunc):
    if "store_kind" in metafunc.fixturenames and metafunc.definition.path.name in BOTH_STORES:
        metafunc.parametrize("store_kind", ["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)],
                             indirect=True, scope="module")


@pytest.fixture(scope="session")
def store_kind(request) -> str:
    """Which store the test's bank is in: "duckdb" (a file), or "postgres" in the files of
    BOTH_STORES, whose tests run on each."""
    return getattr(request, "param", "duckdb")


@pytest.fixture(scope="session")
def pg_server() -> str:
    """The test PostgreSQL server's admin URL; the test fails (never skips) when it is down."""
    why = stores.check_server()
    if why is not None:
        pytest.fail(why, pytrace=False)
    return stores.ADMIN_URL


@pytest.fixture(scope="session")
def pg_databases(pg_server):
    """Make test databases (``make()`` returns a URL); those still there are dropped at the end."""
    made: list[str] = []

    def make() -> str:
        url = stores.create_database()
        made.append(url)
        return url

    yield make
    for url in made:
        stores.drop_database(url)


@pytest.fixture
def pg_url(pg_databases) -> Iterator[str]:
    """A new empty database ``memctl_test_<random>`` for this test, dropped after it."""
    url = pg_databases()
    yield url
    stores.drop_database(url)


@pytest.fixture
def bank_path(store_kind: str, tmp_path: Path, request) -> Path | str:
    """Where the test's bank goes: a file in a temp folder, or a new PostgreSQL database's URL."""
    if store_kind == "postgres":
        return request.getfixturevalue("pg_url")
    return tmp_path / "bank.duckdb"


@pytest.fixture
def bank(bank_path: Path | str, embedder):
    """An empty bank (in a temp folder, or a new PostgreSQL database), closed after the test."""
    b = MemoryBank.open(bank_path, embedder=embedder)
    yield b
    b.close()


@pytest.fixture
def llm_server():
    """A real OpenAI-compatible HTTP stand-in on 127.0.0.1 (see llm_server.py)."""
    from llm_server import stand_in_llm

    yield from stand_in_llm()


@pytest.fixture(scope="session")
def demo_labeled(tmp_path_factory):
    """The demo memories in a bank, with the answer key's turns imported as the label set "demo".

    Built once per run (the 753 memories are embedded once) by ``memory_core.demo.build``, without
    the replayed recall history, so access counts and the retrieval log stay empty. Returns (bank
    path, truth, queries). Tests that change the bank work on a copy (see copy_bank).
    """
    from memory_core import demo
    from memory_core.embedding.embedder import MINILM_MODEL

    path = tmp_path_factory.mktemp("demo") / "demo.duckdb"
    # MiniLM by name, not the ``embedder`` fixture: a session fixture takes the first requester's
    # override, and the demo's labels and the tuner's ranges were measured with MiniLM.
    with MemoryBank.open(path, embedder=get_embedder(MINILM_MODEL)) as bank:
        demo.build(bank, replay=False, detect_conflicts=False)
    return path, demo.truth(), demo.queries()


@pytest.fixture
def copy_bank(tmp_path):
    """Copy a bank file (not its index cache) into this test's folder, so the test may change it."""
    import shutil

    def copy(path: Path) -> Path:
        dest = tmp_path / Path(path).name
        shutil.copy(path, dest)
        return dest

    return copy


# What each schema migration added, to take a file back to an older version: what a bank written
# by an older memory_core looks like. A new migration adds its undo here.
def _vectors_as_real_arrays(con, pg: bool) -> None:
    """Version 9's undo: a PostgreSQL bank's vectors back from bytes to REAL[] (DuckDB: nothing)."""
    if not pg:
        return
    import numpy as np

    rows = con.execute("SELECT id, embedding FROM memories WHERE embedding IS NOT NULL").fetchall()
    con.execute("ALTER TABLE memories ADD COLUMN embedding_real REAL[]")
    for mid, data in rows:
        values = np.frombuffer(bytes(data), dtype="<f4").tolist()
        con.execute("UPDATE memories SET embedding_real = %s WHERE id = %s", [values, mid])
    con.execute("ALTER TABLE memories DROP COLUMN embedding")
    con.execute("ALTER TABLE memories RENAME COLUMN embedding_real TO embedding")


def _keys_without_namespace(con, pg: bool) -> None:
    """Version 10's undo: PostgreSQL's tenant keys back to the id alone (DuckDB: nothing)."""
    from memory_core.storage.schema import TENANT_KEYS

    if pg:
        for table, key in TENANT_KEYS.items():
            con.execute(f"ALTER TABLE {table} DROP CONSTRAINT {table}_pkey, ADD PRIMARY KEY ({key})")


_UNDO_MIGRATION = {
    12: ["ALTER TABLE memories DROP COLUMN language", "DELETE FROM meta WHERE key = 'language_unread'"],
    11: ["ALTER TABLE memories DROP COLUMN durability", "DELETE FROM meta WHERE key = 'durability_unread'"],
    10: [_keys_without_namespace],
    9: [_vectors_as_real_arrays],
    8: ["ALTER TABLE events DROP COLUMN namespace", "ALTER TABLE retrieval_hits DROP COLUMN namespace",
        "ALTER TABLE feedback_hits DROP COLUMN namespace"],
    7: ["DROP TABLE tokens"],
    6: ["ALTER TABLE memories DROP COLUMN use_count"],
    5: ["ALTER TABLE memories DROP COLUMN context"],
    4: ["DROP TABLE labels", "DELETE FROM meta WHERE key = 'next_label_id'"],
    3: ["DROP TABLE feedback", "DROP TABLE feedback_hits", "DROP TABLE ablation_runs", "DROP TABLE ablation_cases",
        "DELETE FROM meta WHERE key = 'next_ablation_run_id'"],
}


def downgrade(path: Path | str, version: int) -> None:
    """Take the bank at ``path`` (closed: a file, or a PostgreSQL URL) back to schema ``version``."""
    import duckdb

    from memory_core.storage.schema import SCHEMA_VERSION

    assert set(_UNDO_MIGRATION) == set(range(3, SCHEMA_VERSION + 1)), "a migration has no undo in conftest"
    if stores.is_pg(path):
        import psycopg

        con = psycopg.connect(path)
        mark = "%s"
    else:
        con = duckdb.connect(str(path))
        mark = "?"
    try:
        for v in range(SCHEMA_VERSION, version, -1):
            for stmt in _UNDO_MIGRATION[v]:
                if callable(stmt):
                    stmt(con, stores.is_pg(path))
                else:
                    con.execute(stmt)
            con.execute(f"DELETE FROM schema_migrations WHERE version = {mark}", [v])
        assert con.execute("SELECT max(version) FROM schema_migrations").fetchone()[0] == version
        if stores.is_pg(path):
            con.commit()
    finally:
        con.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """``memctl serve`` over a fresh bank file, one per test module, with a token each for alice,
    bob, alice read-only, alice and bob, and an admin (their secrets in ``.tokens`` by name);
    stopped cleanly at the module's end."""
    from memctl_server import serve_with_tokens

    path = tmp_path_factory.mktemp("served") / "bank.duckdb"
    server = serve_with_tokens(path, [("alice", ["alice"], False, False), ("bob", ["bob"], False, False),
                                      ("alice-ro", ["alice"], True, False), ("both", ["alice", "bob"], False, False),
                                      ("root", [], False, True)])
    yield server
    assert server.stop() == 0, server.output()
