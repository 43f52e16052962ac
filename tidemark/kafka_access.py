"""How a process reaches a Kafka cluster: its brokers, and the client settings that secure them.

The stream configuration holds no secret. A stream whose topic is on a secured cluster names an
Airflow connection (``source.kafka_conn_id``) of the ``kafka`` type that
apache-airflow-providers-apache-kafka defines: its extra is a JSON object of librdkafka settings
(``security.protocol``, ``sasl.mechanisms``, ``sasl.username``, ``sasl.password``,
``ssl.ca.location``, ``sasl.oauthbearer.*``, ...). Every process finds those settings in its
environment:

    TIDEMARK_KAFKA_CONN_<ID>
        the connection's librdkafka settings, a JSON object (<ID>: the connection id in upper
        case, every character other than a letter or a digit written as _). Written by
        tidemark_airflow.kafka_connection from the Airflow connection (a secrets backend
        included) before a job starts; exported by hand for the CLI, the generator and the
        watermark page outside Airflow, as the Kinesis and S3 keys are.

A stream without ``kafka_conn_id`` speaks PLAINTEXT to its brokers, as before. Only the settings
that secure a connection are taken (``security.protocol`` and the ``sasl.*``, ``ssl.*`` families):
tidemark sets every other client setting itself (isolation, fetch sizes, timeouts), and a key it
would not use fails loading, naming the key. ``bootstrap.servers`` in a connection must name the
stream's brokers or be left out: the stream configuration says where the topic is.

This module imports no Kafka library; connectors.kafka_log and the generator hand
``client_settings()`` to confluent_kafka. Values never appear in ``repr``, in an error message or
in a log line: messages name the variable and the key.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

SETTINGS_PREFIX = "TIDEMARK_KAFKA_CONN_"
# tidemark's own OAUTHBEARER method, beside librdkafka's "default" and "oidc": Amazon MSK IAM,
# whose token is a signed request made by a callback in each process (connectors.kafka_clients).
MSK_IAM = "aws_msk_iam"
_MSK_REGION_KEY = "sasl.oauthbearer.aws.region"
_MSK_HOST = re.compile(r"\.kafka(?:-serverless)?\.([a-z0-9-]+)\.amazonaws\.com(?::\d+)?$")
# The librdkafka settings a connection may carry: those that secure it.
_SECURITY_KEY = re.compile(
    r"^(security\.protocol|sasl\.[a-z0-9._]+|ssl\.[a-z0-9._]+|ssl_[a-z0-9._]+"
    r"|enable\.ssl\.certificate\.verification|enable\.sasl\.oauthbearer\.unsecure\.jwt|client\.id)$"
)
# Keys whose values are secrets: never shown, and searched for by the tests that prove it.
SECRET_KEY = re.compile(r"password|secret|^ssl\.key\.pem$|jaas", re.IGNORECASE)


class KafkaAccessError(ValueError):
    """The client settings of a stream cannot be used; the message names the connection, the
    variable and the key, never a value."""


def settings_variable(conn_id: str) -> str:
    """The environment variable that holds connection ``conn_id``'s settings."""
    return SETTINGS_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", conn_id).upper()


