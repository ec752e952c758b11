"""The dashboard in a real browser: every page renders, Tune reacts, Conflicts resolves, memory text is inert.

Runs the real `streamlit run app.py` on a small temp bank and drives Debian's chromium
(/usr/bin/chromium, or $CHROMIUM) with Playwright's sync API. Screenshots go to test-artifacts/.
`make browser` (run by `make test`) installs chromium and the CJK and emoji fonts when missing; a
developer without chromium gets a clear failure.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlparse

import pytest

from memory_core import MemoryBank

ROOT = Path(__file__).resolve().parent.parent
PAGES_DIR = ROOT / "dashboard"
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
XSS = '<script>window.__pwned=1</script> **bold** <img src="http://example.invalid/x.png">'
XSS_TEXT = f"Note from a chat: {XSS}"
TUNE_QUERY = "what does she drink in the morning"

# module in dashboard/ -> (title in the sidebar nav, text the page shows once it has run)
PAGES = {
    "overview": ("Overview", "Memory Console"),
    "browse": ("Browse", "Browse memories"),
    "tune": ("Tune", "Tune recall"),
    "conflicts": ("Conflicts", "Open conflicts"),
    "merges": ("Merges", "Merges"),
    "maintenance": ("Maintenance", "Maintenance"),
    "usage": ("Usage", "Usage"),
    "evaluate": ("Evaluate", "Evaluate"),
    "access": ("Access", "Create a token"),
    "memory": ("Memory", "Open a memory by its id"),
    "recalls": ("Recalls", "What agents asked"),
    "activity": ("Activity", "Every change to the bank"),
}
PAGE_FILES = sorted(p.stem for p in PAGES_DIR.glob("*.py") if p.stem not in {"common", "__init__"})

try:
    from playwright.sync_api import Page, expect, sync_playwright
except ImportError:  # pragma: no cover - the test extra is installed in the venv
    sync_playwright = None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ago(days: float) -> datetime:
    return datetime.now(timezone.utc) - timedelta(days=days)


def _fill(bank: MemoryBank) -> dict[str, int]:
    """Three namespaces, one open conflict (tea vs coffee), a markup memory, logged recalls."""
    older, newer, xss = bank.add_many([
        {"text": "Drinks tea every morning", "namespace": "alice", "created_at": _ago(40),
         "category": "preference"},
        {"text": "Switched from tea to coffee in the morning", "namespace": "alice", "created_at": _ago(3),
         "category": "preference"},
        {"text": XSS_TEXT, "namespace": "alice", "created_at": _ago(5)},
    ])
    bank.add_many([
        {"text": "Prefers vegetarian food for dinner", "namespace": "alice", "importance": 0.8,
         "category": "preference", "created_at": _ago(60)},
        {"text": "Her daughter is called Mia", "namespace": "alice", "importance": 1.0, "category": "fact",
         "created_at": _ago(120)},
        {"text": "Moved to Berlin in August", "namespace": "alice", "created_at": _ago(20)},
        {"text": "Is learning to play the cello", "namespace": "alice", "importance": 0.6},
        {"text": "Works night shifts", "namespace": "bob"},
        {"text": "Allergic to peanuts", "namespace": "bob", "importance": 0.9, "category": "fact"},
        {"text": "Uses a standing desk", "namespace": "carol"},
    ])
    conflict = bank.record_conflict(older, newer, kind="switch", evidence="tea vs coffee", confidence=0.9,
                                    suggestion="newer_wins", path="rules")
    assert conflict is not None
    bank.recall("what does she drink", namespace="alice")
    bank.recall("vegetarian dinner ideas", namespace="alice")
    bank.recall("where does she live", namespace="alice")
    bank.recall("allergies", namespace="bob")
    return {"older": older, "newer": newer, "xss": xss, "conflict": conflict.id}


# -- fixtures -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser_bank(tmp_path_factory, embedder):
    """A small bank: three namespaces, one open conflict (tea vs coffee), a markup memory, logged recalls.

    Yields (path, ids); at teardown (after the server stopped) checks that "newer wins" really
    superseded the older memory in the file.
    """
    path = tmp_path_factory.mktemp("browser") / "bank.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        ids = _fill(bank)
    older, newer = ids["older"], ids["newer"]
    yield path, ids

    state = _RESOLVED.get("newer_wins")
    with MemoryBank.open(path, embedder=embedder) as bank:
        if state:  # only when the Conflicts test clicked the button
            assert bank.get(older).status == "superseded", bank.get(older)
            assert bank.get(newer).status == "active"
            assert not bank.conflicts(status="open")


_RESOLVED: dict[str, bool] = {}  # set by the Conflicts test, checked in the bank at teardown


@pytest.fixture(scope="module")
def server(browser_bank):
    """`streamlit run app.py -- --bank PATH` on a free port; yields its base URL, kills it at the end."""
    yield from _serve(browser_bank[0])


@pytest.fixture(scope="module")
def guarded_server(browser_bank):
    """The same dashboard with a password."""
    yield from _serve(browser_bank[0], MEMCTL_DASHBOARD_PASSWORD="correct horse")


def _serve(path: Path | str, address: str = "127.0.0.1", log_dir: Path | None = None, **extra_env: str):
    """The dashboard on the bank at ``path`` (a file, or a PostgreSQL URL with ``log_dir``)."""
    port = _free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", **extra_env)
    env.pop("MEMCTL_BANK", None)
    if "MEMCTL_DASHBOARD_PASSWORD" not in extra_env:
        env.pop("MEMCTL_DASHBOARD_PASSWORD", None)
    log = open((log_dir or Path(path).parent) / f"streamlit-{port}.log", "w+b")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", address, "--browser.gatherUsageStats", "false",
         "--", "--bank", str(path)],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                log.seek(0)
                pytest.fail(f"streamlit exited with {proc.returncode}:\n{log.read().decode(errors='replace')}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.read().decode().strip() == "ok":
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                log.seek(0)
                pytest.fail(f"streamlit not healthy after 60 s:\n{log.read().decode(errors='replace')}")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        log.close()


@pytest.fixture(scope="module")
def browser():
    if sync_playwright is None:
        pytest.fail("the Python package `playwright` is not installed in this venv")
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"no chromium at {CHROMIUM}: install it (`apt-get install -y chromium` on Debian; "
                    ".ci/run does it) or point $CHROMIUM at a chromium binary")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


class Tab:
    """One browser tab (its own Streamlit session) that records every request it makes."""

    def __init__(self, page: Page, base_url: str):
        self.page, self.base_url, self.requests = page, base_url, []
        page.on("request", lambda req: self.requests.append(req.url))
        page.on("pageerror", lambda exc: self.page_errors.append(str(exc)))
        self.page_errors: list[str] = []

    def settle(self, timeout: float = 60_000) -> None:
        """Wait until the script has finished running (and stays finished for a moment)."""
        page = self.page
        for _ in range(2):
            page.wait_for_function(
                """() => {
                    const app = document.querySelector('[data-testid="stApp"]');
                    return app && app.getAttribute('data-test-script-state') === 'notRunning'
                        && !document.querySelector('[data-testid="stStatusWidget"] [data-testid="stStatusWidgetRunningIcon"]');
                }""", timeout=timeout)
            page.wait_for_timeout(400)

    def goto(self, module: str) -> None:
        """Open the app's home page, then the page by its link in the sidebar nav."""
        title, marker = PAGES[module]
        page = self.page
        if not page.url.startswith(self.base_url):
            page.goto(self.base_url + "/")
            expect(page.locator('[data-testid="stSidebarNav"]')).to_be_visible(timeout=60_000)
            self.settle()
        link = page.locator('[data-testid="stSidebarNav"] a').filter(has_text=title)
        expect(link, f"dashboard/{module}.py exists but the sidebar nav has no {title!r} link "
                     "(is it listed in app.py's PAGES?)").to_have_count(1)
        link.click()
        self.settle()
        expect(page.locator('[data-testid="stMain"]').get_by_text(marker).first).to_be_visible(
            timeout=60_000)
        self.settle()

    def check_clean(self, name: str) -> None:
        """No exception box, the markup memory stayed inert, nothing was fetched off this host."""
        page = self.page
        exc = page.locator('[data-testid="stException"]')
        assert exc.count() == 0, f"{name}: exception shown:\n" + "\n".join(exc.all_inner_texts())
        assert page.evaluate("window.__pwned") is None, f"{name}: the memory's <script> ran"
        outside = [u for u in self.requests if urlparse(u).hostname not in ("127.0.0.1", "localhost", None)
                   and not u.startswith(("data:", "blob:"))]
        assert not outside, f"{name}: requests left the dashboard: {outside}"
        assert not any("example.invalid" in u for u in self.requests)

    def screenshot(self, name: str) -> Path:
        """A full-page screenshot: the viewport grows to the main area's height (Streamlit scrolls inside it)."""
        page = self.page
        height = page.evaluate("""() => Math.max(document.body.scrollHeight,
            ...[...document.querySelectorAll('[data-testid="stMain"], [data-testid="stAppViewContainer"]')]
                .map(e => e.scrollHeight))""")
        page.set_viewport_size({"width": 1400, "height": min(max(int(height) + 40, 900), 8000)})
        page.wait_for_timeout(500)
        ARTIFACTS.mkdir(exist_ok=True)
        out = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(out), full_page=True)
        page.set_viewport_size({"width": 1400, "height": 900})
        return out


