"""The loopback S3 of the embedded stack and the tests: s3proxy 4.1.0 on a filesystem backend.

Listens on http://127.0.0.1:<port> (``TIDEMARK_S3_PORT``, default 19400) and keeps every bucket
as a folder under ``$TIDEMARK_HOME/s3/data`` (a bucket's objects are files under it):

    s3proxy.properties  rewritten on every start (0600: it holds the loopback identity)
    data/               the buckets; the lake's bucket (``tidemark``) is created on start
    s3proxy.out, s3proxy.pid  the JVM's output and pid of the detached process

Why s3proxy and not moto's server: tidemark's S3 LogStore relies on S3's put-if-absent
(``If-None-Match: *``) being decided atomically. s3proxy's filesystem store decides it with a
hard link (link(2) fails when the name exists: one winner, whatever the timing); moto reads
the key and then writes it, with nothing in between to stop a second writer. s3proxy also
checks request signatures (moto accepts any secret), so refused credentials can be tested, and
it is one jar from Maven, run like the Kafka broker.

The identity below is the loopback store's own, not a secret of anyone's: the server binds
127.0.0.1 only, and the embedded environment hands it to tidemark's processes when the lake is
put on this store (``TIDEMARK_LAKE_STORE=s3``).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from stack.daemon import Daemon
from stack.environment import LOOPBACK, LOOPBACK_S3_BUCKET, LOOPBACK_S3_IDENTITY, jars_root, s3_port, tidemark_home
from stack.errors import StackError
from stack.ports import port_answers, require_free

JVM_OPTIONS = ("-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-Djava.awt.headless=true")
JAVA_HINT = "install it with `apt-get install openjdk-17-jre-headless`"


@dataclass(frozen=True)
class LoopbackS3:
    """The embedded S3: where its state lives, which jar runs it, which port it serves, and the
    credentials it accepts. ``start`` and ``stop`` are idempotent; both raise ``StackError`` on
    expected failures."""

    state_dir: Path
    jars_dir: Path
    port: int
    access_key_id: str = LOOPBACK_S3_IDENTITY[0]
    secret_access_key: str = LOOPBACK_S3_IDENTITY[1]
    buckets: tuple[str, ...] = (LOOPBACK_S3_BUCKET,)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> LoopbackS3:
        return cls(state_dir=tidemark_home(environ=environ) / "s3", jars_dir=jars_root(environ), port=s3_port(environ))

    @property
    def endpoint(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def environment(self) -> dict[str, str]:
        """The variables that point tidemark's storage settings (connectors.lake_storage) here."""
        return {
            "TIDEMARK_S3_ENDPOINT": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
            "AWS_REGION": "us-east-1",
        }

    def lake_environment(self, prefix: str) -> dict[str, str]:
        """``environment`` plus a lake root and a checkpoint root under ``s3a://<bucket>/<prefix>/``:
        merged into a job's environment, it puts that stream's tables and checkpoints here."""
        root = f"s3a://{self.buckets[0]}/{prefix.strip('/')}"
        return {
            **self.environment,
            "TIDEMARK_LAKE_ROOT": f"{root}/lake",
            "TIDEMARK_CHECKPOINT_ROOT": f"{root}/checkpoints",
        }

    @property
    def config_file(self) -> Path:
        return self.state_dir / "s3proxy.properties"

    @property
    def daemon(self) -> Daemon:
        return Daemon("s3", self.state_dir / "s3proxy.pid", self.state_dir / "s3proxy.out", str(self.config_file))

    def start(self, timeout_s: float = 60.0) -> str:
        """Start s3proxy, wait until it answers, create the buckets; returns a message."""
        if self.daemon.pid() is None:
            if shutil.which("java") is None:
                raise StackError(f"java not found on PATH; {JAVA_HINT}.")
            require_free(self.port, "loopback S3", "TIDEMARK_S3_PORT")
            jar = self._jar()  # fetched by `tidemark jars` (`tidemark up` does it); the stack never fetches
            self._write_config()
            self.daemon.launch(
                ["java", *JVM_OPTIONS, "-jar", jar, "--properties", str(self.config_file)],
                env={**os.environ, "LOG_LEVEL": "warn"},
                cwd=self.state_dir,
            )
            if not self._wait_answering(timeout_s):
                tails = self.daemon.log_tail(20)
                self.daemon.stop(timeout_s=10)
                raise StackError(
                    f"The loopback S3 did not answer on {self.endpoint} within {timeout_s:.0f} s; last lines:\n{tails}"
                )
            started = "started"
        elif self._wait_answering(timeout_s):
            started = "already running"
        else:
            raise StackError(
                f"The loopback S3 (pid {self.daemon.pid()}) runs but does not answer on {self.endpoint}; "
                f"see {self.daemon.log_file}, or restart it with `tidemark down s3`."
            )
        for bucket in self.buckets:
            self.create_bucket(bucket)
        return f"Loopback S3 {started} on {self.endpoint} (buckets {', '.join(self.buckets)}; data in {self.state_dir / 'data'})."

    def stop(self, timeout_s: float = 30.0) -> str:
        return "Loopback S3 stopped." if self.daemon.stop(timeout_s) else "Loopback S3 is not running."

    def status(self) -> str:
        pid = self.daemon.pid()
        if pid is None:
            return "s3: not running"
        return f"s3: running (pid {pid}) on {self.endpoint}, {'answering' if self.is_answering() else 'NOT answering'}"

    def is_running(self) -> bool:
        return self.daemon.is_running()

    def is_answering(self) -> bool:
        return port_answers(self.port)

    def create_bucket(self, bucket: str) -> None:
        """Create ``bucket`` (idempotent)."""
        filesystem = self.filesystem()
        try:
            filesystem.create_dir(bucket)
        except OSError as error:
            if "BUCKET_ALREADY_OWNED_BY_YOU" not in str(error) and "BucketAlreadyOwnedByYou" not in str(error):
                raise StackError(f"Could not create bucket {bucket!r} on {self.endpoint}: {error}") from None

    def filesystem(self):
        """A pyarrow S3 filesystem on this store, for tests and the stack's own checks."""
        from pyarrow import fs

        return fs.S3FileSystem(
            access_key=self.access_key_id,
            secret_key=self.secret_access_key,
            endpoint_override=self.endpoint,
            scheme="http",
            region="us-east-1",
            allow_bucket_creation=True,
            allow_bucket_deletion=True,
        )

    def _write_config(self) -> None:
        data = self.state_dir / "data"
        data.mkdir(parents=True, exist_ok=True)
        settings = {
            "s3proxy.endpoint": self.endpoint,
            # Signatures are checked (V2 and V4), as S3 checks them: refused credentials must fail.
            "s3proxy.authorization": "aws-v2-or-v4",
            "s3proxy.identity": self.access_key_id,
            "s3proxy.credential": self.secret_access_key,
            # s3proxy's own NIO filesystem store: put-if-absent by hard link, atomic.
            "jclouds.provider": "filesystem-nio2",
            "jclouds.filesystem.basedir": str(data),
        }
        text = "# Written by stack/loopback_s3.py on every start; edits are overwritten.\n"
        text += "".join(f"{key}={value}\n" for key, value in settings.items())
        self.config_file.parent.mkdir(parents=True, exist_ok=True)
        self.config_file.touch(mode=0o600, exist_ok=True)
        self.config_file.write_text(text)

    def _jar(self) -> str:
        jars = sorted((self.jars_dir / "s3proxy").glob("*.jar"))
        if not jars:
            raise StackError(f"No s3proxy jar in {self.jars_dir / 's3proxy'}; run `tidemark jars` first.")
        return str(jars[0])

    def _wait_answering(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.daemon.is_running():
                raise StackError(f"The loopback S3 exited during start-up; last lines:\n{self.daemon.log_tail(20)}")
            if self.is_answering():
                return True
            time.sleep(0.2)
        return False
