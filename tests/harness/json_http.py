"""What the loopback HTTP servers standing in for Airflow's REST API in unit tests share."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler


def send_json(handler: BaseHTTPRequestHandler, status: int, body: dict) -> None:
    """Answer the request ``handler`` serves with ``status`` and ``body`` as JSON."""
    payload = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)
