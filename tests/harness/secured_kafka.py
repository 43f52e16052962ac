"""The shared broker's secured listeners as a test's stream meets them: the listener's address, the
librdkafka settings of a Kafka connection, and that connection as Airflow finds it
(``AIRFLOW_CONN_<ID>``, the provider's ``kafka`` type) or as a process outside Airflow finds it
(``TIDEMARK_KAFKA_CONN_<ID>``, tidemark.kafka_access)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from tidemark.kafka_access import SECRET_KEY, settings_variable

CONN_ID = "kafka_secured"


@dataclass(frozen=True)
class SecuredKafka:
    bootstrap: str
    settings: dict[str, str] = field(repr=False)
    conn_id: str = CONN_ID

    def airflow_environment(self) -> dict[str, str]:
        """The variable that defines the Airflow connection ``conn_id`` of the ``kafka`` type: its
        extra is the librdkafka settings, with ``bootstrap.servers`` as the provider's hook needs."""
        return {f"AIRFLOW_CONN_{self.conn_id.upper()}": json.dumps({"conn_type": "kafka", "extra": self._extra()})}

    def rest_connection(self, **settings: str) -> dict:
        """The connection as Airflow's REST API takes it (POST /api/v2/connections, and /test for
        the form's "Test" button); ``settings`` override the listener's."""
        return {"connection_id": self.conn_id, "conn_type": "kafka", "extra": json.dumps(self._extra(**settings))}

    def process_environment(self) -> dict[str, str]:
        """The variable a job run outside Airflow (the CLI, a job in the test's process) reads."""
        return {settings_variable(self.conn_id): json.dumps(self.settings)}

    def _extra(self, **settings: str) -> dict[str, str]:
        return {"bootstrap.servers": self.bootstrap, **self.settings, **settings}

    def secrets(self) -> tuple[str, ...]:
        """The values of the settings that are secrets (the password), for a secret search."""
        return tuple(value for key, value in self.settings.items() if SECRET_KEY.search(key))


def scram(broker, mechanism: str = "SCRAM-SHA-512") -> SecuredKafka:
    """``broker``'s SASL_SSL listener with its SCRAM user."""
    return SecuredKafka(broker.sasl_bootstrap, broker.sasl_settings(mechanism))


def mutual_tls(broker) -> SecuredKafka:
    """``broker``'s SSL listener, the client known by its certificate (ssl.client.auth=required)."""
    return SecuredKafka(broker.ssl_bootstrap, broker.ssl_settings())
