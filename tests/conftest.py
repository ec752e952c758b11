"""Shared fixtures: the real embedding model (loaded once per run) and banks in temp folders."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# CI explores the same examples every run, so a red build is reproducible; local runs keep
# exploring new ones (that is how a word-boundary bug in the gate was found).
settings.register_profile("ci", derandomize=True, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).parent))  # for the stand-in LLM server module

from streamlit import config as _st_config  # noqa: E402

# AppTest runs the pages without a server; they refuse to serve on any address but loopback
# without a password, so the tests say where the dashboard listens, whatever the working folder.
_st_config.set_option("server.address", "127.0.0.1")

from memory_core import MemoryBank  # noqa: E402
from memory_core.embed import get_embedder  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"


@pytest.fixture(scope="session")
def embedder():
    """The bundled all-MiniLM-L6-v2, loaded once for the whole run (about 6 s)."""
    return get_embedder()


@pytest.fixture
def bank_path(tmp_path: Path) -> Path:
    return tmp_path / "bank.duckdb"


@pytest.fixture
def bank(bank_path: Path, embedder):
    """An empty bank in a temp folder, closed after the test."""
    b = MemoryBank.open(bank_path, embedder=embedder)
    yield b
    b.close()


@pytest.fixture
def llm_server():
    """A real OpenAI-compatible HTTP stand-in on 127.0.0.1 (see llm_server.py)."""
    from llm_server import stand_in_llm

    yield from stand_in_llm()
