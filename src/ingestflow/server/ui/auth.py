"""Signing the browser in: a one-time token from `ingestflow ui`'s link, or an API key typed
into the sign-in page, opens a session held in an HttpOnly, SameSite=Strict cookie."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from starlette.responses import RedirectResponse, Response

from ingestflow.server.deps import state
from ingestflow.server.ui.render import page
from ingestflow.service import Service
from ingestflow.service.signin import TOKEN_MINUTES, SignIn

PREFIX = "/ui"
router = APIRouter(include_in_schema=False)


class SignInNeeded(Exception):
    """The request carries no open session: answer 401 with the sign-in page."""


def signin(request: Request) -> SignIn:
    """The server's sign-in tokens and sessions."""
    return request.app.state.signin


def cookie(request: Request) -> str:
    """The name of this server's session cookie (its own per listening port)."""
    server = request.scope.get("server")
    port = server[1] if isinstance(server, tuple | list) and len(server) > 1 else None
    return signin(request).cookie_name(port if isinstance(port, int) else None)


def signed_in(request: Request) -> None:
    """Raise SignInNeeded unless the request's cookie is an open session (one opened with an
    API key ends when the key is revoked)."""

    def key_active(key_id: str) -> bool:
        with Service(state(request).workspace, check=False) as opened:
            return opened.keys.is_active(key_id)

    if not signin(request).valid(request.cookies.get(cookie(request)), key_active):
        raise SignInNeeded


def sign_in_page(
    request: Request, exc: Exception | None = None, message: str = "", status: int = 401
) -> Response:
    """The sign-in page (answered 401 where a page was asked for without a session)."""
    return page("signin.html", status=status, message=message, signed_in=False)


def _session_answer(request: Request, session: str, to: str = PREFIX + "/") -> Response:
    answer = RedirectResponse(to, status_code=303)
    answer.set_cookie(
        cookie(request), session, httponly=True, samesite="strict", path=PREFIX, secure=False
    )  # secure=False: the UI is served over plain HTTP on loopback
    return answer


@router.get(PREFIX + "/signin")
def token_sign_in(request: Request, token: str | None = None) -> Response:
    """The link `ingestflow ui` prints: its token, used once, opens a session."""
    session = signin(request).redeem(token)
    if session is None:
        return sign_in_page(
            request,
            message=f"This sign-in link is wrong, expired (a link lasts {TOKEN_MINUTES:g} "
            "minutes) or was used already (each link signs in once). Run `ingestflow ui` again "
            "for a new link, or sign in with an API key.",
        )
    return _session_answer(request, session)


@router.get(PREFIX + "/login")
def login_page(request: Request) -> Response:
    """The sign-in page (an API key)."""
    return sign_in_page(request, status=200)


@router.post(PREFIX + "/login")
def key_sign_in(request: Request, key: Annotated[str, Form()] = "") -> Response:
    """An API key typed into the sign-in page opens a session."""
    with Service(state(request).workspace, check=False) as opened:
        key_id = opened.keys.identify(key.strip())
    if key_id is None:
        return sign_in_page(
            request,
            message="That API key is wrong or revoked. `ingestflow keys create` makes one; "
            "`ingestflow ui` prints a sign-in link that needs no key.",
        )
    return _session_answer(request, signin(request).open_session(key_id))


@router.post(PREFIX + "/logout")
def sign_out(request: Request) -> Response:
    """Close the session and forget the cookie."""
    signin(request).close(request.cookies.get(cookie(request)))
    answer = RedirectResponse(PREFIX + "/login", status_code=303)
    answer.delete_cookie(cookie(request), path=PREFIX, httponly=True, samesite="strict")
    return answer
