"""The alarm inbox's server: a webhook receiver on 127.0.0.1 that keeps every alarm it is sent and
shows them on a page a person can open.

    python -m stack.alarm_inbox_server --port 19490 --folder $TIDEMARK_HOME/inbox

- ``POST`` (any path) with a JSON object and the inbox's basic-auth identity: the alarm is kept,
  one JSON line per alarm in ``<folder>/alarms.jsonl`` (``{"received_at_ms": ..., "alarm": {...}}``,
  appended and flushed before the answer), answered ``200 {"ok": true, "count": n}``. Without the
  identity: 401; a body that is not a JSON object: 400, nothing kept.
- ``GET /`` an HTML page of the alarms, newest first; ``GET /alarms.json`` the same as a JSON list.

The identity is the loopback's own (stack.environment.LOOPBACK_INBOX_IDENTITY, not anyone's
secret): it is there so that a test can show an alarm never carries its connection's credentials.
Started and stopped by ``stack.alarm_inbox.AlarmInbox`` (the ``inbox`` service).
"""

from __future__ import annotations

import argparse
import base64
import html
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from stack.alarm_inbox_file import ALARMS_FILE, read_alarms
from stack.environment import LOOPBACK, LOOPBACK_INBOX_IDENTITY

_EXPECTED_AUTHORIZATION = "Basic " + base64.b64encode(":".join(LOOPBACK_INBOX_IDENTITY).encode()).decode()


def serve(port: int, folder: Path) -> None:
    """Serve on ``127.0.0.1:port`` until the process is stopped."""
    folder.mkdir(parents=True, exist_ok=True)
    kept = folder / ALARMS_FILE
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the http.server API
            if self.headers.get("Authorization") != _EXPECTED_AUTHORIZATION:
                self._answer(401, "application/json", b'{"error": "the inbox needs its basic-auth identity"}')
                return
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                alarm = json.loads(raw)
            except ValueError:
                alarm = None
            if not isinstance(alarm, dict):
                self._answer(400, "application/json", b'{"error": "an alarm is a JSON object"}')
                return
            line = json.dumps({"received_at_ms": int(time.time() * 1000), "alarm": alarm}) + "\n"
            with lock, open(kept, "a", encoding="utf-8") as file:
                file.write(line)
                file.flush()
                count = len(read_alarms(folder))
            self._answer(200, "application/json", json.dumps({"ok": True, "count": count}).encode())

        def do_GET(self):  # noqa: N802 - the http.server API
            alarms = read_alarms(folder)
            if self.path.split("?")[0] == "/alarms.json":
                self._answer(200, "application/json", json.dumps(alarms).encode())
            elif self.path.split("?")[0] in ("/", "/index.html"):
                self._answer(200, "text/html; charset=utf-8", inbox_page(alarms).encode())
            else:
                self._answer(404, "text/plain", b"not found: / lists the alarms, /alarms.json gives them as JSON\n")

        def _answer(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format, *args):  # noqa: A002 - the http.server API
            # One line per request, as a person reads it; no headers (never the Authorization).
            print(f"{self.log_date_time_string()} {self.command} {self.path} -> {args[1] if len(args) > 1 else ''}")

    server = ThreadingHTTPServer((LOOPBACK, port), Handler)
    print(f"alarm inbox on http://{LOOPBACK}:{port}/, alarms kept in {kept}", flush=True)
    server.serve_forever()


def inbox_page(alarms: list[dict]) -> str:
    """The page of ``alarms`` (as kept: received_at_ms and alarm), newest first."""
    e = html.escape
    rows = []
    for kept in reversed(alarms):
        alarm = kept.get("alarm", {})
        received = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(kept.get("received_at_ms", 0) / 1000))
        partitions = "<br>".join(
            f"{e(str(p.get('partition')))}: <b>{e(str(p.get('status')))}</b> {e('; '.join(p.get('reasons') or ()))}"
            for p in alarm.get("partitions") or ()
        )
        summary = (alarm.get("summary") or {}).get("html")
        link = f"<a href='file://{e(summary)}'>summary</a>" if summary else ""
        rows.append(
            f"<tr><td>{e(received)}</td><td>{e(str(alarm.get('stream')))}</td>"
            f"<td>{e(str(alarm.get('title')))}</td><td>{partitions}</td>"
            f"<td>{e(str(alarm.get('dag_id')))}<br>{e(str(alarm.get('run_id')))}</td><td>{link}</td></tr>"
        )
    table = (
        "<table border='1' cellpadding='4'><tr><th>received</th><th>stream</th><th>alarm</th>"
        f"<th>partitions</th><th>run</th><th></th></tr>{''.join(rows)}</table>"
        if rows
        else "<p>No alarm yet.</p>"
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><meta http-equiv='refresh' content='10'>"
        f"<title>tidemark alarm inbox ({len(alarms)})</title></head><body>"
        f"<h2>tidemark alarm inbox</h2><p>{len(alarms)} alarms received, newest first; "
        f"<a href='/alarms.json'>as JSON</a>.</p>{table}</body></html>"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m stack.alarm_inbox_server", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--folder", type=Path, required=True, help="where alarms.jsonl is kept")
    args = parser.parse_args(argv)
    serve(args.port, args.folder)


if __name__ == "__main__":
    main()
