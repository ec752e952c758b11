"""What every dashboard page shares: the bank, the namespace picker, readable errors.

Pages stay thin: they read widgets, call memory_core and render. No SQL and no scoring here.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import Iterator

import streamlit as st

from memory_core import BankLockedError, BankReadOnlyError, MemoryBank, MemoryCoreError

DEFAULT_BANK = "data/demo.duckdb"


def bank_path() -> str:
    """The bank chosen by `-- --bank PATH` on the streamlit command line, MEMCTL_BANK, or the demo bank."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--bank", default=os.environ.get("MEMCTL_BANK", DEFAULT_BANK))
    args, _ = parser.parse_known_args()
    return args.bank


@st.cache_resource(show_spinner="Opening the bank…")
def _open(path: str) -> MemoryBank:
    # One bank per dashboard process; it holds the file only during each operation, so an agent
    # can write to the same bank while the dashboard is open.
    return MemoryBank.open(path, actor="dashboard")


def get_bank() -> MemoryBank:
    """The dashboard's bank, or a readable error and a stopped page."""
    path = bank_path()
    try:
        return _open(path)
    except MemoryCoreError as exc:
        st.error(f"Cannot open the bank `{path}`: {exc}")
        st.info("Build the demo bank with `make demo` (or `memctl --bank data/demo.duckdb demo`), "
                "or start the dashboard with `streamlit run app.py -- --bank PATH`.")
        st.stop()


@contextlib.contextmanager
def readable_errors() -> Iterator[None]:
    """Show memory_core's errors as messages that say what to do, never as a stack trace."""
    try:
        yield
    except BankLockedError as exc:
        st.warning(f"The bank is busy: another process holds it. Try again in a moment. ({exc})")
    except BankReadOnlyError as exc:
        st.warning(f"The bank is read-only here: {exc}")
    except MemoryCoreError as exc:
        st.error(str(exc))


def namespace_picker(bank: MemoryBank, key: str = "namespace", allow_all: bool = False) -> str | None:
    """A sidebar-remembered namespace choice; None means every namespace (when allowed)."""
    names = [ns for ns, _ in bank.namespaces()]
    options = (["(all)"] if allow_all else []) + names
    if not names:
        st.info("This bank has no memories yet. Add one on the Browse page, or import with `memctl import`.")
        st.stop()
    current = st.session_state.get("namespace_choice")
    index = options.index(current) if current in options else 0
    choice = st.selectbox("Namespace", options, index=index, key=key)
    st.session_state["namespace_choice"] = choice
    return None if choice == "(all)" else choice
