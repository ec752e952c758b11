"""What every dashboard page shares: the bank, the namespace picker, readable errors.

Pages stay thin: they read widgets, call memory_core and render. No SQL and no scoring here.
"""

from __future__ import annotations

import argparse
import contextlib
import hmac
import ipaddress
import logging
import math
import os
from typing import Any, Callable, Iterator

import streamlit as st

from memory_core import LOAD_PROGRESS_MIN, BankLockedError, BankReadOnlyError, MemoryBank, MemoryCoreError
from memory_core.curation import merge

DEFAULT_BANK = "data/memory.duckdb"  # the default of every face (memctl, MemoryBank.open, serve)
# The dashboard's pages in the navigation's order, the first its home: (module in dashboard/, title, icon).
PAGES = [
    ("overview", "Overview", "🏠"),
    ("browse", "Browse", "🔎"),
    ("tune", "Tune", "🎚️"),
    ("conflicts", "Conflicts", "⚖️"),
    ("merges", "Merges", "🧩"),
    ("maintenance", "Maintenance", "🧹"),
    ("recalls", "Recalls", "🔁"),
    ("activity", "Activity", "🕘"),
    ("usage", "Usage", "📈"),
    ("evaluate", "Evaluate", "🧪"),
    ("access", "Access", "🔑"),
    ("memory", "Memory", "🧠"),
]


def page_file(module: str) -> str:
    """A page's script, relative to app.py's folder (as st.Page and AppTest.switch_page take it)."""
    return f"dashboard/{module}.py"
log = logging.getLogger("memory_console.dashboard")