@pytest.fixture
def tab(browser, server):
    yield from _tab(browser, server)


def _tab(browser, url: str):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    # Only the dashboard itself may be reached; anything else is recorded (by Tab) and aborted.
    context.route("**/*", lambda route: route.continue_()
                  if urlparse(route.request.url).hostname in ("127.0.0.1", "localhost") else route.abort())
    page = context.new_page()
    page.set_default_timeout(60_000)
    t = Tab(page, url)
    yield t
    context.close()


def _main(tab: Tab):
    """The page's main area (not the sidebar)."""
    return tab.page.locator('[data-testid="stMain"]')


# -- tests --------------------------------------------------------------------------------------

def test_every_page_file_is_known():
    """Each page module in dashboard/ has an entry here, so no page is skipped silently."""
    unknown = [m for m in PAGE_FILES if m not in PAGES]
    assert not unknown, f"pages without a browser test entry: {unknown}"
    for required in ["overview", "browse", "tune", "conflicts", "merges", "maintenance"]:
        assert required in PAGE_FILES, f"dashboard/{required}.py is missing"


@pytest.mark.parametrize("module", [m for m in PAGES if m != "usage" or (PAGES_DIR / "usage.py").exists()])
def test_page_renders(tab, module):
    if not (PAGES_DIR / f"{module}.py").exists():
        pytest.fail(f"dashboard/{module}.py does not exist (yet): the {PAGES[module][0]} page cannot be tested")
    _check_page(tab, module, module)


