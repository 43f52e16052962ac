"""What every Kafka client tidemark makes has in common: the brokers and the settings that secure
them (tidemark.kafka_access), and a refusal noticed at once.

librdkafka retries a refused connection until the caller's timeout: a wrong password, an
untrusted certificate or a PLAINTEXT listener where TLS was configured would otherwise look like a
broker that does not answer, 30 s later, after a screen of identical lines. Each client is made
with an error callback (``Refusals``) that remembers the first authentication or TLS error, and
the waits of connectors.kafka_log ask it between short slices, so the caller gets one line naming
the brokers, how the connection was made and what was refused, within a second or two. The
client's own log lines are off: errors reach the caller as exceptions, and each kind once as a
log line of tidemark's.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping

from tidemark.partitioned_log import LogUnreachableError

log = logging.getLogger("tidemark.kafka")


class KafkaUnavailableError(LogUnreachableError):
    """The broker did not answer in time."""


class KafkaRefusedError(KafkaUnavailableError):
    """The brokers refused the connection: its credentials, its certificate or its protocol. The
    message names the brokers, how the connection was made (never a secret) and librdkafka's
    reason; retrying cannot help."""

    lasting = True


def access_denied_codes() -> frozenset:
    """The errors with which the brokers refuse an authenticated connection a topic or the
    cluster (their ACLs): retrying cannot help, as with a refused login."""
    from confluent_kafka import KafkaError

    return frozenset({KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED})


def _refusal_codes() -> frozenset:
    from confluent_kafka import KafkaError

    return (
        frozenset(
            {
                KafkaError._AUTHENTICATION,  # SASL: wrong password, unknown user, a token endpoint that refuses
                KafkaError._SSL,  # untrusted or expired certificate, a PLAINTEXT listener spoken to in TLS
                KafkaError.SASL_AUTHENTICATION_FAILED,
                KafkaError.UNSUPPORTED_SASL_MECHANISM,
                KafkaError.ILLEGAL_SASL_STATE,
            }
        )
        | access_denied_codes()
    )


def _refusal_kind(code: int, text: str) -> str | None:
    """ "refused" (said by the broker), "tls" (a transport error that reads as a TLS refusal: a TLS
    client at a PLAINTEXT listener, a client certificate the broker refuses with a TLS alert), or
    None."""
    from confluent_kafka import KafkaError

    if code in _refusal_codes():
        return "refused"
    if code == KafkaError._TRANSPORT and ("SSL handshake failed" in text or "ssl/tls alert" in text):
        return "tls"
    return None


class Refusals:
    """A client's error callback: remembers the first refusal, logs each other kind of error once.

    ``check()`` raises KafkaRefusedError once a refusal was seen before the client's first
    answer (``answered()``): a client that has been answered reconnects by itself (a token
    refreshed, a broker back), and its caller's timeout decides. ``described``: how the
    connection is made (tidemark.kafka_access.KafkaAccess.described), for the message."""

    def __init__(self, bootstrap_servers: str, described: str):
        self._servers = bootstrap_servers
        self._described = described
        self._lock = threading.Lock()
        self._refused: str | None = None
        self._seen: set[int] = set()
        self._tls_refusals = 0
        self._answered = False

    def __call__(self, error) -> None:
        from confluent_kafka import KafkaError

        code = error.code()
        kind = _refusal_kind(code, error.str())
        with self._lock:
            # A TLS refusal counts when it comes again on the reconnect (librdkafka's backoff, a
            # fraction of a second): a broker going down mid-handshake says it once.
            self._tls_refusals += kind == "tls"
            refusal = not self._answered and (kind == "refused" or (kind == "tls" and self._tls_refusals >= 2))
            if refusal and self._refused is None:
                self._refused = _reason(error)
            # A first TLS refusal before any answer is not said: it is raised when it comes
            # again, and a handshake cut once by a broker going down is not worth a line.
            candidate = kind == "tls" and not self._answered
            first = code not in self._seen and self._refused is None and not candidate
            if not candidate:
                self._seen.add(code)
        # A refusal is raised to the caller, in one line; "all brokers are down" follows another
        # error, already said.
        if first and not refusal and code != KafkaError._ALL_BROKERS_DOWN:
            log.warning({"event": "kafka_client_error", "servers": self._servers, "error": error.str()})

    def answered(self) -> None:
        """The brokers answered a request: the connection was accepted."""
        self._answered = True

    def check(self) -> None:
        if self._refused is not None:
            raise KafkaRefusedError(f"Kafka at {self._servers} refused {self._described}: {self._refused}")

    def reading_refused(self, topic: str, error) -> KafkaRefusedError:
        """The error for a read of ``topic`` the brokers refused (``error``, a KafkaError of
        ``access_denied_codes``): one line naming the brokers, the topic and the connection."""
        return KafkaRefusedError(
            f"Kafka at {self._servers} refused {self._described} reading topic {topic!r}: {_reason(error)}"
        )


def _reason(error) -> str:
    """librdkafka's text of ``error`` without the broker address it prefixes (the message names
    the brokers already)."""
    return re.sub(r"^\S+://\S+: ", "", error.str())


def client_settings(access, own: Mapping[str, object], refusals: Refusals | None = None) -> dict:
    """A client's settings: the connection's security settings, then the client's ``own``
    (tidemark decides how it reads), the brokers, and ``refusals`` as its error callback. An
    Amazon MSK IAM connection gets its token callback, made here, in this process: a callable
    cannot travel in a Spark option or an environment variable."""
    settings = {**access.client_settings(), **own, "bootstrap.servers": access.bootstrap_servers, "log_level": 0}
    if refusals is not None:
        settings["error_cb"] = refusals
    region = access.msk_iam_region
    if region is not None:
        settings["oauth_cb"] = msk_iam_token(region)
    return settings


def msk_iam_token(region: str):
    """librdkafka's ``oauth_cb`` for Amazon MSK IAM: a SigV4-signed request for the cluster's
    region, made by aws-msk-iam-sasl-signer-python with boto3's credential chain of this process
    (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, an instance or task role); returns
    (token, expiry in seconds since the epoch). Untested against a real MSK cluster."""

    def token(_config: str) -> tuple[str, float]:
        from aws_msk_iam_sasl_signer import MSKAuthTokenProvider

        signed, expiry_ms = MSKAuthTokenProvider.generate_auth_token(region)
        return signed, expiry_ms / 1000

    return token