@dataclass(frozen=True)
class KafkaAccess:
    """The brokers of a topic and the settings that secure the connection to them.

    ``conn_id`` None: no connection, PLAINTEXT. ``security``: the connection's librdkafka
    settings; never in ``repr``."""

    bootstrap_servers: str
    conn_id: str | None = None
    security: Mapping[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, bootstrap_servers: str, conn_id: str | None, environ: Mapping[str, str] | None = None) -> KafkaAccess:
        """The access ``conn_id`` names, its settings read from ``environ`` (default
        ``os.environ``). Raises KafkaAccessError when the variable is missing, is not a JSON
        object of strings, names other brokers or carries a key tidemark sets itself."""
        if conn_id is None:
            return cls(bootstrap_servers)
        environ = os.environ if environ is None else environ
        variable = settings_variable(conn_id)
        text = environ.get(variable)
        where = f"the Kafka connection {conn_id!r} (source.kafka_conn_id)"
        if text is None:
            raise KafkaAccessError(
                f"{where}: {variable} is not set in this process's environment; under Airflow the operator "
                f"writes it from the connection, elsewhere export it as the connection's JSON settings"
            )
        try:
            settings = json.loads(text)
        except ValueError:
            raise KafkaAccessError(f"{where}: {variable} is not JSON (its value is not shown)") from None
        if not isinstance(settings, dict):
            raise KafkaAccessError(f"{where}: {variable} must be a JSON object of librdkafka settings")
        security = {}
        for key, value in settings.items():
            if key == "bootstrap.servers":
                if _servers(str(value)) != _servers(bootstrap_servers):
                    raise KafkaAccessError(
                        f"{where}: its bootstrap.servers differ from the stream's source.bootstrap_servers "
                        f"({bootstrap_servers}); the stream says where the topic is: remove it from the connection "
                        "or make them equal"
                    )
                continue
            if not _SECURITY_KEY.match(key):
                raise KafkaAccessError(
                    f"{where}: key {key!r} is not a setting that secures a connection (security.protocol, "
                    "sasl.*, ssl.*); tidemark sets the other client settings itself: remove it"
                )
            if isinstance(value, bool):
                value = "true" if value else "false"
            if not isinstance(value, (str, int, float)):
                raise KafkaAccessError(f"{where}: key {key!r} must be a string, a number or a boolean")
            security[key] = str(value)
        return cls(bootstrap_servers, conn_id, security)

    @property
    def secured(self) -> bool:
        """The connection is not PLAINTEXT."""
        return self.security.get("security.protocol", "PLAINTEXT").upper() != "PLAINTEXT"

    def client_settings(self) -> dict[str, str]:
        """The librdkafka settings every client of this topic starts from: the brokers and the
        connection's security settings (the caller adds its own). tidemark's own MSK IAM keys
        are left out: librdkafka does not know them (``msk_iam_region`` says what they ask)."""
        security = dict(self.security)
        if self.msk_iam_region is not None:
            security.pop("sasl.oauthbearer.method", None)
            security.pop(_MSK_REGION_KEY, None)
        return {"bootstrap.servers": self.bootstrap_servers, **security}

    @property
    def msk_iam_region(self) -> str | None:
        """The AWS region of an Amazon MSK IAM connection, None for any other connection.

        MSK IAM is asked for by ``sasl.oauthbearer.method: aws_msk_iam`` (the region from
        ``sasl.oauthbearer.aws.region`` or the brokers' host names), or, as
        apache-airflow-providers-apache-kafka tells it, by OAUTHBEARER without another method
        against brokers named ``*.kafka.<region>.amazonaws.com``: one connection then serves
        the provider's hooks and tidemark alike. Raises KafkaAccessError when the region
        cannot be told."""
        hosts = [_MSK_HOST.search(server.strip()) for server in self.bootstrap_servers.split(",")]
        host_region = next((host.group(1) for host in hosts if host), None)
        method = self.security.get("sasl.oauthbearer.method", "default").lower()
        mechanism = self.security.get("sasl.mechanisms") or self.security.get("sasl.mechanism")
        by_provider_rule = mechanism == "OAUTHBEARER" and method == "default" and host_region is not None
        if method != MSK_IAM and not by_provider_rule:
            return None
        region = self.security.get(_MSK_REGION_KEY) or host_region
        if region is None:
            raise KafkaAccessError(
                f"the Kafka connection {self.conn_id!r}: sasl.oauthbearer.method {MSK_IAM} needs the region: "
                f"brokers named *.kafka.<region>.amazonaws.com, or {_MSK_REGION_KEY} in the connection"
            )
        return region

    def secret_values(self) -> tuple[str, ...]:
        """The values of the keys that hold secrets (passwords, client secrets, private keys)."""
        return tuple(value for key, value in self.security.items() if SECRET_KEY.search(key) and value)

    def described(self) -> str:
        """How the connection is made, for a message: protocol, mechanism, user; never a secret."""
        if self.conn_id is None:
            return "PLAINTEXT"
        parts = [self.security.get("security.protocol", "PLAINTEXT")]
        if "sasl.mechanisms" in self.security or "sasl.mechanism" in self.security:
            parts.append(self.security.get("sasl.mechanisms") or self.security["sasl.mechanism"])
        if "sasl.username" in self.security:
            parts.append(f"as user {self.security['sasl.username']!r}")
        return f"{' '.join(parts)} (connection {self.conn_id!r})"


def _servers(text: str) -> set[str]:
    return {server.strip() for server in text.split(",") if server.strip()}
