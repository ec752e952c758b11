"""Memory Console: the operator dashboard.

    streamlit run app.py -- --bank data/demo.duckdb      (or MEMCTL_BANK=...; default: the demo bank)
"""

from __future__ import annotations

import os

import streamlit as st

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from pages.common import bank_path, get_bank, model_caption, readable_errors, require_password  # noqa: E402

st.set_page_config(page_title="Memory Console", page_icon="🧠", layout="wide")

HERE = os.path.dirname(os.path.abspath(__file__))
PAGES = [  # (module in pages/, title, icon); the first is the home page
    ("overview", "Overview", "🏠"),
    ("browse", "Browse", "🔎"),
    ("tune", "Tune", "🎚️"),
    ("conflicts", "Conflicts", "⚖️"),
    ("merges", "Merges", "🧩"),
    ("maintenance", "Maintenance", "🧹"),
    ("usage", "Usage", "📈"),
    ("evaluate", "Evaluate", "🧪"),
    ("access", "Access", "🔑"),
]
page = st.navigation([
    st.Page(f"pages/{module}.py", title=title, icon=icon, default=i == 0)
    for i, (module, title, icon) in enumerate(PAGES) if os.path.exists(os.path.join(HERE, "pages", f"{module}.py"))
])
require_password()  # pages check again through get_bank(): a page can be reached by its URL alone

bank = get_bank()
with st.sidebar:
    st.caption(f"Bank `{bank_path()}`")
    with readable_errors():
        name, _ = bank.active_preset()
        st.caption(f"{model_caption(bank)} · active preset **{name}**")
# A page's reads share one hand-over of the bank file from a server writing it (see keep_store).
with bank.keep_store():
    page.run()
