"""Merges: clusters of near-duplicate memories, their previewed merged text (editable), merge and undo.

"(all)" plans every namespace small enough to search on each visit (a large one is searched when
picked on its own). By default the clusters are the pair classifier's (merge_pairs): each shows its
confidence (the lowest probability of a pair inside stating one fact); with a cosine threshold set
by hand, the lowest cosine inside. Each shows its signals as the merge engine computes them
(merge.cluster_signals).

Memory text is shown as plain text (st.text), never as markdown: memories may contain markup.
"""

from __future__ import annotations

import streamlit as st

from memory_core import MemoryCoreError, NotFoundError
from memory_core.curation import merge as merge_mod
from dashboard.common import get_bank, memory_link, merge_candidates, namespace_picker, paged, readable_errors

PAGE_SIZE = 20  # clusters drawn at once (each a text box and a button per member)

bank = get_bank()
st.title("Merges")
st.caption("Near-duplicate memories merged into one. The members are kept (status merged) and every merge "
           "can be undone.")


def _key(ids: tuple[int, ...]) -> str:
    return "-".join(map(str, ids))


def _text_for(cluster, preview) -> tuple[str, str, str]:
    """The text the operator settled on, and the path and detail to record with it."""
    text = st.session_state.get(f"merge-text-{_key(cluster.ids)}", preview.text)
    if text.strip() == preview.text.strip():
        return preview.text, preview.path, preview.detail
    return text, "manual", f"edited by the operator from the {preview.path} preview"


def _why(signals: dict) -> str:
    """The cluster's signals in one line (words and numbers are the engine's tokens, not memory text)."""
    words = ", ".join(signals["shared_words"][:12]) or "none"
    numbers = ", ".join(signals["shared_numbers"]) or "none"
    line = (f"Why suggested: cosine {signals['min_cosine']:.2f} lowest, {signals['mean_cosine']:.2f} mean · "
            f"shared words: {words} · shared numbers: {numbers} · languages: {', '.join(signals['languages'])}")
    if signals["numbers_only_in_some"]:
        line += f" · numbers in some members only: {', '.join(signals['numbers_only_in_some'])}"
    return line


