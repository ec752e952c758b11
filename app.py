"""Memory Console: the operator dashboard.

    streamlit run app.py -- --bank data/memory.duckdb    (or MEMCTL_BANK=...; the default, as for memctl)
"""

from __future__ import annotations

import os

import streamlit as st

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from dashboard.common import (PAGES, bank_path, get_bank, model_caption, page_file, readable_errors,  # noqa: E402
                              require_password)

st.set_page_config(page_title="Memory Console", page_icon="🧠", layout="wide")

page = st.navigation([st.Page(page_file(module), title=title, icon=icon, default=i == 0)
                      for i, (module, title, icon) in enumerate(PAGES)])
require_password()  # pages check again through get_bank(): a page may also run on its own (tests)

bank = get_bank()
with st.sidebar:
    st.caption(f"Bank `{bank_path()}`")
    with readable_errors():
        name, _ = bank.active_preset()
        st.caption(f"{model_caption(bank)} · active preset **{name}**")
# A page's reads share one hand-over of the bank file from a server writing it (see keep_store).
with bank.keep_store():
    page.run()