def _check_page(tab: Tab, module: str, name: str, active: str | None = "10") -> None:
    """Open a page and check it shows the bank (``active`` memories on the overview; None: at
    least the 10 of the bank, as an agent adds more meanwhile) cleanly."""
    tab.goto(module)
    main = tab.page.locator('[data-testid="stMain"]')
    if module == "overview":
        metric = main.locator('[data-testid="stMetric"]').filter(has_text="active memories")
        if active is not None:
            expect(metric).to_contain_text(active)
        else:
            expect(metric).to_be_visible()
            numbers = re.findall(r"\d+", metric.inner_text().replace(",", ""))
            assert numbers and int(numbers[0]) >= 10, metric.inner_text()
        expect(main.locator('[data-testid="stPlotlyChart"]').first).to_be_visible()
    elif module == "browse":
        expect(main.locator('[data-testid="stDataFrame"]').first).to_be_visible()
    elif module == "conflicts":
        expect(main.get_by_text("Evidence: tea vs coffee")).to_be_visible()
    tab.check_clean(name)
    tab.screenshot(name)
    assert not tab.page_errors, f"{name}: JavaScript errors: {tab.page_errors}"


def test_markup_in_a_memory_is_shown_as_text(tab, browser_bank):
    """Browse filtered to the markup memory, then its own page: its text is shown literally, the script never runs."""
    tab.goto("browse")
    page = tab.page
    box = page.get_by_label("Text contains")
    box.fill("pwned")
    box.press("Enter")
    tab.settle()
    main = page.locator('[data-testid="stMain"]')
    expect(main.get_by_text("1 matching memories", exact=False)).to_be_visible()
    page.goto(f"{tab.base_url}/memory?id={browser_bank[1]['xss']}")
    expect(page.locator('[data-testid="stSidebarNav"]')).to_be_visible(timeout=60_000)
    tab.settle()
    code = main.locator('[data-testid="stCode"]').first
    expect(code).to_be_visible(timeout=60_000)
    expect(code).to_contain_text("<script>window.__pwned=1</script>")
    expect(code).to_contain_text('<img src="http://example.invalid/x.png">')
    assert main.locator("img[src*='example.invalid']").count() == 0
    tab.check_clean("browse-markup")
    tab.screenshot("browse-markup")


