"""The loopback Kinesis of the embedded stack and the tests: moto's server on 127.0.0.1, resharding
as Kinesis does.

Runs ``python -m stack.moto_kinesis -H 127.0.0.1 -p <port>`` (moto_server with three corrections
to its SplitShard, MergeShards and routing, see stack.moto_kinesis; ``TIDEMARK_KINESIS_PORT``,
default 19450) detached, with its pid and log under ``$TIDEMARK_HOME/kinesis``:

    moto.out, moto.pid  the server's output (one line per request) and pid

Its streams live in the server's memory: stopping it (``tidemark down kinesis``) empties it, and
``tidemark create-kinesis-stream`` makes them again. Real boto3 calls go to it (CreateStream,
ListShards, PutRecords, GetRecords with every iterator type), so what runs here runs against AWS;
two differences to know: its sequence numbers are small integers (AWS's are up to 56 digits),
and it accepts any credentials (refused credentials cannot be tested on it).

moto[server] is a test dependency (``pip install -e '.[test]'``); production never imports it.
The identity below is the loopback's own, not a secret of anyone's: moto checks none, and the
server binds 127.0.0.1 only.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from stack.daemon import Daemon
from stack.environment import (
    LOOPBACK,
    LOOPBACK_KINESIS_IDENTITY,
    LOOPBACK_KINESIS_REGION,
    kinesis_port,
    tidemark_home,
)
from stack.errors import StackError
from stack.ports import port_answers, require_free

MOTO_HINT = "install the test extra: `.venv/bin/pip install -e '.[test]'` (it holds moto[server])"


@dataclass(frozen=True)
class LoopbackKinesis:
    """The embedded Kinesis: where its pid and log live, which port it serves, the identity and
    region its clients use. ``start`` and ``stop`` are idempotent; both raise ``StackError`` on
    expected failures."""

    state_dir: Path
    port: int
    access_key_id: str = LOOPBACK_KINESIS_IDENTITY[0]
    secret_access_key: str = LOOPBACK_KINESIS_IDENTITY[1]
    region: str = LOOPBACK_KINESIS_REGION

    # What the demo calls it when it starts it.
    title: ClassVar[str] = f"the loopback Kinesis (moto's server on {LOOPBACK})"

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> LoopbackKinesis:
        return cls(state_dir=tidemark_home(environ=environ) / "kinesis", port=kinesis_port(environ))

    @property
    def endpoint(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def environment(self) -> dict[str, str]:
        """The variables that point a stream configured with ``endpoint: ${TIDEMARK_KINESIS_ENDPOINT}``
        and no ``aws_conn_id`` here, with the loopback identity as its keys (tidemark.kinesis_access)."""
        return {
            "TIDEMARK_KINESIS_ENDPOINT": self.endpoint,
            "TIDEMARK_KINESIS_ACCESS_KEY_ID": self.access_key_id,
            "TIDEMARK_KINESIS_SECRET_ACCESS_KEY": self.secret_access_key,
        }

    @property
    def daemon(self) -> Daemon:
        # The marker is the server's own arguments: its port sets it apart from any other moto.
        return Daemon("kinesis", self.state_dir / "moto.pid", self.state_dir / "moto.out", self._marker)

    @property
    def _marker(self) -> str:
        return f"stack.moto_kinesis -H {LOOPBACK} -p {self.port}"

    def start(self, timeout_s: float = 30.0) -> str:
        """Start the server and wait until it answers; returns a message."""
        if self.daemon.pid() is None:
            if importlib.util.find_spec("moto") is None:
                raise StackError(f"moto is not installed in {sys.prefix}; {MOTO_HINT}.")
            require_free(self.port, "loopback Kinesis", "TIDEMARK_KINESIS_PORT")
            self.state_dir.mkdir(parents=True, exist_ok=True)
            self.daemon.launch(
                [sys.executable, "-m", *self._marker.split()],
                # No color codes in the log file; no AWS keys of the caller's in its environment.
                env={**_without_aws_keys(os.environ), "NO_COLOR": "1"},
                cwd=self.state_dir,
            )
            if not self._wait_answering(timeout_s):
                tails = self.daemon.log_tail(20)
                self.daemon.stop(timeout_s=10)
                raise StackError(
                    f"The loopback Kinesis did not answer on {self.endpoint} within {timeout_s:.0f} s; "
                    f"last lines:\n{tails}"
                )
            return f"Loopback Kinesis started on {self.endpoint} (streams in memory; log in {self.daemon.log_file})."
        if self._wait_answering(timeout_s):
            return f"Loopback Kinesis is already running on {self.endpoint}."
        raise StackError(
            f"The loopback Kinesis (pid {self.daemon.pid()}) runs but does not answer on {self.endpoint}; "
            f"see {self.daemon.log_file}, or restart it with `tidemark down kinesis`."
        )

    def stop(self, timeout_s: float = 30.0) -> str:
        if self.daemon.stop(timeout_s):
            return "Loopback Kinesis stopped (its streams are gone)."
        return "Loopback Kinesis is not running."

    def status(self) -> str:
        pid = self.daemon.pid()
        if pid is None:
            return "kinesis: not running"
        answering = "answering" if self.is_answering() else "NOT answering"
        return f"kinesis: running (pid {pid}) on {self.endpoint}, {answering}"

    def is_running(self) -> bool:
        return self.daemon.is_running()

    def is_answering(self) -> bool:
        return port_answers(self.port)

    def client(self):
        """A boto3 Kinesis client on this server, with the loopback identity."""
        import boto3

        return boto3.client(
            "kinesis",
            endpoint_url=self.endpoint,
            region_name=self.region,
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
        )

    def create_stream(self, name: str, shards: int, timeout_s: float = 30.0) -> str:
        """Create stream ``name`` with ``shards`` shards and wait until it is ACTIVE; returns a message.

        Idempotent: a stream that exists with as many open shards is left as it is. One with
        another count raises ``StackError`` (a different layout would skew every per-shard check
        and the generator's one profile per shard)."""
        if not self.is_answering():
            raise StackError(
                f"The loopback Kinesis does not answer on {self.endpoint}: start it with `tidemark up kinesis` "
                f"(or `tidemark up`), then create the stream."
            )
        return create_stream(self.client(), self.endpoint, name, shards, timeout_s)

    def has_log(self, name: str) -> bool:
        """True when stream ``name`` exists on the server (the embedded services' common question)."""
        return name in self.client().list_streams().get("StreamNames", [])

    def create_log(self, name: str, partitions: int) -> str:
        """Create stream ``name`` with ``partitions`` shards (``create_stream``); the embedded
        services' common verb."""
        return self.create_stream(name, partitions)

    def _wait_answering(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.daemon.is_running():
                raise StackError(
                    f"The loopback Kinesis exited during start-up; last lines:\n{self.daemon.log_tail(20)}"
                )
            if self.is_answering():
                return True
            time.sleep(0.2)
        return False


def create_stream(client, endpoint: str, name: str, shards: int, timeout_s: float = 30.0) -> str:
    """Create Kinesis stream ``name`` with ``shards`` shards through ``client`` (boto3) and wait
    until it is ACTIVE; idempotent as ``LoopbackKinesis.create_stream`` says."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        client.create_stream(StreamName=name, ShardCount=shards)
        created = True
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "ResourceInUseException":
            raise StackError(f"Could not create Kinesis stream {name!r} at {endpoint}: {error}") from None
        created = False
    except BotoCoreError as error:
        raise StackError(
            f"The Kinesis service at {endpoint} did not answer ({error}); is it up? `tidemark up kinesis`"
        ) from None
    _wait_active(client, endpoint, name, timeout_s)
    open_shards = _open_shard_count(client, name)
    if not created and open_shards != shards:
        raise StackError(
            f"Kinesis stream {name!r} at {endpoint} exists with {open_shards} open shards, not {shards}: "
            f"delete it first, or fix source.shards in the stream configuration"
        )
    if created:
        return f"Created Kinesis stream {name!r} with {open_shards} shards at {endpoint}."
    return f"Kinesis stream {name!r} already exists with {open_shards} shards at {endpoint}."


def _wait_active(client, endpoint: str, name: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        status = client.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamStatus"]
        if status == "ACTIVE":
            return
        if time.monotonic() >= deadline:
            raise StackError(f"Kinesis stream {name!r} at {endpoint} is still {status} after {timeout_s:.0f} s")
        time.sleep(0.2)


def _open_shard_count(client, name: str) -> int:
    """Open shards (no ending sequence number), every page of ListShards."""
    count, token = 0, None
    while True:
        page = client.list_shards(NextToken=token) if token else client.list_shards(StreamName=name)
        count += sum(1 for shard in page["Shards"] if "EndingSequenceNumber" not in shard["SequenceNumberRange"])
        token = page.get("NextToken")
        if not token:
            return count


def _without_aws_keys(environ: Mapping[str, str]) -> dict[str, str]:
    return {name: value for name, value in environ.items() if not name.startswith(("AWS_", "TIDEMARK_KINESIS_"))}
