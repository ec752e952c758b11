"""The API's documentation pages, ``/docs`` (Swagger UI) and ``/redoc`` (ReDoc), served offline.

FastAPI's own pages load their scripts, styles, fonts and icon from CDNs: a server on a machine
without internet (or behind a strict proxy) shows a blank page. Here every asset comes from the
server itself, under :data:`STATIC`, out of the files the ``fastapi-offline`` package ships (the
Swagger UI bundle and stylesheet, ReDoc's standalone bundle, an icon); no Google fonts.
The pages and their assets need no token, as ``/openapi.json`` does not.
"""

from __future__ import annotations

import functools
from importlib.resources import files

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

# The pages may load nothing from another host. ReDoc's bundle draws Redocly's logo from a CDN: the
# bundle is served with that address replaced by an empty image (the link's text stays), and the
# policy blocks what a later version might fetch from elsewhere.
REDOC_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"
POLICY = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
          "img-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; font-src 'self' data:")
STATIC = "/docs-assets"  # where the pages' scripts and styles are served from
ASSETS = files("fastapi_offline") / "static"  # swagger-ui-bundle.js, swagger-ui.css, redoc.standalone.js, favicon.png


def add_docs(app: FastAPI, docs_url: str = "/docs", redoc_url: str = "/redoc") -> None:
    """Serve ``/docs`` and ``/redoc`` with local assets (the app must be made with
    ``docs_url=None, redoc_url=None``, so FastAPI's CDN pages are not there too)."""
    @app.get(f"{STATIC}/redoc.js", include_in_schema=False)
    async def redoc_js() -> Response:  # before the mount, which would answer every path under STATIC
        return Response(_redoc_bundle(), media_type="text/javascript")

    app.mount(STATIC, StaticFiles(directory=str(ASSETS)), name="docs-assets")
    oauth2_redirect = app.swagger_ui_oauth2_redirect_url or "/docs/oauth2-redirect"

    @app.get(docs_url, include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return _local(get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}", title=f"{app.title} - API",
            oauth2_redirect_url=f"{root}{oauth2_redirect}",
            swagger_js_url=f"{root}{STATIC}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{STATIC}/swagger-ui.css",
            swagger_favicon_url=f"{root}{STATIC}/favicon.png",
            # No badge from the public validator service (a request to another host).
            swagger_ui_parameters={"validatorUrl": None, **(app.swagger_ui_parameters or {})}))

    @app.get(oauth2_redirect, include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(redoc_url, include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return _local(get_redoc_html(
            openapi_url=f"{root}{app.openapi_url}", title=f"{app.title} - API reference",
            redoc_js_url=f"{root}{STATIC}/redoc.js",
            redoc_favicon_url=f"{root}{STATIC}/favicon.png", with_google_fonts=False))


@functools.cache
def _redoc_bundle() -> bytes:
    """ReDoc's standalone bundle without its one fetch from another host (read once)."""
    return (ASSETS / "redoc.standalone.js").read_bytes().replace(REDOC_LOGO, b"data:,")


def _local(page: HTMLResponse) -> HTMLResponse:
    """The page, with the policy that keeps the browser from loading anything from elsewhere."""
    page.headers["Content-Security-Policy"] = POLICY
    return page
