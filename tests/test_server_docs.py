"""`/docs` (Swagger UI) and `/redoc` (ReDoc) of a real `memctl serve`, in chromium, offline.

Both pages must draw the API's operations from assets the server itself serves: every request the
browser makes goes to the server on 127.0.0.1 (a CDN's script would leave the page blank on a
machine without internet, which is how a new user met them).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest

from memctl_server import Served

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"

try:
    from playwright.sync_api import expect, sync_playwright
except ImportError:  # pragma: no cover - the test extra is installed in the venv
    sync_playwright = None


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    served = Served(tmp_path_factory.mktemp("docs") / "docs.duckdb")
    yield served
    served.stop()


@pytest.fixture(scope="module")
def browser():
    if sync_playwright is None:
        pytest.fail("the Python package `playwright` is not installed in this venv")
    if not Path(CHROMIUM).exists():
        pytest.fail(f"no chromium at {CHROMIUM}: install it (`apt-get install -y chromium` on Debian) or set $CHROMIUM")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


def _open(browser, url: str) -> tuple[object, list[str], list[str]]:
    """A page at ``url`` and the lists its requests and failed requests are recorded in."""
    page = browser.new_page()
    requested: list[str] = []
    failed: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    page.on("requestfailed", lambda r: failed.append(f"{r.url}: {r.failure}"))
    page.goto(url, wait_until="load")
    return page, requested, failed


def _only_local(requested: list[str], server: Served) -> None:
    assert requested, "the browser made no request"
    # A blob: URL is the page's own (ReDoc's worker), made in the browser from the server's script.
    fetched = [u.removeprefix("blob:") for u in requested if not u.startswith("data:")]
    elsewhere = [u for u in fetched if urlparse(u).hostname != "127.0.0.1"]
    assert not elsewhere, f"requests left the server: {elsewhere}"
    assert all(u.startswith(server.url) for u in fetched), requested


def test_swagger_ui_draws_the_operations_from_the_servers_own_assets(server, browser):
    page, requested, failed = _open(browser, server.url + "/docs")
    try:
        expect(page.locator(".swagger-ui .info .title")).to_contain_text("Memory Console", timeout=30_000)
        ops = page.locator(".opblock-summary-path")
        expect(ops.filter(has_text="/v1/recall")).to_have_count(1, timeout=30_000)
        paths = set(ops.all_inner_texts())
        assert {"/v1/memories", "/v1/memories/batch", "/v1/health"} <= {p.replace("\u200b", "") for p in paths}
        page.locator(".opblock-summary-path", has_text="/v1/health").first.click()
        expect(page.get_by_text("Whether the server is up")).to_be_visible()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "server-docs-swagger.png"), full_page=False)
    finally:
        page.close()
    _only_local(requested, server)
    assert not failed, failed
    assert any(u.endswith("/swagger-ui-bundle.js") for u in requested)


def test_redoc_draws_the_operations_from_the_servers_own_assets(server, browser):
    page, requested, failed = _open(browser, server.url + "/redoc")
    try:
        expect(page.locator("h1")).to_contain_text("Memory Console", timeout=30_000)
        # The menu lists every operation by its summary; the body documents each.
        expect(page.get_by_role("menuitem").filter(has_text="Recall").first).to_be_visible(timeout=30_000)
        expect(page.get_by_text("Store many memories in one transaction").first).to_be_attached()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "server-docs-redoc.png"), full_page=False)
    finally:
        page.close()
    _only_local(requested, server)
    assert not failed, failed
    assert any(u.endswith("/docs-assets/redoc.js") for u in requested)


def test_the_assets_are_served_without_a_token(server):
    """The pages are public like /openapi.json (the server runs with tokens on)."""
    with httpx.Client(base_url=server.url, timeout=30) as c:
        assert c.get("/v1/namespaces").status_code == 401
        for path, kind in [("/docs", "text/html"), ("/redoc", "text/html"),
                           ("/docs-assets/swagger-ui-bundle.js", "javascript"),
                           ("/docs-assets/swagger-ui.css", "text/css"),
                           ("/docs-assets/redoc.js", "javascript")]:
            r = c.get(path)
            assert r.status_code == 200 and kind in r.headers["content-type"], (path, r.status_code)
        assert "cdn.jsdelivr.net" not in c.get("/docs").text and "fonts.googleapis" not in c.get("/redoc").text
        assert b"cdn.redoc.ly" not in c.get("/docs-assets/redoc.js").content