def bank_path() -> str:
    """The bank chosen by `-- --bank PATH` on the streamlit command line, MEMCTL_BANK, or data/memory.duckdb."""
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
    """The dashboard's bank, or a readable error and a stopped page.

    Every page starts here, so the password check runs whichever way a page is reached (app.py's
    navigation, or a page run on its own as tests do). The folder is not named ``pages/``: Streamlit
    would serve the files of one so named by URL, with a navigation of its own, before app.py ran.
    """
    require_password()
    path = bank_path()
    try:
        return _open(path)
    except MemoryCoreError as exc:
        st.error(f"Cannot open the bank `{path}`: {exc}")
        st.info("Build the demo bank with `make demo` (or `memctl demo --if-empty`), "
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


def ensure_loaded(bank: MemoryBank, namespace: str) -> None:
    """Load a large namespace's index under a progress bar before its first recall (a million
    memories take seconds to a minute; without it the page would just hang)."""
    if bank.namespace_loaded(namespace):
        return
    total = bank.count(namespace=namespace)
    if total < LOAD_PROGRESS_MIN:
        return
    label = f"Loading the index of {namespace} ({total:,} memories)…"
    bar = st.progress(0.0, text=label)
    done = [0]

    def step(n: int) -> None:
        done[0] += n
        bar.progress(min(1.0, done[0] / total), text=label)

    bank.load_namespace(namespace, progress=step)
    bar.empty()


def paged(items: list, key: str, page_size: int, noun: str) -> list:
    """The page of ``items`` to draw, with a page picker when there is more than one page: a long
    list of cards, each a dozen widgets, takes minutes to draw at once."""
    if len(items) <= page_size:
        return items
    n_pages = math.ceil(len(items) / page_size)
    page_no = min(int(st.selectbox("Page", list(range(1, n_pages + 1)), key=key) or 1), n_pages)
    first = (page_no - 1) * page_size
    st.caption(f"Showing {noun} {first + 1}–{min(first + page_size, len(items))} of {len(items)}.")
    return items[first:first + page_size]


def model_caption(bank: MemoryBank) -> str:
    """The bank's embedding model as every page names it (the sidebar, the Tune page): scores and
    thresholds are on that model's cosine scale, and cross-language recall depends on it."""
    return f"Embedding model **{bank.model.split('/')[-1]}**"


# -- state in the URL ---------------------------------------------------------------------------
# Widgets whose value belongs in a shared link are bound to a query parameter of the same name as
# their key (``bind="query-params"``: Streamlit reads it on load and writes it on change). A bound
# widget drops a value it cannot take silently; the page checks the raw value first with
# ``check_param`` so a bad link says what was wrong instead of quietly showing something else.

def url_param(name: str) -> str | None:
    """The raw value of ``?name=`` in this page's URL, or None; a repeated parameter (a bound date
    range is ``?created=2025-01-01&created=2025-12-31``) comes back joined by commas."""
    values = [str(v) for v in st.query_params.get_all(name) if v not in (None, "")]
    return ",".join(values) if values else None


def bad_link(message: str) -> None:
    """Say on the page that a part of the link was not understood (never a stack trace)."""
    st.warning(f"This link has a value the page cannot use: {message}", icon="🔗")


def set_param(name: str, value: str | None) -> None:
    """Write ``?name=value`` (None: remove it) only when it changes: each write sends the page's
    whole query string as the server knows it, and an unchanged write would drop the values bound
    widgets put there since."""
    if st.query_params.get(name) != value:
        if value is None:
            st.query_params.pop(name, None)
        else:
            st.query_params[name] = value


def check_param(name: str, valid: Callable[[str], bool], expected: str) -> bool:
    """True unless ``?name=`` is present and not ``valid``; then a message naming what it may be."""
    raw = url_param(name)
    if raw is None:
        return True
    try:
        ok = bool(valid(raw))
    except (ValueError, TypeError):
        ok = False
    if not ok:
        bad_link(f"`{name}={raw[:80]}`: {expected}. It is ignored.")
    return ok


def check_choice_param(name: str, options: Any, noun: str) -> bool:
    """``check_param`` for a value that must be one of ``options``."""
    options = [str(o) for o in options]
    return check_param(name, lambda raw: raw in options, f"the {noun} must be one of {', '.join(options)}")


def linked_select(where: Any, label: str, options: list, key: str, *, noun: str, index: int = 0,
                  format_func: Callable[[Any], str] = str, help: str | None = None) -> Any:
    """A selectbox whose choice is ``?key=`` in the URL, for labels that change with the data
    (a facet's counts): a bound widget would store the label, so this one stores the option itself.
    The link's value is read when the widget first appears; a bad one is named on the page. The
    first option is the default, left out of the URL."""
    raw = url_param(key)
    if key not in st.session_state and raw is not None and check_choice_param(key, options, noun):
        index = [str(o) for o in options].index(raw)
    choice = where.selectbox(label, options, index=index, key=key, format_func=format_func, help=help)
    set_param(key, None if choice == options[0] else str(choice))  # the default keeps the link short
    return choice


def memory_href(memory_id: int) -> str:
    """The URL of one memory's page, relative to the dashboard (what every memory id links to)."""
    return f"./memory?id={int(memory_id)}"


def memory_link(memory_id: int, label: str | None = None) -> str:
    """A markdown link to one memory's page (the label is an id or fixed words, never memory text)."""
    return f"[{label or f'#{int(memory_id)}'}]({memory_href(memory_id)})"


def id_column(label: str = "id") -> Any:
    """A dataframe column of memory page URLs shown as their ids (rows hold ``memory_href(id)``)."""
    return st.column_config.LinkColumn(label, display_text=r"id=(\d+)", width=48,
                                       help="Opens the memory's own page")


def _chose_namespace(key: str) -> None:
    """The user picked a namespace: every page opens on it from now on (see namespace_picker)."""
    st.session_state["namespace_choice"] = st.session_state[key]
    st.session_state["namespace_chosen"] = True


def namespace_picker(bank: MemoryBank, key: str = "namespace", allow_all: bool = False,
                     empty: str = "Add one on the Browse page, or import with `memctl import`.",
                     prefer: Callable[[list[str]], str | None] | None = None) -> str | None:
    """A sidebar-remembered namespace choice; None means every namespace (when allowed).

    A page opens on the namespace the user last picked on any page; until they pick one, on the
    one ``prefer`` names among the bank's (the page's own reason, such as where there is
    something to do), else on the namespace the last page showed, else the first.
    On a bank without memories it shows "This bank has no memories yet" and ``empty`` (what to do
    on this page) and stops the page.
    """
    names = [ns for ns, _ in bank.namespaces()]
    options = (["(all)"] if allow_all else []) + names
    if not names:
        st.info(f"This bank has no memories yet{'' if empty[0] in ',:;' else '. '}{empty}")
        st.stop()
    current = st.session_state.get("namespace_choice")
    linked = url_param("ns")
    if key not in st.session_state and linked is not None:  # a reload or a shared link names one
        if linked in options:
            current = linked
            st.session_state["namespace_chosen"] = True
        else:
            bad_link(f"the namespace `{linked[:80]}` is not in this bank (it has "
                     f"{', '.join(names[:8])}{'…' if len(names) > 8 else ''}). Showing another one.")
    if prefer is not None and key not in st.session_state and not st.session_state.get("namespace_chosen"):
        current = prefer(names) or current  # asked only when the page opens: the choice then stays put
    index = options.index(current) if current in options else 0
    choice = st.selectbox("Namespace", options, index=index, key=key, on_change=_chose_namespace, args=(key,))
    st.session_state["namespace_choice"] = choice
    set_param("ns", choice)
    return None if choice == "(all)" else choice


@st.cache_data(ttl=300, show_spinner="Looking for merge candidates…")
def _merge_candidates(path: str, change_seq: int) -> dict[str, int]:
    del change_seq  # the cache key: this bank, as of this change
    bank = _open(path)
    return {ns: n for ns in (name for name, count in bank.namespaces() if 0 < count < merge.LARGE_NAMESPACE)
            if (n := len(merge.find_clusters(bank.merge_candidates(ns), model=bank.model)))}


def merge_candidates(bank: MemoryBank) -> dict[str, int]:
    """Clusters of near-duplicates (at the model's default threshold) per namespace that has any,
    among those small enough to search on every visit (see ``merge.LARGE_NAMESPACE``); shared by
    the Overview and the Merges page, recomputed only when the bank changed."""
    return _merge_candidates(bank_path(), bank.stats()["change_seq"])


THRESHOLD_LABEL_ROOM = 26  # px above a chart's plot area for one threshold label


def threshold_line(fig: Any, x: float, label: str, span: tuple[float, float], row: int = 0) -> None:
    """A dashed red line at a threshold on the x axis, its label above the plot area (in the top
    margin, which the caller leaves ``THRESHOLD_LABEL_ROOM`` px per label for): inside it, the label
    covered bars. ``span`` is the x range drawn; the label runs from the line towards its middle,
    so it is not cut at either edge. ``row`` stacks the labels of several thresholds."""
    fig.add_vline(x=x, line_dash="dash", line_color="red")
    lo, hi = span
    fig.add_annotation(x=x, xref="x", y=1, yref="paper", yanchor="bottom", yshift=4 + 18 * row,
                       xanchor="left" if x <= (lo + hi) / 2 else "right", text=label, showarrow=False,
                       font={"color": "red", "size": 12})


PASSWORD_ENV = "MEMCTL_DASHBOARD_PASSWORD"


def configured_password() -> str | None:
    """The dashboard password: MEMCTL_DASHBOARD_PASSWORD, or `dashboard_password` in Streamlit's
    secrets. None means no password (the default, for a dashboard on 127.0.0.1)."""
    if os.environ.get(PASSWORD_ENV):
        return os.environ[PASSWORD_ENV]
    try:
        return st.secrets.get("dashboard_password") or None
    except Exception:  # no secrets file at all is the normal case
        return None


def password_matches(given: str) -> bool:
    """Constant-time comparison, so response times do not leak how much of a guess was right."""
    expected = configured_password()
    return expected is not None and hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def signed_in() -> bool:
    """True when no password is configured or this browser tab gave it."""
    return configured_password() is None or bool(st.session_state.get("signed_in"))


def is_loopback(address: str | None) -> bool:
    """Does the dashboard listen on this machine only? Streamlit listens on every interface when
    ``server.address`` is unset or empty, so those are not loopback."""
    if not address:
        return False
    if address.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip().strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve to anything


def exposure_problem() -> str | None:
    """Why the dashboard must not serve, or None: listening beyond 127.0.0.1 without a password."""
    address = st.get_option("server.address")
    if is_loopback(address) or configured_password() is not None:
        return None
    where = f"on {address}" if address else "on every network interface (server.address is not set)"
    return (f"The dashboard refuses to serve {where} without a password: anyone who can reach it could read "
            f"and erase memories. Set {PASSWORD_ENV} (or dashboard_password in .streamlit/secrets.toml), or "
            "listen on this machine only with --server.address 127.0.0.1.")


def require_safe_binding() -> None:
    """Stop every page (with a clear message and a log line) when exposed without a password."""
    problem = exposure_problem()
    if problem is None:
        return
    log.error(problem)
    st.error(problem)
    st.stop()


def require_password() -> None:
    """Refuse to serve when exposed without a password; when a password is configured, show a
    sign-in form and stop the page until it is given."""
    require_safe_binding()
    if signed_in():
        return
    st.title("Memory Console")
    with st.form("sign_in"):
        given = st.text_input("Password", type="password")
        submitted = st.form_submit_button("Sign in")
    if submitted:
        if password_matches(given):
            st.session_state["signed_in"] = True
            st.rerun()
        st.error("Wrong password.")
    st.stop()
