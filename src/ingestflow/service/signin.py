"""Browser sign-in for the web UI: one-time sign-in tokens (`ingestflow ui` prints one in its
link) and the sessions they, or an API key, open. Held in the server's memory: a restart signs
everyone out, as Jupyter does.

A token is a secret until used, so it never goes on a command line (where every local user
sees it in `ps`): the browser is opened on a page only its owner can read, which sends it on
(`launch_page`). An unused token expires after a few minutes."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading
import time
from collections.abc import Callable
from html import escape
from pathlib import Path

SESSION_HOURS = 12.0
TOKEN_MINUTES = 5.0


class SignIn:
    """One-time tokens and browser sessions of one server process."""

    def __init__(
        self,
        session_hours: float = SESSION_HOURS,
        token_minutes: float = TOKEN_MINUTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.session_s = session_hours * 3600
        self.token_s = token_minutes * 60
        self.clock = clock
        # this server's own: tokens and sessions are kept as digests keyed by it, so no value
        # minted by another server (or an earlier run of this one) is ever one of its own
        self._secret = secrets.token_bytes(32)
        self._tokens: dict[str, float] = {}  # digest of a token not used yet -> when it ends
        # digest of a session id -> when it ends, and the id of the API key that opened it
        self._sessions: dict[str, tuple[float, str | None]] = {}
        self._lock = threading.Lock()

    def issue_token(self) -> str:
        """A new one-time sign-in token, good for `token_minutes` (only its digest is kept)."""
        token = secrets.token_urlsafe(32)
        with self._lock:
            now = self.clock()
            self._tokens = {d: end for d, end in self._tokens.items() if end >= now}
            self._tokens[self._digest(token)] = now + self.token_s
        return token

    def redeem(self, token: str | None) -> str | None:
        """A new session id when `token` is a token not used yet and not expired (it is used
        up), else None."""
        if not token:
            return None
        with self._lock:
            ends = self._tokens.pop(self._digest(token), None)
        if ends is None or ends < self.clock():
            return None
        return self.open_session()

    def open_session(self, key_id: str | None = None) -> str:
        """A new session id (after a token, or the API key `key_id`, was checked)."""
        session = secrets.token_urlsafe(32)
        with self._lock:
            self._sessions[self._digest(session)] = (self.clock() + self.session_s, key_id)
        return session

    def valid(self, session: str | None, key_active: Callable[[str], bool] | None = None) -> bool:
        """True when `session` is an open session that has not ended. A session opened with an
        API key ends with the key: `key_active(key_id)` is asked on every use (a key revoked by
        another process is seen at once)."""
        if not session:
            return False
        digest = self._digest(session)
        with self._lock:
            held = self._sessions.get(digest)
            if held is not None and held[0] < self.clock():
                del self._sessions[digest]
                held = None
        if held is None:
            return False
        if held[1] is not None and key_active is not None and not key_active(held[1]):
            self.close(session)
            return False
        return True

    @staticmethod
    def cookie_name(port: int | None) -> str:
        """The session cookie's name for a server listening on `port`. Browsers send a host's
        cookies to every port of it (RFC 6265 8.5): with one name, two servers on two ports
        replaced each other's cookie, signing each other out."""
        return "ingestflow_ui" if port is None else f"ingestflow_ui_{port}"

    def close(self, session: str | None) -> None:
        """Sign a session out."""
        if session:
            with self._lock:
                self._sessions.pop(self._digest(session), None)

    def _digest(self, secret: str) -> str:
        # looked up by digest: a dict lookup's timing tells nothing about the secret itself
        data = secret.encode("utf-8", "surrogatepass")
        return hmac.new(self._secret, data, hashlib.sha256).hexdigest()


def launch_page(folder: Path, link: str) -> Path:
    """Write a page that sends the browser on to `link` into `folder` (made owner-only), as a
    file only its owner can read (0600); the browser is opened on this file's URL, which holds
    no secret, so the link's token never shows on a command line. The caller removes it."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    target = escape(link, quote=True)
    text = (
        '<!doctype html>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="refresh" content="0;url={target}">\n'
        f'<title>ingestflow UI</title>\n<p><a href="{target}">Open the ingestflow UI</a></p>\n'
    )
    path = folder / f"signin-{secrets.token_hex(8)}.html"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    return path
