"""The registry client against a loopback HTTP server that answers as a registry does: a schema
once per id, a 404 for an unknown id, server errors waited out, and a registry down for longer
than its patience failing the batch, with an injected clock."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from connectors.schema_registry_client import RegistryClient
from tidemark.writer_schemas import RegistryUnavailableError, UnknownSchemaError

SCHEMA = {"type": "record", "name": "T", "fields": [{"name": "a", "type": "int"}]}


class Registry(BaseHTTPRequestHandler):
    failures_left = 0
    requests: list[str] = []

    def do_GET(self):  # noqa: N802 - the http.server name
        Registry.requests.append(self.path)
        if Registry.failures_left:
            Registry.failures_left -= 1
            self.send_response(503)
            self.end_headers()
            return
        if self.path == "/apis/ccompat/v7/schemas/ids/1":
            body = json.dumps({"schema": json.dumps(SCHEMA)}).encode()
            self.send_response(200)
        else:
            body = json.dumps({"error_code": 40403, "message": "Schema not found"}).encode()
            self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # the test's output, not the server's
        return


@pytest.fixture
def registry():
    Registry.failures_left, Registry.requests = 0, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Registry)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/apis/ccompat/v7"
    server.shutdown()


def test_a_schema_is_asked_once_and_an_unknown_id_is_the_records_fault(registry):
    client = RegistryClient(registry)
    first, again = client.avro(1), client.avro(1)
    assert first is again and first["name"] == "T"
    with pytest.raises(UnknownSchemaError):
        client.avro(9)
    assert Registry.requests == ["/apis/ccompat/v7/schemas/ids/1", "/apis/ccompat/v7/schemas/ids/9"]


def test_server_errors_are_waited_out_and_a_registry_down_too_long_fails_the_batch(registry):
    slept = []
    clock = [0.0]

    def sleep(seconds):
        slept.append(seconds)
        clock[0] += seconds

    Registry.failures_left = 2
    assert RegistryClient(registry, patience_s=10, sleep=sleep, clock=lambda: clock[0]).avro(1)["name"] == "T"
    assert slept == [0.2, 0.4]

    Registry.failures_left = 1_000
    client = RegistryClient(registry, patience_s=10, sleep=sleep, clock=lambda: clock[0])
    with pytest.raises(RegistryUnavailableError, match=r"answered HTTP 503 for schema 1, for 10 s"):
        client.avro(1)