def _tune_heading(main) -> str:
    heading = main.locator("h3").filter(has_text="candidates in")
    expect(heading).to_have_count(1)
    return heading.inner_text()


def _nudge(tab: Tab, label: str, key: str) -> None:
    page = tab.page
    slider = page.locator('[data-testid="stSlider"]').filter(
        has=page.get_by_text(label, exact=True)).get_by_role("slider")  # [role=slider] or <input type=range>
    expect(slider).to_have_count(1)
    slider.focus()
    page.keyboard.press(key)
    tab.settle()


def test_tune_ranking_reacts_to_sliders(tab):
    if not (PAGES_DIR / "tune.py").exists():
        pytest.fail("dashboard/tune.py does not exist (yet): the Tune page cannot be tested")
    tab.goto("tune")
    page = tab.page
    main = page.locator('[data-testid="stMain"]')
    query = page.get_by_label("Query", exact=True)
    query.fill(TUNE_QUERY)
    query.press("Enter")
    tab.settle()
    expect(main.locator('[data-testid="stPlotlyChart"]').first).to_be_visible()
    before = _tune_heading(main)
    assert "threshold=1.00" not in before and "k=1," not in before, before
    # the chart's bar labels carry the memory texts; plotly draws them as SVG text
    expect(main.locator('[data-testid="stPlotlyChart"]').first).to_contain_text("tea")

    _nudge(tab, "threshold", "End")  # threshold 1.00: nothing can get in
    after_threshold = _tune_heading(main)
    assert after_threshold.startswith("0 of ") and "threshold=1.00" in after_threshold, after_threshold
    assert after_threshold != before

    _nudge(tab, "threshold", "Home")  # threshold 0.00 ...
    _nudge(tab, "k (top memories returned)", "Home")  # ... and k=1: exactly one gets in
    after_k = _tune_heading(main)
    assert after_k.startswith("1 of ") and "k=1," in after_k and "threshold=0.00" in after_k, after_k
    expect(main.get_by_text("➖ leaves:", exact=False).first).to_be_visible()
    # beside the blend, the model's cosine: a line on how far they agree at this k
    expect(main.get_by_text("Of the top 1, the blend and the model's cosine alone agree on", exact=False)).to_be_visible()
    tab.check_clean("tune")
    tab.screenshot("tune-moved")


