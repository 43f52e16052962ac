"""An OAuth 2.0 token endpoint on loopback for the OAUTHBEARER tests: the client-credentials grant
(RFC 6749 §4.4) of one client, answering unsigned JWTs (``alg: none``) that Kafka's test
validator accepts, each valid for ``lifetime_s`` seconds, and counting what it issued so that a
test can see librdkafka refresh the token by itself."""

from __future__ import annotations

import base64
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

from harness.json_http import send_json


def _b64(document: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(document).encode()).rstrip(b"=").decode()


class TokenEndpoint:
    """``url``: where to POST; ``issued``: tokens handed out; ``refused``: requests refused."""

    def __init__(self, client_id: str, client_secret: str, lifetime_s: int = 3600, subject: str = "tidemark"):
        self.client_id, self.client_secret, self.lifetime_s, self.subject = (
            client_id,
            client_secret,
            lifetime_s,
            subject,
        )
        self.issued = 0
        self.refused = 0
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                client = _basic(self.headers.get("Authorization")) or (form.get("client_id"), form.get("client_secret"))
                if form.get("grant_type") != "client_credentials" or client != (
                    endpoint.client_id,
                    endpoint.client_secret,
                ):
                    endpoint.refused += 1
                    send_json(self, 401, {"error": "invalid_client"})
                    return
                now = int(time.time())
                claims = {
                    "sub": endpoint.subject,
                    "iat": now,
                    "exp": now + endpoint.lifetime_s,
                    "scope": form.get("scope", ""),
                }
                token = f"{_b64({'alg': 'none', 'typ': 'JWT'})}.{_b64(claims)}."
                endpoint.issued += 1
                send_json(self, 200, {"access_token": token, "token_type": "bearer", "expires_in": endpoint.lifetime_s})

            def log_message(self, *args):
                """Silent: http.server writes a line per request to stderr, which a test's output does not need."""

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/token"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> TokenEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()


def _basic(header: str | None) -> tuple[str, str] | None:
    if not header or not header.lower().startswith("basic "):
        return None
    user, _, password = base64.b64decode(header.split(" ", 1)[1]).decode().partition(":")
    from urllib.parse import unquote

    return unquote(user), unquote(password)
