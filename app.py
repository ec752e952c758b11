"""Memory Console dashboard (placeholder until the operator dashboard lands): lists the bank and
tries recall without changing anything.

    streamlit run app.py -- --bank data/demo.duckdb
"""

from __future__ import annotations

import argparse
import os

import pandas as pd
import streamlit as st

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from memory_core import MemoryBank, MemoryCoreError  # noqa: E402


def _bank_path() -> str:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bank", default=os.environ.get("MEMCTL_BANK", "data/demo.duckdb"))
    args, _ = parser.parse_known_args()
    return args.bank


@st.cache_resource
def open_bank(path: str) -> MemoryBank:
    """One bank per dashboard process; it holds the file only during each operation."""
    return MemoryBank.open(path, actor="dashboard")


st.set_page_config(page_title="Memory Console", layout="wide")
path = _bank_path()
st.title("Memory Console")
try:
    bank = open_bank(path)
    stats = bank.stats()
    namespaces = [ns for ns, _ in bank.namespaces()]
except MemoryCoreError as exc:
    st.error(str(exc))
    st.stop()

st.caption(f"Bank `{path}` · model {stats['model']} · active preset **{stats['active_preset']}**")
cols = st.columns(4)
cols[0].metric("active memories", stats["active"])
cols[1].metric("namespaces", stats["namespaces"])
cols[2].metric("recalls logged", stats["retrievals"])
cols[3].metric("empty recalls", stats["empty_retrievals"])

namespace = st.selectbox("namespace", namespaces) if namespaces else None
if namespace is None:
    st.info("This bank is empty. Build the demo bank with `memctl --bank data/demo.duckdb demo`.")
    st.stop()

query = st.text_input("Try a recall (what-if: changes nothing)", placeholder="what should I cook tonight?")
if query.strip():
    hits = bank.recall(query, namespace=namespace, record=False)
    if not hits:
        st.write("No memory clears the threshold: an empty result is a correct answer.")
    else:
        st.dataframe(pd.DataFrame([{"score": round(h.score, 3), **{k: round(v, 3) for k, v in h.components.items()},
                                    "text": h.memory.text} for h in hits]), hide_index=True)

memories = bank.memories(namespace=namespace, status=None, limit=500)
st.subheader(f"Memories of {namespace}")
st.dataframe(
    pd.DataFrame([{"id": m.id, "text": m.text, "category": m.category, "kind": m.kind,
                   "importance": m.importance, "status": m.status, "created": m.created_at,
                   "uses": m.access_count} for m in memories]),
    hide_index=True, width="stretch",
)