def test_conflicts_newer_wins(tab, browser_bank):
    _, ids = browser_bank
    page = tab.page
    page.goto(tab.base_url + "/conflicts?min_confidence=0.95&sort=oldest")  # a shared triage link
    tab.settle()
    main = page.locator('[data-testid="stMain"]')
    expect(main.get_by_text("Open conflicts (0 of 1)")).to_be_visible()
    expect(main.get_by_text("passes the filters", exact=False)).to_be_visible()
    assert "sort=oldest" in page.url
    tab.goto("conflicts")
    page.goto(tab.base_url + "/conflicts?min_confidence=0")
    tab.settle()
    expect(main.get_by_text("Open conflicts (1)")).to_be_visible()
    expect(main.get_by_text("Drinks tea every morning").first).to_be_visible()
    button = main.get_by_role("button", name="Newer wins", exact=True)
    expect(button).to_have_count(1)
    button.click()
    tab.settle()
    expect(main.get_by_text(f"Conflict {ids['conflict']} resolved: Newer wins.")).to_be_visible()
    toast = page.locator('[data-testid="stToast"]').filter(has_text="resolved: Newer wins")
    expect(toast).to_be_in_viewport()  # in view wherever the page was scrolled
    expect(main.get_by_text("Open conflicts (0)")).to_be_visible()
    expect(main.get_by_text("resolved by Newer wins", exact=False)).to_be_visible()
    expect(main.get_by_text(f"older ({ids['older']}, now superseded)", exact=False)).to_be_visible()
    _RESOLVED["newer_wins"] = True
    tab.check_clean("conflicts-resolved")
    tab.screenshot("conflicts-resolved")


def test_a_password_guards_pages_opened_by_url(browser, guarded_server, browser_bank):
    """Every page, even opened by its URL, shows only the sign-in form until the password is given."""
    page = browser.new_page()
    try:
        for module in ("browse", "tune", "conflicts"):
            page.goto(f"{guarded_server}/{module}")
            page.get_by_role("button", name="Sign in").wait_for(timeout=60_000)
            body = page.inner_text("body")
            assert "Prefers" not in body and "Drinks" not in body, f"{module} shows memories before sign-in"
        page.goto(f"{guarded_server}/browse")
        page.get_by_role("button", name="Sign in").wait_for(timeout=60_000)
        page.locator('input[type="password"]').first.fill("wrong")
        page.get_by_role("button", name="Sign in").click()
        page.get_by_text("Wrong password.").wait_for(timeout=30_000)
        assert "Text contains" not in page.inner_text("body")
        page.locator('input[type="password"]').first.fill("correct horse")
        page.get_by_role("button", name="Sign in").click()
        page.get_by_text("Text contains").wait_for(timeout=60_000)
        assert "Wrong password" not in page.inner_text("body")
        # The password is never echoed into a page, nor into the server's log.
        assert "correct horse" not in page.content()
        log = browser_bank[0].parent / f"streamlit-{urlparse(guarded_server).port}.log"
        assert log.exists() and "correct horse" not in log.read_text(errors="replace")
    finally:
        page.close()


def test_a_page_opened_by_its_url_on_a_fresh_dashboard_is_the_dashboards(browser, browser_bank):
    """A bookmarked page after a restart: the server's first session opens it by its URL. It runs
    through app.py (its navigation, the bank in the sidebar), not as a file Streamlit found in a
    folder, listed with the others by file name ("common" among them)."""
    serving = _serve(browser_bank[0])
    url = next(serving)
    page = browser.new_page()
    try:
        page.goto(f"{url}/browse")
        page.get_by_text("Text contains").wait_for(timeout=60_000)
        sidebar = page.get_by_test_id("stSidebar").inner_text()
        assert all(title in sidebar for title, _ in PAGES.values()), sidebar
        assert "common" not in sidebar.lower() and "Bank" in sidebar, sidebar
    finally:
        page.close()
        serving.close()


# -- markup on every page that shows memory text -------------------------------------------------

MARKUP = {  # each carries a script, markdown, an HTML tag and a remote image (HTML and markdown)
    "conflict_a": 'Prefers <b>green tea</b> <script>window.__pwned=1</script> **daily** ![t](http://example.invalid/a.png)',
    "conflict_b": 'Switched from tea to coffee <img src="http://example.invalid/b.png"> **now** <script>window.__pwned=2</script>',
    "duplicate": 'Keeps a diary <script>window.__pwned=3</script> **nightly** ![t](http://example.invalid/c.png)',
    "old": 'Old note <script>window.__pwned=4</script> **faded** <img src="http://example.invalid/d.png">',
}
MARKUP_ACTIONS = {  # page -> what makes it show the memories
    "browse": None, "conflicts": None, "merges": None, "usage": None,
    "tune": ("query", "diary green tea coffee"), "maintenance": ("button", "Dry run"),
}


