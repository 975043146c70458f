"""The API's documentation pages, `/docs` (Swagger UI) and `/redoc` (ReDoc), served with
everything they load from the installed packages: Swagger UI's and ReDoc's bundles come from
the `fastapi-offline` wheel, so the pages work with no network. FastAPI's own pages load them
from a CDN (and fonts from Google), which left them blank offline.

The pages carry the UI's security headers; their content security policy differs only where
the two bundles need it: ReDoc writes its styles into `<style>` elements and runs its search
in a worker made from a blob. Nothing may be loaded from another host."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from fastapi import APIRouter, FastAPI, HTTPException
from starlette.responses import FileResponse, HTMLResponse, Response

from ingestflow.server.ui.render import SECURITY_HEADERS

STATIC = "/docs/static"
_OURS = Path(__file__).parent / "docs_static"
_TYPES = {".js": "text/javascript", ".css": "text/css", ".png": "image/png"}
_POLICY = SECURITY_HEADERS["Content-Security-Policy"]
# ReDoc draws its maker's logo from their CDN, whatever its options say: served without it
_REDOC_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"
DOCS_HEADERS = SECURITY_HEADERS
REDOC_HEADERS = {
    **SECURITY_HEADERS,
    "Content-Security-Policy": _POLICY.replace(
        "style-src 'self';", "style-src 'self' 'unsafe-inline'; worker-src blob:;"
    ),
}
router = APIRouter(include_in_schema=False)


@cache
def assets() -> dict[str, Path]:
    """The files the pages load, by name: the vendored bundles and this package's starters."""
    import fastapi_offline

    vendored = Path(fastapi_offline.__file__).parent / "static"
    names = ("swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js", "favicon.png")
    found = {name: vendored / name for name in names}
    found.update({path.name: path for path in _OURS.iterdir() if path.suffix == ".js"})
    return found


def _html(title: str, head: str, body: str) -> str:
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{title}</title>\n"
        f'<link rel="icon" type="image/png" href="{STATIC}/favicon.png">\n{head}</head>\n'
        f"<body>\n{body}</body>\n</html>\n"
    )


@router.get("/docs")
def swagger_ui() -> HTMLResponse:
    """Swagger UI over /openapi.json."""
    text = _html(
        "ingestflow API - Swagger UI",
        f'<link rel="stylesheet" href="{STATIC}/swagger-ui.css">\n',
        '<div id="swagger-ui"></div>\n'
        f'<script src="{STATIC}/swagger-ui-bundle.js"></script>\n'
        f'<script src="{STATIC}/swagger-init.js"></script>\n',
    )
    return HTMLResponse(text, headers=DOCS_HEADERS)


@router.get("/redoc")
def redoc() -> HTMLResponse:
    """ReDoc over /openapi.json."""
    text = _html(
        "ingestflow API - ReDoc",
        "",
        '<div id="redoc"></div>\n'
        f'<script src="{STATIC}/redoc.standalone.js"></script>\n'
        f'<script src="{STATIC}/redoc-init.js"></script>\n',
    )
    return HTMLResponse(text, headers=REDOC_HEADERS)


@cache
def _redoc_bundle() -> bytes:
    # an image that fails to load is hidden by ReDoc ("data:," holds no image)
    return assets()["redoc.standalone.js"].read_bytes().replace(_REDOC_LOGO, b"data:,")


@router.get(STATIC + "/{name}")
def asset(name: str) -> Response:
    """One of the pages' files, by name (no path: only the files listed are served)."""
    path = assets().get(name)
    if path is None:
        raise HTTPException(404, f"no documentation asset {name!r}")
    headers = {**SECURITY_HEADERS, "Cache-Control": "no-cache"}
    if name == "redoc.standalone.js":
        return Response(_redoc_bundle(), media_type=_TYPES[".js"], headers=headers)
    return FileResponse(path, media_type=_TYPES[path.suffix], headers=headers)


def install(app: FastAPI) -> None:
    """Serve the pages (the app is made with `docs_url=None, redoc_url=None`)."""
    app.include_router(router)