with readable_errors():
    # Until the user picks one, the page opens where there is most to merge (what the Overview counts).
    namespace = namespace_picker(bank, allow_all=True, empty=", so there is nothing to merge. Add memories on the Browse page "
                                       "or import them with `memctl import`.",
                                 prefer=lambda names: max(merge_candidates(bank).items(), key=lambda kv: kv[1],
                                                          default=(None, 0))[0]
                                 or st.session_state.get("namespace_choice") or names[0])

    for msg in st.session_state.pop("merges_done", []):
        st.success(msg)

    left, right = st.columns(2)
    defaults = bank.model_defaults
    threshold = None
    if left.checkbox("Set a similarity threshold by hand", key="merge_threshold_on",
                     help="By default, near duplicates are the pairs the calibrated classifier offers (cosines, "
                          "shared words and numbers, nearest neighbours combined). A threshold instead takes "
                          "every pair at least this similar."):
        threshold = left.slider("Similarity threshold", 0.3, 1.0, float(defaults.merge_threshold), 0.01,
                                key="merge_threshold",
                                help=f"Memories at least this similar (cosine, {bank.model.split('/')[-1]}'s scale: "
                                     f"its default is {defaults.merge_threshold:g}) are near duplicates.")
    related = None
    if right.checkbox("Also suggest same-subject clusters", key="merge_related_on",
                      help="A lower threshold that groups memories about one subject (review these closely)."):
        related = right.slider("Same-subject threshold", 0.3, 1.0,
                               min(float(defaults.related_threshold), (threshold or 1.0) - 0.01), 0.01,
                               key="merge_related")
        if related >= (threshold or defaults.merge_threshold):
            st.warning("The same-subject threshold must be lower than the similarity threshold; ignoring it.")
            related = None

    sizes = dict(bank.namespaces())
    size = sizes.get(namespace, 0)
    if namespace is None:
        spaces = [ns for ns, n in sizes.items() if 0 < n < merge_mod.LARGE_NAMESPACE]
        large = [ns for ns, n in sizes.items() if n >= merge_mod.LARGE_NAMESPACE]
        if large:
            st.caption(f"Not searched here (too large to search on every visit; pick one on its own): "
                       f"{', '.join(large)}.")
    elif size >= merge_mod.LARGE_NAMESPACE and not st.checkbox(
            f"Search {namespace} ({size:,} memories) for merge candidates", key=f"merge_large::{namespace}",
            help="Every pair of memories is compared: about a minute per 100,000 memories, on every change "
                 "of the settings above while this is on."):
        st.info(f"{namespace} holds {size:,} memories: searching it for near-duplicates takes a while. "
                "Tick the box above to search it.")
        st.stop()
    else:
        spaces = [namespace]
    where = namespace or "all namespaces"
    plan, found_in = [], {}
    for ns in spaces:
        with st.spinner(f"Comparing the memories of {ns}…"):
            for cluster, preview in bank.plan_merges(ns, threshold=threshold, related_threshold=related,
                                                     client=bank.llm):
                plan.append((cluster, preview))
                found_in[cluster.ids] = ns
    st.subheader(f"Candidate clusters in {where} ({len(plan)})")
    if not plan:
        at = "by the classifier" if threshold is None else f"at threshold {threshold:.2f}"
        st.info(f"No merge candidates in {where} {at}. Set a lower threshold or turn on same-subject clusters to "
                "see more; pick another namespace above.")
    elif st.button(f"Merge all {len(plan)}", key="merge-all", type="primary"):
        bar = st.progress(0.0, text="Merging…")
        done, failed = [], []
        for i, (cluster, preview) in enumerate(plan):
            text, path, detail = _text_for(cluster, preview)
            try:
                record = bank.merge(cluster.ids, text, path=path, detail=detail)
                done.append(f"Merged {len(cluster.ids)} memories into memory {record.merged_id}.")
            except MemoryCoreError as exc:  # one stale cluster must not stop the others; shown below
                failed.append(f"Cluster {list(cluster.ids)}: {exc}")
            bar.progress((i + 1) / len(plan), text=f"Merged {i + 1} of {len(plan)}")
        for msg in failed:
            st.error(msg)
        if not failed:
            st.session_state["merges_done"] = [f"Merged {len(done)} cluster{'s' if len(done) != 1 else ''}."]
            st.rerun()

    numbered = paged(list(enumerate(plan, 1)), "merges_page", PAGE_SIZE, "clusters")
    members = bank.get_many([i for _, (cluster, _) in numbered for i in cluster.ids]) if numbered else {}
    shown_in = {found_in[cluster.ids] for _, (cluster, _) in numbered}
    candidates = {c.id: c for ns in shown_in for c in bank.merge_candidates(ns)}  # their vectors, for the signals
    for n, (cluster, preview) in numbered:
        key = _key(cluster.ids)
        with st.container(border=True):
            sure = cluster.min_similarity if cluster.confidence is None else cluster.confidence
            st.markdown(f"#### Cluster {n} · {cluster.reason} · confidence {sure:.2f}")
            if namespace is None:
                st.caption(f"namespace {found_in[cluster.ids]}")
            if cluster.detail:
                st.caption(cluster.detail)
            if all(i in candidates for i in cluster.ids):
                st.caption(_why(merge_mod.cluster_signals([candidates[i] for i in cluster.ids])))
            for mid in cluster.ids:
                m = members.get(mid)
                if m is None:
                    continue
                st.text(m.text if m.text is not None else "(erased)")
                st.caption(f"{memory_link(m.id, f'memory {m.id}')} · created {m.created_at:%Y-%m-%d} · {m.kind} · importance "
                           f"{m.importance:.2f} · recalled {m.access_count}× · used {m.use_count}×")
            st.text_area("Merged text (edit before merging if you like)", value=preview.text,
                         key=f"merge-text-{key}")
            st.caption(f"preview by {preview.path} ({preview.detail}) · importance {preview.importance:.2f} · "
                       f"{preview.kind} · {preview.category}")
            if st.button("Merge", key=f"merge-{key}"):
                text, path, detail = _text_for(cluster, preview)
                with readable_errors():
                    record = bank.merge(cluster.ids, text, path=path, detail=detail)
                    st.session_state["merges_done"] = [
                        f"Merged {len(cluster.ids)} memories into memory {record.merged_id} (merge {record.id})."]
                    st.rerun()

    st.subheader("Past merges")
    past = bank.merges(namespace=namespace)
    if not past:
        st.caption(f"No merges in {where} yet.")
    merged: dict = {}
    for r in past[:50]:
        if r.undone_at is None:  # an undone merge's memory is gone
            try:
                merged[r.merged_id] = bank.get(r.merged_id)
            except NotFoundError:
                pass
    for r in past[:50]:
        with st.container(border=True):
            info, action = st.columns([5, 1])
            state = f"undone {r.undone_at:%Y-%m-%d %H:%M}" if r.undone_at else "active"
            info.markdown(f"Merge {r.id} · {r.created_at:%Y-%m-%d %H:%M} · members "
                          f"{', '.join(memory_link(i, str(i)) for i in r.member_ids)} "
                          f"→ {memory_link(r.merged_id, f'memory {r.merged_id}')} · {r.path} · {state}")
            m = merged.get(r.merged_id)
            if m is not None and m.text is not None:
                info.text(m.text)
            if r.undone_at is None and action.button("Undo", key=f"undo-merge-{r.id}"):
                with readable_errors():
                    bank.undo_merge(r.id)
                    st.session_state["merges_done"] = [f"Merge {r.id} undone: its members are back."]
                    st.rerun()