@pytest.fixture(scope="module")
def markup_bank(tmp_path_factory, embedder):
    path = tmp_path_factory.mktemp("markup") / "markup.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        a, b, _, _, _ = bank.add_many([
            {"text": MARKUP["conflict_a"], "namespace": "mallory", "created_at": _ago(40), "category": "preference"},
            {"text": MARKUP["conflict_b"], "namespace": "mallory", "created_at": _ago(3), "category": "preference"},
            {"text": MARKUP["duplicate"], "namespace": "mallory", "created_at": _ago(20)},
            {"text": MARKUP["duplicate"], "namespace": "mallory", "created_at": _ago(10)},
            {"text": MARKUP["old"], "namespace": "mallory", "created_at": _ago(400), "importance": 0.1},
        ], dedupe=False)  # the duplicate twice on purpose: the Merges page shows it
        bank.record_conflict(a, b, kind="switch", evidence="tea vs coffee", confidence=0.9,
                             suggestion="newer_wins", path="rules")
        for q in ("diary", "green tea", "coffee"):
            bank.recall(q, namespace="mallory", threshold=0.0)
    return path


@pytest.fixture(scope="module")
def markup_server(markup_bank):
    yield from _serve(markup_bank)


@pytest.mark.parametrize("module", list(MARKUP_ACTIONS))
def test_markup_in_memories_is_inert_on_every_page(browser, markup_server, module):
    """Scripts do not run, markdown and HTML do not render, remote images are not fetched."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.route("**/*", lambda route: route.continue_()
                  if urlparse(route.request.url).hostname in ("127.0.0.1", "localhost") else route.abort())
    page = context.new_page()
    page.set_default_timeout(60_000)
    tab = Tab(page, markup_server)
    try:
        tab.goto(module)
        action = MARKUP_ACTIONS[module]
        if action and action[0] == "query":
            box = page.get_by_label("Query", exact=True)
            box.fill(action[1])
            box.press("Enter")
            tab.settle()
        elif action:
            page.locator('[data-testid="stMain"]').get_by_role("button", name=action[1], exact=True).click()
            tab.settle()
        main = page.locator('[data-testid="stMain"]')
        if module in ("browse", "conflicts", "merges", "tune"):  # these show the text in the page itself
            expect(main.get_by_text("<script>window.__pwned", exact=False).first).to_be_attached()
        if module == "tune":  # Plotly draws <b> in a label as bold SVG text; escaped, it shows as typed
            expect(main.locator('[data-testid="stPlotlyChart"]').first).to_contain_text("<b>green tea</b>")
        for word in ("daily", "now", "nightly", "faded", "green tea"):  # **x** and <b>x</b> stay as typed
            assert main.locator("strong, b").filter(has_text=word).count() == 0, f"{module}: {word!r} rendered bold"
        assert page.locator("img[src*='example.invalid']").count() == 0
        tab.check_clean(f"markup-{module}")
        tab.screenshot(f"markup-{module}")
    finally:
        context.close()


def test_an_exposed_dashboard_without_a_password_refuses(browser, browser_bank):
    """Listening on every interface (0.0.0.0) with no password configured: every page refuses,
    says what to do, and the server logs why; nothing of the bank is shown."""
    for url in _serve(browser_bank[0], address="0.0.0.0"):
        page = browser.new_page()
        try:
            for module in ("", "browse"):
                page.goto(f"{url}/{module}")
                page.get_by_text("refuses to serve", exact=False).first.wait_for(timeout=60_000)
                body = page.inner_text("body")
                assert "MEMCTL_DASHBOARD_PASSWORD" in body and "127.0.0.1" in body
                assert "Drinks" not in body and "Prefers" not in body and "Text contains" not in body
        finally:
            page.close()
        log = browser_bank[0].parent / f"streamlit-{urlparse(url).port}.log"
        assert "refuses to serve on 0.0.0.0" in log.read_text(errors="replace")


def test_every_page_on_a_postgresql_bank_while_an_agent_writes(browser, pg_databases, embedder, tmp_path):
    """The same bank in a PostgreSQL database (issue 16, item 9), served by the dashboard while
    another process's agent adds memories to it: every page renders it cleanly. One walk through
    the pages, not the whole suite again: the pages reach the store only through the façade,
    whose behaviour on PostgreSQL the library's suites check."""
    import threading

    url = pg_databases()
    with MemoryBank.open(url, embedder=embedder) as bank:
        _fill(bank)
    stop = threading.Event()
    added: list[int] = []
    failures: list[str] = []

    def agent() -> None:  # another writer of the namespace the pages show (its own connections)
        with MemoryBank.open(url, embedder=embedder, actor="agent") as bank:
            while not stop.is_set():
                try:
                    added.append(bank.add(f"Agent note {len(added)} about the weekend", namespace="alice",
                                          detect_conflicts=False))
                except Exception as exc:  # noqa: BLE001 - reported below
                    failures.append(repr(exc))
                stop.wait(0.2)

    writer = threading.Thread(target=agent)
    for base in _serve(url, log_dir=tmp_path):
        writer.start()
        try:
            for tab in _tab(browser, base):
                for module in PAGES:
                    _check_page(tab, module, f"pg-{module}", active=None)
        finally:
            stop.set()
            writer.join()
    assert failures == [] and len(added) >= 3
    with MemoryBank.open(url, embedder=embedder) as bank:
        assert bank.count("alice") == 7 + len(added)  # the bank's own 7, and every agent note


