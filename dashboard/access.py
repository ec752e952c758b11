"""Access: the tokens agents use with `memctl serve` (REST and MCP); create, rotate or revoke one."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Callable

import pandas as pd
import streamlit as st

from memory_core import MemoryCoreError, Token
from dashboard.common import get_bank, readable_errors

bank = get_bank()
st.title("Access")
st.caption("Agents reach the bank through `memctl serve` (REST at /v1, MCP at /mcp) with a bearer token. "
           "Each token may use only its namespaces, read-only or read and write; an admin token may use "
           "every namespace. Secrets are stored hashed: a new token's secret is shown once, here.")


ACTIVE_DAYS = 30  # the window of the table's counts


def _when(moment: datetime | None) -> str:
    """A time of use for the table: "never" rather than the empty cell a missing time would show ("None")."""
    return "never" if moment is None else f"{moment:%Y-%m-%d %H:%M} UTC"


def _access(token: Token) -> str:
    if token.admin:
        return "admin: every namespace" + (", read-only" if token.read_only else "")
    return "read-only" if token.read_only else "read and write"


def _on_click(action: Callable[[Any], str | None]) -> Callable[[], None]:
    """A button's callback: ``action(session state)``, whose message (or the error it raised,
    leaving the form as typed, to correct it) the run that follows shows under the title."""
    def run() -> None:
        state = st.session_state
        try:
            message = action(state)
        except MemoryCoreError as exc:
            state["access-flash"] = ("error", f"{exc}")
            return
        if message:
            state["access-flash"] = ("success", message)
    return run


@_on_click
def _create(state: Any) -> None:
    """Create the token the form describes; its secret is shown once, on the run that follows."""
    state["access-secret"] = (*bank.tokens.create(
        state["token-name"].strip(), state["token-namespaces"], read_only=state["token-read-only"],
        admin=state["token-admin"]), "Created")
    state["token-name"], state["token-namespaces"] = "", []
    state["token-read-only"] = state["token-admin"] = False


@_on_click
def _rotate(state: Any) -> None:
    """Give the chosen token a new secret, shown once on the run that follows."""
    state["access-secret"] = (*bank.tokens.rotate(state["revoke-name"]), "New secret for")
    state["revoke-sure"] = False


@_on_click
def _revoke(state: Any) -> str:
    bank.tokens.revoke(state["revoke-name"])
    state["revoke-sure"] = False
    return f"Revoked **{state['revoke-name']}**: requests presenting it are refused from now on."


flash = st.session_state.pop("access-flash", None)
if flash is not None:
    getattr(st, flash[0])(flash[1])
shown = st.session_state.pop("access-secret", None)
if shown is not None:
    token, secret, what = shown
    st.success(f"{what} **{token.name}** ({_access(token)}"
               + (f"; {', '.join(token.namespaces)}" if token.namespaces else "") + ").")
    st.warning("Copy the secret now: it is not stored and cannot be shown again."
               + (" The old secret no longer works." if what != "Created" else ""))
    st.code(secret, language=None)
    st.caption("Agents send it as `Authorization: Bearer <secret>`, MCP clients too.")

with readable_errors():
    tokens = bank.tokens.list()
    activity = bank.tokens.activity(days=ACTIVE_DAYS, names=[t.name for t in tokens])
    if tokens:
        st.dataframe(pd.DataFrame([{
            "name": t.name, "namespaces": ", ".join(t.namespaces) or "(all)", "access": _access(t),
            "created": _when(t.created_at), "last used": _when(activity[t.name].last_used),
            f"changes ({ACTIVE_DAYS} d)": activity[t.name].changes,
            f"recalls ({ACTIVE_DAYS} d)": activity[t.name].recalls} for t in tokens]),
            hide_index=True, width="stretch")
        st.caption(f"Last used and the counts come from the history and the recall log: what agents did "
                   f"with each token (changes include adds), the counts over the last {ACTIVE_DAYS} days.")
    else:
        st.info("No tokens yet: `memctl serve` refuses every request until one exists. Create one below "
                "(or with `memctl token create`).")

    st.subheader("Create a token")
    with st.form("create-token"):
        st.text_input("Name", placeholder="support-agent", key="token-name",
                      help="Who uses it: the history names every change made with it so.")
        st.multiselect("Namespaces", [ns for ns, _ in bank.namespaces()], accept_new_options=True,
                       key="token-namespaces", help="The memories it may use; type a new namespace to add one.")
        c1, c2 = st.columns(2)
        c1.checkbox("Read-only", key="token-read-only", help="Recall and read, but never change a memory.")
        c2.checkbox("Admin", key="token-admin", help="Every namespace, and the admin routes.")
        st.form_submit_button("Create token", type="primary", on_click=_create)

    if tokens:
        st.subheader("Rotate or revoke a token")
        st.caption("Rotating gives the token a new secret (same namespaces and scope, same history); "
                   "revoking removes it. Either way, requests presenting the old secret are refused from "
                   "the next one on, by every server of the bank.")
        c1, c2 = st.columns([2, 1])
        gone = c1.selectbox("Token", [t.name for t in tokens], key="revoke-name")
        last = activity[gone].last_used if gone in activity else None
        c1.caption("Never used." if last is None else
                   f"Last used {last:%Y-%m-%d %H:%M} UTC: an agent using it will be refused.")
        sure = c2.checkbox("I am sure", key="revoke-sure")
        b1, b2, _ = st.columns([1, 1, 4])
        b1.button("Rotate secret", key="rotate", disabled=not sure, on_click=_rotate)
        b2.button("Revoke", key="revoke", disabled=not sure, on_click=_revoke)
