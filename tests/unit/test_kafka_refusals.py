"""connectors.kafka_clients.Refusals, the error callback of every Kafka client: which librdkafka
errors are refusals (raised at once, in one line), which are a broker that is away (left to the
caller's timeout), and what is logged."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from connectors.kafka_clients import KafkaRefusedError, Refusals


class _Error:
    """A librdkafka error as the callback receives it."""

    def __init__(self, code: int, text: str):
        self._code, self._text = code, text

    def code(self) -> int:
        return self._code

    def str(self) -> str:
        return self._text


AUTH = _Error(
    KafkaError._AUTHENTICATION, "sasl_ssl://b:9093/bootstrap: SASL authentication error: Authentication failed"
)
HANDSHAKE = _Error(KafkaError._TRANSPORT, "ssl://b:9092/bootstrap: SSL handshake failed: Disconnected")
DOWN = _Error(KafkaError._TRANSPORT, "b:9092/1: Connect to ipv4#127.0.0.1:9092 failed: Connection refused")


def test_an_authentication_error_is_a_refusal_at_once_without_the_address_twice():
    refusals = Refusals("b:9093", "SASL_SSL SCRAM-SHA-512 as user 'u' (connection 'prod')")
    refusals.check()  # nothing yet
    refusals(AUTH)
    with pytest.raises(KafkaRefusedError) as refused:
        refusals.check()
    assert str(refused.value) == (
        "Kafka at b:9093 refused SASL_SSL SCRAM-SHA-512 as user 'u' (connection 'prod'): "
        "SASL authentication error: Authentication failed"
    )


def test_a_tls_refusal_counts_when_it_comes_again_and_a_broker_that_is_down_never_does(caplog):
    refusals = Refusals("b:9092", "SSL (connection 'prod')")
    for _ in range(5):
        refusals(DOWN)
    refusals(HANDSHAKE)
    refusals.check()  # once: a broker going down mid-handshake
    refusals(HANDSHAKE)
    with pytest.raises(KafkaRefusedError, match="SSL handshake failed"):
        refusals.check()
    logged = [record.msg for record in caplog.records if record.name == "tidemark.kafka"]
    assert len(logged) == 1 and "Connection refused" in logged[0]["error"], "each kind of other error once"


def test_a_first_tls_refusal_is_not_said_before_an_answer_and_is_an_ordinary_error_after_one(caplog):
    """The job's one line is the refusal: the first TLS alert before any answer is held, not
    logged. After an answer the same error is a transport error like any other, said once."""
    refusals = Refusals("b:9092", "SSL (connection 'prod')")
    refusals(HANDSHAKE)
    assert [r for r in caplog.records if r.name == "tidemark.kafka"] == []
    refusals.answered()
    refusals(HANDSHAKE)
    refusals(HANDSHAKE)
    refusals.check()
    logged = [record.msg for record in caplog.records if record.name == "tidemark.kafka"]
    assert len(logged) == 1 and "SSL handshake failed" in logged[0]["error"]


def test_a_read_the_acls_refuse_is_a_lasting_refusal_naming_the_topic_and_the_connection():
    from connectors.kafka_clients import access_denied_codes

    refusals = Refusals("b:9093", "SASL_SSL SCRAM-SHA-512 as user 'u' (connection 'prod')")
    denied = _Error(
        KafkaError.TOPIC_AUTHORIZATION_FAILED, "Fetch from broker 1 failed: Broker: Topic authorization failed"
    )
    assert denied.code() in access_denied_codes() and KafkaError._AUTHENTICATION not in access_denied_codes()
    error = refusals.reading_refused("orders.eu", denied)
    assert error.lasting, "retrying cannot help: a continuous run fails instead of waiting"
    assert str(error) == (
        "Kafka at b:9093 refused SASL_SSL SCRAM-SHA-512 as user 'u' (connection 'prod') reading topic 'orders.eu': "
        "Fetch from broker 1 failed: Broker: Topic authorization failed"
    )
