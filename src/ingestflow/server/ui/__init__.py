"""The web UI under /ui: server-rendered pages (Jinja, autoescaped) over the service, a little
vanilla JavaScript, and CSS, all shipped in the package (nothing loaded from elsewhere).

`install(app)` adds it to the REST server; `app.state.signin` issues the one-time sign-in
tokens `ingestflow ui` prints."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from starlette.staticfiles import StaticFiles

from ingestflow.service.signin import SignIn

STATIC = Path(__file__).parent / "static"


def install(app: FastAPI) -> SignIn:
    """Add the UI's routes, its static files and its sign-in to the app."""
    from ingestflow.server.ui import auth, file_view, routes

    app.state.signin = SignIn()
    app.include_router(auth.router)
    app.include_router(routes.router)
    app.include_router(file_view.router)
    app.mount(auth.PREFIX + "/static", StaticFiles(directory=STATIC), name="ui-static")
    app.add_exception_handler(auth.SignInNeeded, auth.sign_in_page)
    return app.state.signin