@pytest.fixture(scope="module")
def maintenance_bank(tmp_path_factory, embedder):
    """Two transient memories whose time has passed and an old durable one, in a bank of their own."""
    path = tmp_path_factory.mktemp("browser-maintenance") / "bank.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        ids = bank.add_many([
            {"text": "Has a cold today", "namespace": "alice", "created_at": _ago(10)},
            {"text": "Asked how to rebase a branch", "namespace": "alice", "created_at": _ago(60)},
            {"text": "Allergic to peanuts", "namespace": "alice", "created_at": _ago(400)},
        ])
    return path, dict(zip(("cold", "log", "peanuts"), ids))


def test_maintenance_preview_leave_out_apply_and_undo(browser, maintenance_bank, embedder):
    """Apply waits for a dry run; a previewed row says why and can be left out; the applied run is undone."""
    path, ids = maintenance_bank
    url = next(server := _serve(path))
    try:
        for tab in _tab(browser, url):
            tab.goto("maintenance")
            page = tab.page
            main = page.locator('[data-testid="stMain"]')
            expect(main.get_by_role("button", name="Apply", exact=True)).to_be_disabled()
            main.get_by_role("button", name="Dry run", exact=True).click()
            tab.settle()
            expect(main.get_by_role("button", name="Apply", exact=True)).to_be_enabled()
            expect(main.get_by_text("durable memories long unused, listed for review", exact=False)).to_be_visible()
            tab.screenshot("maintenance-dry-run")
            # Leave the cold out: pick its row in the multiselect.
            box = main.locator('[data-testid="stMultiSelect"]').filter(has_text="Leave these rows out")
            box.locator("input").click()
            page.keyboard.type(f"expire {ids['cold']} ")
            page.keyboard.press("Enter")
            page.keyboard.press("Escape")
            tab.settle()
            apply = main.get_by_role("button", name="Apply (1 rows left out)")
            expect(apply).to_be_enabled()
            apply.click()
            tab.settle()
            expect(main.get_by_text("Maintenance applied", exact=False)).to_be_visible()
            with MemoryBank.open(path, embedder=embedder) as bank:
                assert bank.get(ids["cold"]).status == "active" and bank.get(ids["log"]).status == "archived"
                assert bank.get(ids["peanuts"]).status == "active"
                [run] = bank.maintenance_runs(include_dry_runs=False)
            main.get_by_role("button", name=f"Undo run {run['id']}").click()
            tab.settle()
            expect(main.get_by_text(f"Run {run['id']} undone", exact=False)).to_be_visible()
            tab.check_clean("maintenance-undone")
            tab.screenshot("maintenance-undone")
            with MemoryBank.open(path, embedder=embedder) as bank:
                assert [bank.get(i).status for i in ids.values()] == ["active"] * 3
    finally:
        server.close()
