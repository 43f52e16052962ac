"""A real single-node Kafka 4.2 broker (KRaft, combined broker + controller) on loopback.

Listens on 127.0.0.1:<port> (``TIDEMARK_KAFKA_PORT``, default 19092) with its controller on
port + 1. Config, data and logs live under ``$TIDEMARK_HOME/kafka``:

    server.properties   rewritten on every start (so a port change takes effect)
    data/               the log dirs, metadata log included; formatted once
    logs/server.log     the broker's log (log4j2, rolled at 20 MB)
    kafka.out, kafka.pid  JVM stdout/stderr and pid of the detached process

Topics are never auto-created: a typo in a topic name must fail, not create a new topic.

With ``sasl_port`` the broker also listens on 127.0.0.1:<sasl_port> with ``SASL_SSL``: SCRAM-SHA-512
and SCRAM-SHA-256 (the user made at format time, ``kafka-storage format --add-scram``), PLAIN and
OAUTHBEARER (unsigned tokens, Kafka's test validator),
over TLS with a certificate of a private CA made on the fly (``trustme``, PEM files, no keytool).
With ``ssl_port`` it listens there with ``SSL`` and ``ssl.client.auth=required`` (mutual TLS: a
client shows a certificate of the same CA). Their files live under ``$TIDEMARK_HOME/kafka/tls``
(mode 0600): the CA (its key too, so that a test can issue certificates of its own), the
broker's key and certificate, a client's key and certificate, and the SASL user's password. PLAINTEXT stays for the stack's own admin
and for streams without a Kafka connection.

A broker with ``sasl_port`` also authorizes with ACLs, as a secured cluster does: a topic without
ACLs is open to every principal, and the PLAINTEXT principal is a super user.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from stack.daemon import Daemon, tail
from stack.environment import LOOPBACK, jars_root, kafka_port, tidemark_home
from stack.errors import StackError
from stack.ports import port_answers, require_free

LOG4J2_CONFIG = Path(__file__).resolve().parent / "kafka_log4j2.properties"
NODE_ID = 1
# The machine runs Spark and Airflow too; a dev broker is comfortable in 512 MB.
JVM_OPTIONS = ("-Xms128m", "-Xmx512m", "-XX:+UseG1GC", "-Djava.awt.headless=true")
JAVA_HINT = "install it with `apt-get install openjdk-17-jre-headless`"


@dataclass(frozen=True)
class KafkaBroker:
    """The embedded broker: where its state lives, which jars run it, which port it serves.

    ``start`` and ``stop`` are idempotent; both raise ``StackError`` on expected failures.
    """

    state_dir: Path
    jars_dir: Path
    port: int
    sasl_port: int | None = None
    ssl_port: int | None = None

    # The SCRAM (and PLAIN) user of the SASL_SSL listener.
    sasl_user: ClassVar[str] = "tidemark"
    # What the demo calls it when it starts it.
    title: ClassVar[str] = "the local Kafka broker"

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> KafkaBroker:
        return cls(
            state_dir=tidemark_home(environ=environ) / "kafka",
            jars_dir=jars_root(environ),
            port=kafka_port(environ),
        )

    @property
    def bootstrap(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    @property
    def controller_port(self) -> int:
        return self.port + 1

    @property
    def daemon(self) -> Daemon:
        # The marker is this broker's config path: unique to it among all brokers on the machine.
        return Daemon("kafka", self.state_dir / "kafka.pid", self.state_dir / "kafka.out", str(self.config_file))

    @property
    def config_file(self) -> Path:
        return self.state_dir / "server.properties"

    def start(self, timeout_s: float = 60.0) -> str:
        """Start the broker and wait until it answers metadata requests; returns a message.

        Already running and answering: returns at once. The broker's jars must be fetched
        (``tidemark jars``; ``tidemark up`` does it): the stack never fetches them itself.
        """
        if self.daemon.pid() is not None:
            if self._wait_answering(timeout_s):
                return f"Kafka is already running on {self.bootstrap}."
            raise StackError(
                f"Kafka (pid {self.daemon.pid()}) runs but does not answer on {self.bootstrap}; "
                f"see {self.log_file}, or restart it with `tidemark down kafka`.\n" + self._log_tails()
            )
        if shutil.which("java") is None:
            raise StackError(f"java not found on PATH; {JAVA_HINT}.")
        require_free(self.port, "Kafka broker", "TIDEMARK_KAFKA_PORT")
        require_free(self.controller_port, "Kafka controller = broker port + 1", "TIDEMARK_KAFKA_PORT")
        classpath = self._classpath()  # before any state is written: missing jars change nothing

        for secured_port, what in ((self.sasl_port, "SASL_SSL"), (self.ssl_port, "SSL (mutual TLS)")):
            if secured_port is not None:
                require_free(secured_port, f"Kafka {what} listener", "the broker's secured ports")
                self._write_tls_once()
        config = self._write_config()
        self._format_storage_once(config)
        self.daemon.launch(
            [
                "java",
                *JVM_OPTIONS,
                f"-Dlog4j2.configurationFile={LOG4J2_CONFIG}",
                f"-Dkafka.logs.dir={self.state_dir / 'logs'}",
                "-cp",
                classpath,
                "kafka.Kafka",
                str(config),
            ],
            env=os.environ,
            cwd=self.state_dir,
        )
        if not self._wait_answering(timeout_s):
            tails = self._log_tails()
            self.daemon.stop(timeout_s=10)
            raise StackError(
                f"Kafka did not answer on {self.bootstrap} within {timeout_s:.0f} s "
                f"(see {self.log_file}); last log lines:\n{tails}"
            )
        return f"Kafka started on {self.bootstrap} (data in {self.state_dir / 'data'})."

    def stop(self, timeout_s: float = 30.0) -> str:
        """Stop the broker (SIGTERM, SIGKILL after ``timeout_s``); returns a message."""
        if not self.daemon.stop(timeout_s):
            return "Kafka is not running."
        return "Kafka stopped."

    def status(self) -> str:
        pid = self.daemon.pid()
        if pid is None:
            return "kafka: not running"
        answering = "answering" if self.is_answering() else "NOT answering"
        return f"kafka: running (pid {pid}) on {self.bootstrap}, {answering}"

    def is_running(self) -> bool:
        return self.daemon.is_running()

    def is_answering(self, timeout_s: float = 3.0) -> bool:
        """True if the broker returns cluster metadata within ``timeout_s``."""
        from confluent_kafka import KafkaException

        # The TCP probe first: it fails fast and quietly while the JVM is still starting.
        if not port_answers(self.port):
            return False
        try:
            metadata = _admin(self.bootstrap).list_topics(timeout=timeout_s)
        except KafkaException:  # listening, but not serving metadata yet
            return False
        return bool(metadata.brokers)

    def create_topic(self, name: str, partitions: int, config: Mapping[str, str] | None = None) -> str:
        return create_topic(self.bootstrap, name, partitions, config)

    def has_log(self, name: str) -> bool:
        """True when topic ``name`` exists on the broker (the embedded services' common question)."""
        return _partition_count(_admin(self.bootstrap), self.bootstrap, name) is not None

    def create_log(self, name: str, partitions: int) -> str:
        """Create topic ``name`` (``create_topic``); the embedded services' common verb."""
        return self.create_topic(name, partitions)

    @property
    def log_file(self) -> Path:
        return self.state_dir / "logs" / "server.log"

    def _wait_answering(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.daemon.is_running():
                raise StackError(
                    f"Kafka exited during start-up (see {self.log_file}); last log lines:\n" + self._log_tails()
                )
            if self.is_answering():
                return True
            time.sleep(0.5)
        return False

    def _classpath(self) -> str:
        if not any((self.jars_dir / "kafka").glob("*.jar")):
            raise StackError(f"No Kafka jars in {self.jars_dir / 'kafka'}; run `tidemark jars` first.")
        return str(self.jars_dir / "kafka" / "*")

    def _write_config(self) -> Path:
        data = self.state_dir / "data"
        data.mkdir(parents=True, exist_ok=True)
        (self.state_dir / "logs").mkdir(parents=True, exist_ok=True)
        settings = {
            "process.roles": "broker,controller",
            "node.id": str(NODE_ID),
            # A static voter set, not a dynamic quorum (format --standalone): the voters'
            # endpoints are then not written into the metadata log, so changing the port
            # later needs no re-format.
            "controller.quorum.voters": f"{NODE_ID}@{LOOPBACK}:{self.controller_port}",
            "listeners": f"PLAINTEXT://{LOOPBACK}:{self.port},CONTROLLER://{LOOPBACK}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{LOOPBACK}:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(data),
            "num.partitions": "1",
            "auto.create.topics.enable": "false",
            # One node: every internal topic must live with a single replica.
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            # Fewer internal partitions than the production defaults (50): the first consumer
            # group and the first transaction come up in a second on 2 cores.
            "offsets.topic.num.partitions": "8",
            "transaction.state.log.num.partitions": "4",
            "group.initial.rebalance.delay.ms": "0",
            # Demo data stays; topics that test retention set retention.ms themselves.
            "log.retention.hours": "87600",
            "num.network.threads": "2",
            "num.io.threads": "2",
            # The cleaner's dedupe buffer (default 128 MB) would take a quarter of the heap.
            "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
            # Compacted topics are cleaned within a second of being due, not after the default
            # 15 s nap of the cleaner thread: cheap on one node, and what makes compaction testable.
            "log.cleaner.backoff.ms": "1000",
        }
        settings.update(self._secured_listener())
        config = self.config_file
        lines = ["# Written by stack/kafka_broker.py on every start; edits are overwritten."]
        lines += [f"{key}={value}" for key, value in settings.items()]
        config.write_text("\n".join(lines) + "\n")
        config.chmod(0o600)  # the PLAIN user's password is in it when the broker is secured
        return config

    def _format_storage_once(self, config: Path) -> None:
        if (self.state_dir / "data" / "meta.properties").exists():
            return
        result = subprocess.run(
            [
                "java",
                "-Xmx256m",
                f"-Dlog4j2.configurationFile={LOG4J2_CONFIG}",
                f"-Dkafka.logs.dir={self.state_dir / 'logs'}",
                "-cp",
                self._classpath(),
                "kafka.tools.StorageTool",
                "format",
                "--config",
                str(config),
                "--cluster-id",
                _new_cluster_id(),
                *self._scram_users(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env=os.environ,
        )
        if result.returncode != 0:
            raise StackError(
                f"Formatting Kafka storage in {self.state_dir / 'data'} failed: "
                + (result.stderr or result.stdout).strip()[-2000:]
            )

    # -- the SASL_SSL listener ------------------------------------------------------------------

    @property
    def tls_dir(self) -> Path:
        return self.state_dir / "tls"

    @property
    def ca_file(self) -> Path:
        """The private CA's certificate (PEM) a client of the SASL_SSL listener trusts."""
        return self.tls_dir / "ca.pem"

    @property
    def sasl_bootstrap(self) -> str:
        if self.sasl_port is None:
            raise StackError("this broker has no SASL_SSL listener (sasl_port)")
        return f"{LOOPBACK}:{self.sasl_port}"

    def sasl_password(self) -> str:
        """The SASL user's password, made once with the broker's storage."""
        return (self.tls_dir / "sasl-password").read_text().strip()

    @property
    def ssl_bootstrap(self) -> str:
        if self.ssl_port is None:
            raise StackError("this broker has no SSL listener (ssl_port)")
        return f"{LOOPBACK}:{self.ssl_port}"

    def ssl_settings(self) -> dict[str, str]:
        """The librdkafka settings of a client of the mutual-TLS listener: its certificate and
        key (PEM files) and the CA it trusts."""
        return {
            "security.protocol": "SSL",
            "ssl.ca.location": str(self.ca_file),
            "ssl.certificate.location": str(self.tls_dir / "client.pem"),
            "ssl.key.location": str(self.tls_dir / "client-key.pem"),
        }

    def certificate_authority(self):
        """The broker's private CA (trustme.CA), to issue further certificates (an expired one)."""
        import trustme

        return trustme.CA.from_pem(self.ca_file.read_bytes(), (self.tls_dir / "ca-key.pem").read_bytes())

    def sasl_settings(self, mechanism: str = "SCRAM-SHA-512") -> dict[str, str]:
        """The librdkafka settings of a client of the SASL_SSL listener, as a Kafka connection's
        extra holds them: ``mechanism`` SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN."""
        return {
            "security.protocol": "SASL_SSL",
            "sasl.mechanisms": mechanism,
            "sasl.username": self.sasl_user,
            "sasl.password": self.sasl_password(),
            "ssl.ca.location": str(self.ca_file),
        }

    def _write_tls_once(self) -> None:
        """A private CA, the broker's certificate for 127.0.0.1 and localhost (its key in PKCS#8,
        as Kafka's PEM key store reads it) and the SASL user's password; kept across restarts."""
        if (self.tls_dir / "broker.pem").exists():
            return
        import secrets

        import trustme

        self.tls_dir.mkdir(parents=True, exist_ok=True)
        self.tls_dir.chmod(0o700)
        ca = trustme.CA()
        leaf = ca.issue_cert(LOOPBACK, "localhost")
        client = ca.issue_cert("tidemark-client")
        for name, content in (
            ("broker.pem", pkcs8_key(leaf) + cert_chain(leaf)),
            ("client.pem", cert_chain(client)),
            ("client-key.pem", pkcs8_key(client)),
            ("ca.pem", ca.cert_pem.bytes()),
            ("ca-key.pem", ca.private_key_pem.bytes()),
            ("sasl-password", secrets.token_urlsafe(24).encode()),
        ):
            path = self.tls_dir / name
            path.write_bytes(content)
            path.chmod(0o600)

    def _secured_listener(self) -> dict[str, str]:
        """The server settings of the SASL_SSL and SSL listeners (none without their ports)."""
        listeners = [("PLAINTEXT", self.port), ("SASL_SSL", self.sasl_port), ("SSL", self.ssl_port)]
        listeners = [(name, port) for name, port in listeners if port is not None]
        if len(listeners) == 1:
            return {}
        settings = {
            "listeners": ",".join(
                [f"{name}://{LOOPBACK}:{port}" for name, port in listeners]
                + [f"CONTROLLER://{LOOPBACK}:{self.controller_port}"]
            ),
            "advertised.listeners": ",".join(f"{name}://{LOOPBACK}:{port}" for name, port in listeners),
            "listener.security.protocol.map": ",".join(
                [f"{name}:{name}" for name, _ in listeners] + ["CONTROLLER:PLAINTEXT"]
            ),
        }
        if self.ssl_port is not None:
            settings.update(
                {
                    "listener.name.ssl.ssl.keystore.type": "PEM",
                    "listener.name.ssl.ssl.keystore.location": str(self.tls_dir / "broker.pem"),
                    "listener.name.ssl.ssl.truststore.type": "PEM",
                    "listener.name.ssl.ssl.truststore.location": str(self.ca_file),
                    "listener.name.ssl.ssl.client.auth": "required",
                }
            )
        if self.sasl_port is None:
            return settings
        listener = "listener.name.sasl_ssl"
        scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        plain = (
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'user_{self.sasl_user}="{self.sasl_password()}";'
        )
        return {
            **settings,
            # ACLs, as a secured cluster has them (KRaft's StandardAuthorizer, ACLs kept in the
            # metadata log). A topic without ACLs stays open to every principal, so nothing that
            # reads without ACLs changes; the PLAINTEXT principal (the stack's own admin, the
            # controller's listener) is a super user. A topic with a DENY for the SASL user is
            # what a reader the ACLs refuse meets.
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found": "true",
            "super.users": "User:ANONYMOUS",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN,OAUTHBEARER",
            # Clients re-authenticate on their open connections when their token or session ages
            # (KIP-368), as managed clusters let them; without it a refreshed OAUTHBEARER token
            # meets a broker that refuses the handshake on a live connection.
            "connections.max.reauth.ms": "3600000",
            # OAUTHBEARER with Kafka's own validator of unsigned tokens (no validator class set):
            # a test's loopback token endpoint hands them out; a production cluster validates
            # signed tokens against its identity provider's keys.
            f"{listener}.oauthbearer.sasl.jaas.config": (
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
            ),
            f"{listener}.scram-sha-512.sasl.jaas.config": scram,
            f"{listener}.scram-sha-256.sasl.jaas.config": scram,
            f"{listener}.plain.sasl.jaas.config": plain,
            f"{listener}.ssl.keystore.type": "PEM",
            f"{listener}.ssl.keystore.location": str(self.tls_dir / "broker.pem"),
        }

    def _scram_users(self) -> list[str]:
        """``kafka-storage format`` arguments that make the SCRAM user (KRaft keeps it in metadata)."""
        if self.sasl_port is None:
            return []
        user = f"[name={self.sasl_user},password={self.sasl_password()}]"
        return ["--add-scram", f"SCRAM-SHA-512={user}", "--add-scram", f"SCRAM-SHA-256={user}"]

    def _log_tails(self) -> str:
        text = self.daemon.log_tail(10)
        if self.log_file.exists():
            text += f"\n--- {self.log_file}\n" + tail(self.log_file, 20)
        return text


def create_topic(bootstrap: str, name: str, partitions: int, config: Mapping[str, str] | None = None) -> str:
    """Create topic ``name`` with ``partitions`` partitions (replication factor 1).

    Idempotent: an existing topic with the same partition count is fine. An existing topic
    with another partition count raises ``StackError`` (partitions can be added but never
    removed, and silently using a different layout would skew every per-partition check).
    Returns once every partition has a leader, so producing right after works.
    """
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    if partitions < 1:
        raise StackError(f"A topic needs at least 1 partition, not {partitions}.")
    admin = _admin(bootstrap)
    existing = _partition_count(admin, bootstrap, name)
    if existing is None:
        topic = NewTopic(name, num_partitions=partitions, replication_factor=1, config=dict(config or {}))
        try:
            admin.create_topics([topic], operation_timeout=30)[name].result(timeout=60)
        except KafkaException as error:
            if error.args[0].name() != "TOPIC_ALREADY_EXISTS":  # lost a race: check it below
                raise StackError(f"Could not create topic {name!r} on {bootstrap}: {error.args[0].str()}") from None
        existing = _wait_for_leaders(admin, name, partitions)
        if existing == partitions:
            return f"Topic {name!r} created with {partitions} partitions."
    if existing != partitions:
        raise StackError(
            f"Topic {name!r} already exists with {existing} partitions, not {partitions}; "
            "use another topic name, or delete the topic (or the broker's data) and create it again."
        )
    return f"Topic {name!r} already exists with {partitions} partitions."


def _admin(bootstrap: str):
    from confluent_kafka.admin import AdminClient

    # log_level 0: librdkafka would otherwise print a "Connection refused" line to stderr for
    # every poll while the broker is still starting. Errors still come back as exceptions.
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0, "socket.timeout.ms": 5000})


def _partition_count(admin, bootstrap: str, name: str) -> int | None:
    from confluent_kafka import KafkaException

    try:
        metadata = admin.list_topics(topic=name, timeout=10)
    except KafkaException as error:
        raise StackError(f"Kafka at {bootstrap} does not answer: {error.args[0].str()}") from None
    topic = metadata.topics.get(name)
    if topic is None or topic.error is not None:
        return None
    return len(topic.partitions)


def _wait_for_leaders(admin, name: str, partitions: int, timeout_s: float = 30.0) -> int:
    deadline = time.monotonic() + timeout_s
    while True:
        metadata = admin.list_topics(topic=name, timeout=10)
        topic = metadata.topics.get(name)
        if topic is not None and topic.error is None:
            led = [p for p in topic.partitions.values() if p.leader >= 0 and p.error is None]
            if len(topic.partitions) != partitions or len(led) == partitions:
                return len(topic.partitions)
        if time.monotonic() >= deadline:
            raise StackError(f"Topic {name!r} has no leader for every partition after {timeout_s:.0f} s.")
        time.sleep(0.2)


def _new_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding.

    Kafka's own generator skips ids starting with "-", which command lines would take for a flag.
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


def pkcs8_key(leaf) -> bytes:
    """A trustme certificate's private key in PKCS#8 PEM, the form Kafka's PEM key store reads."""
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def cert_chain(leaf) -> bytes:
    """A trustme certificate and the CAs above it, PEM."""
    return b"".join(blob.bytes() for blob in leaf.cert_chain_pems)
