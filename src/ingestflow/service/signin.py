"""Browser sign-in for the web UI: one-time sign-in tokens (`ingestflow ui` prints one in its
link) and the sessions they, or an API key, open. Held in the server's memory: a restart signs
everyone out, as Jupyter does."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable

SESSION_HOURS = 12.0


class SignIn:
    """One-time tokens and browser sessions of one server process."""

    def __init__(self, session_hours: float = SESSION_HOURS) -> None:
        self.session_s = session_hours * 3600
        # this server's own: tokens and sessions are kept as digests keyed by it, so no value
        # minted by another server (or an earlier run of this one) is ever one of its own
        self._secret = secrets.token_bytes(32)
        self._tokens: set[str] = set()  # digests of tokens not used yet
        # digest of a session id -> when it ends, and the id of the API key that opened it
        self._sessions: dict[str, tuple[float, str | None]] = {}
        self._lock = threading.Lock()

    def issue_token(self) -> str:
        """A new one-time sign-in token (only its digest is kept)."""
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._tokens.add(self._digest(token))
        return token

    def redeem(self, token: str | None) -> str | None:
        """A new session id when `token` is a token not used yet (it is used up), else None."""
        if not token:
            return None
        with self._lock:
            try:
                self._tokens.remove(self._digest(token))
            except KeyError:
                return None
        return self.open_session()

    def open_session(self, key_id: str | None = None) -> str:
        """A new session id (after a token, or the API key `key_id`, was checked)."""
        session = secrets.token_urlsafe(32)
        with self._lock:
            self._sessions[self._digest(session)] = (time.monotonic() + self.session_s, key_id)
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
            if held is not None and held[0] < time.monotonic():
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
