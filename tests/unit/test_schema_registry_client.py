"""The registry client against a loopback HTTP server that answers as a registry does: a schema
once per id, a 404 for an unknown id, server errors waited out, and a registry down for longer
than its patience failing the batch, with an injected clock."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from connectors.schema_registry_client import RegistryClient, RegistryRefusedError
from tidemark.registry_access import RegistryAccess
from tidemark.writer_schemas import RegistryUnavailableError, UnknownSchemaError

GUID = "5d1c9a3e-8f7b-4c2a-9e61-0b3f2a7c4d10"
SCHEMA = {"type": "record", "name": "T", "fields": [{"name": "a", "type": "int"}]}
PLACE = 'syntax = "proto3";\npackage common;\nmessage Place { string site = 1; }\n'
READING = (
    'syntax = "proto3";\nimport "common/place.proto";\nimport "google/protobuf/timestamp.proto";\n'
    "message Reading { google.protobuf.Timestamp event_time = 1; common.Place place = 2; }\n"
)
PLACE_REFERENCE = {"name": "common/place.proto", "subject": "common/place.proto", "version": 1}
# Protobuf answers by path: id 2 imports a file registered under its own subject; id 3 imports one
# the registry does not hold; id 4 does not compile.
PROTOBUF = {
    "/apis/ccompat/v7/schemas/ids/2?format=serialized": {
        "schema": READING,
        "schemaType": "PROTOBUF",
        "references": [PLACE_REFERENCE],
    },
    "/apis/ccompat/v7/subjects/common%2Fplace.proto/versions/1": {"schema": PLACE, "schemaType": "PROTOBUF"},
    "/apis/ccompat/v7/schemas/ids/3?format=serialized": {
        "schema": READING,
        "schemaType": "PROTOBUF",
        "references": [{**PLACE_REFERENCE, "version": 7}],
    },
    "/apis/ccompat/v7/schemas/ids/4?format=serialized": {"schema": "message {", "schemaType": "PROTOBUF"},
}


class Registry(BaseHTTPRequestHandler):
    failures_left = 0
    requests: list[str] = []
    authorization: str | None = None  # the header it requires; None: it asks for no login

    def do_GET(self):  # noqa: N802 - the http.server name
        Registry.requests.append(self.path)
        if Registry.authorization and self.headers.get("Authorization") != Registry.authorization:
            self.send_response(401)
            self.end_headers()
            return
        if Registry.failures_left:
            Registry.failures_left -= 1
            self.send_response(503)
            self.end_headers()
            return
        if self.path in ("/apis/ccompat/v7/schemas/ids/1", "/apis/ccompat/v7/schemas/guids/" + GUID):
            body = json.dumps({"schema": json.dumps(SCHEMA)}).encode()
            self.send_response(200)
        elif self.path in PROTOBUF:
            body = json.dumps(PROTOBUF[self.path]).encode()
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
    Registry.failures_left, Registry.requests, Registry.authorization = 0, [], None
    server = ThreadingHTTPServer(("127.0.0.1", 0), Registry)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/apis/ccompat/v7"
    server.shutdown()


def test_a_schema_is_asked_once_and_an_unknown_id_is_the_records_fault(registry):
    client = RegistryClient(RegistryAccess(registry))
    first, again = client.avro(1), client.avro(1)
    assert first is again and first["name"] == "T"
    with pytest.raises(UnknownSchemaError):
        client.avro(9)
    assert Registry.requests == ["/apis/ccompat/v7/schemas/ids/1", "/apis/ccompat/v7/schemas/ids/9"]


def test_a_protobuf_schema_and_its_reference_are_asked_once_and_compiled_together(registry):
    client = RegistryClient(RegistryAccess(registry))
    schema = client.protobuf(2)
    assert client.protobuf(2) is schema
    message = schema.message_class((0,))()
    message.place.site = "north"
    assert message.DESCRIPTOR.fields_by_name["place"].message_type.full_name == "common.Place"
    assert Registry.requests == [
        "/apis/ccompat/v7/schemas/ids/2?format=serialized",
        "/apis/ccompat/v7/subjects/common%2Fplace.proto/versions/1",
    ]


def test_a_protobuf_schema_whose_reference_is_missing_or_that_does_not_compile_is_unusable(registry):
    from tidemark.writer_schemas import UnusableSchemaError

    client = RegistryClient(RegistryAccess(registry))
    with pytest.raises(UnusableSchemaError, match=r"schema 3 cannot be used: it imports 'common/place.proto'"):
        client.protobuf(3)
    with pytest.raises(UnusableSchemaError, match=r"schema 4 cannot be used: .*schema_4.proto:1:"):
        client.protobuf(4)
    with pytest.raises(UnknownSchemaError):
        client.protobuf(1)  # an Avro schema's id


def test_a_schema_named_by_guid_is_asked_by_guid_once(registry):
    client = RegistryClient(RegistryAccess(registry))
    assert client.avro(GUID)["name"] == "T" and client.avro(GUID) is client.avro(GUID)
    with pytest.raises(UnknownSchemaError, match="no schema with GUID 00000000-0000-0000-0000-000000000000"):
        client.avro("00000000-0000-0000-0000-000000000000")
    assert Registry.requests == [
        f"/apis/ccompat/v7/schemas/guids/{GUID}",
        "/apis/ccompat/v7/schemas/guids/00000000-0000-0000-0000-000000000000",
    ]


def test_server_errors_are_waited_out_and_a_registry_down_too_long_fails_the_batch(registry):
    slept = []
    clock = [0.0]

    def sleep(seconds):
        slept.append(seconds)
        clock[0] += seconds

    Registry.failures_left = 2
    assert (
        RegistryClient(RegistryAccess(registry), patience_s=10, sleep=sleep, clock=lambda: clock[0]).avro(1)["name"]
        == "T"
    )
    assert slept == [0.2, 0.4]

    Registry.failures_left = 1_000
    client = RegistryClient(RegistryAccess(registry), patience_s=10, sleep=sleep, clock=lambda: clock[0])
    with pytest.raises(RegistryUnavailableError, match=r"answered HTTP 503 for schema 1, for 10 s"):
        client.avro(1)


def test_a_registry_that_asks_for_a_login_gets_the_connections_and_a_wrong_one_fails_at_once(registry):
    import base64

    Registry.authorization = "Basic " + base64.b64encode(b"tidemark:r3gistry-Pass").decode()
    environ = {"TIDEMARK_REGISTRY_CONN_REGISTRY_PROD": json.dumps({"login": "tidemark", "password": "r3gistry-Pass"})}
    access = RegistryAccess.of(registry, "registry_prod", environ)
    assert "r3gistry-Pass" not in repr(access)
    assert RegistryClient(access).avro(1)["name"] == "T"

    slept = []
    wrong = RegistryAccess(registry, "registry_prod", "tidemark", "not-the-pass")
    with pytest.raises(RegistryRefusedError) as refused:
        RegistryClient(wrong, sleep=slept.append).avro(1)
    assert slept == [], "a refused login is not waited out"
    assert str(refused.value) == (
        f"the schema registry at {registry} refused as 'tidemark' (connection 'registry_prod'): HTTP 401; "
        "the batch fails, nothing is quarantined"
    )


def test_a_registry_connection_missing_from_the_environment_or_without_a_login_fails_naming_the_variable():
    from tidemark.registry_access import RegistryAccessError

    with pytest.raises(RegistryAccessError, match="TIDEMARK_REGISTRY_CONN_REG_1 is not set"):
        RegistryAccess.of("http://r:8081", "reg-1", {})
    with pytest.raises(RegistryAccessError, match="must be a JSON object"):
        RegistryAccess.of("http://r:8081", "reg-1", {"TIDEMARK_REGISTRY_CONN_REG_1": json.dumps({"password": "p"})})
    assert RegistryAccess.of("http://r:8081", None, {}).headers() == {}


def test_the_registry_login_is_read_through_airflow_and_written_for_the_job(monkeypatch):
    from types import SimpleNamespace

    from airflow.sdk import BaseHook

    from tidemark_airflow.registry_connection import apply_registry_connection

    connections = {"registry_prod": SimpleNamespace(login="tidemark", password="r3gistry-Pass")}
    monkeypatch.setattr(BaseHook, "get_connection", classmethod(lambda cls, conn_id: connections[conn_id]))
    environ: dict[str, str] = {}
    assert apply_registry_connection(None, "http://r:8081", environ) is None and environ == {}
    assert apply_registry_connection("registry_prod", "http://r:8081", environ) == "registry_prod"
    access = RegistryAccess.of("http://r:8081", "registry_prod", environ)
    assert (access.login, access.password) == ("tidemark", "r3gistry-Pass")
