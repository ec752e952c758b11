"""Overview: the bank at a glance (first version: counts, a what-if recall and the memory list)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pages.common import get_bank, namespace_picker, readable_errors

bank = get_bank()
st.title("Memory Console")
with readable_errors():
    stats = bank.stats()
    cols = st.columns(4)
    cols[0].metric("active memories", stats["active"])
    cols[1].metric("namespaces", stats["namespaces"])
    cols[2].metric("recalls logged", stats["retrievals"])
    cols[3].metric("empty recalls", stats["empty_retrievals"])

    namespace = namespace_picker(bank)
    query = st.text_input("Try a recall (what-if: changes nothing)", placeholder="what kind of food do I like?")
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
