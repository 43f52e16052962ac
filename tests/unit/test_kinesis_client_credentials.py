"""Which keys connectors.kinesis_api.kinesis_client signs with: the stream's AWS connection's
(TIDEMARK_KINESIS_*, tidemark.kinesis_access) when the environment holds them, else boto3's
default chain; region and endpoint always the caller's; keys never in a log line or a message.

No network: a botocore before-send hook records the signed request and stops it there."""

from __future__ import annotations

import logging

import pytest

from connectors.kinesis_api import KinesisEndpointError, kinesis_client
from connectors.kinesis_log import KinesisLog
from stack.ports import free_port
from tidemark.kinesis_access import KinesisAccessError

REGION = "eu-west-1"
ENDPOINT = "http://127.0.0.1:4567"
CONNECTION = {
    "TIDEMARK_KINESIS_ACCESS_KEY_ID": "AKIACONNECTIONKEY",
    "TIDEMARK_KINESIS_SECRET_ACCESS_KEY": "connection-secret",
    "TIDEMARK_KINESIS_SESSION_TOKEN": "connection-token",
    "TIDEMARK_KINESIS_CONNECTION_ENDPOINT": "http://connection-endpoint.invalid:1",
}


class _Sent(Exception):
    """Raised by the request hook: the signed request is looked at, never sent."""


@pytest.fixture(autouse=True)
def default_chain(monkeypatch):
    """boto3's default chain finds these (the environment comes first in it)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIACHAINKEY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "chain-secret")
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", *CONNECTION):
        monkeypatch.delenv(name, raising=False)


def _signed_request(client):
    """The ListShards request ``client`` would send, signed, without sending it."""
    sent = []

    def record(request, **_):
        sent.append(request)
        raise _Sent

    client.meta.events.register("before-send.kinesis.ListShards", record)
    with pytest.raises(_Sent):
        client.list_shards(StreamName="rides")
    return sent[0]


def test_the_connections_keys_sign_when_the_environment_holds_them():
    request = _signed_request(kinesis_client(REGION, ENDPOINT, environ=CONNECTION))

    assert (
        request.headers["Authorization"]
        .decode()
        .startswith(
            f"AWS4-HMAC-SHA256 Credential=AKIACONNECTIONKEY/{request.headers['X-Amz-Date'].decode()[:8]}/{REGION}/kinesis/"
        )
    )
    assert request.headers["X-Amz-Security-Token"] == b"connection-token"
    assert request.url == f"{ENDPOINT}/"  # the caller's endpoint, not the connection's


def test_the_process_environment_is_read_when_none_is_given(monkeypatch):
    for name, value in CONNECTION.items():
        monkeypatch.setenv(name, value)

    request = _signed_request(kinesis_client(REGION, ENDPOINT))

    assert b"Credential=AKIACONNECTIONKEY/" in request.headers["Authorization"]


def test_without_them_boto3s_default_chain_signs():
    request = _signed_request(kinesis_client(REGION, None, environ={}))

    assert b"Credential=AKIACHAINKEY/" in request.headers["Authorization"]
    assert "X-Amz-Security-Token" not in request.headers
    assert request.url == f"https://kinesis.{REGION}.amazonaws.com/"


def test_a_session_token_without_keys_is_not_used():
    request = _signed_request(kinesis_client(REGION, ENDPOINT, environ={"TIDEMARK_KINESIS_SESSION_TOKEN": "stray"}))

    assert b"Credential=AKIACHAINKEY/" in request.headers["Authorization"]
    assert "X-Amz-Security-Token" not in request.headers


def test_half_a_key_pair_fails_naming_the_missing_variable():
    with pytest.raises(KinesisAccessError, match="^TIDEMARK_KINESIS_SECRET_ACCESS_KEY is not set but its pair is"):
        kinesis_client(REGION, ENDPOINT, environ={"TIDEMARK_KINESIS_ACCESS_KEY_ID": "AKIACONNECTIONKEY"})


def test_the_keys_are_in_no_log_line_and_no_message(monkeypatch, caplog):
    for name, value in CONNECTION.items():
        monkeypatch.setenv(name, value)
    silent = f"http://127.0.0.1:{free_port()}"
    caplog.set_level(logging.DEBUG, logger="connectors")

    log = KinesisLog("rides", REGION, silent, sleep=lambda _: None)
    try:
        with pytest.raises(KinesisEndpointError) as raised:
            log.shards()
    finally:
        log.close()

    shown = str(raised.value) + repr(raised.value) + caplog.text + repr([vars(r) for r in caplog.records])
    assert silent in str(raised.value)
    for secret in ("AKIACONNECTIONKEY", "connection-secret", "connection-token"):
        assert secret not in shown
