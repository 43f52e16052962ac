"""The Kinesis stream the generator writes to: checked before the first record, then fed with
PutRecords, nothing lost.

The generator's partition N is the stream's N-th open shard (open shards ordered by their hash
key range): each record carries its device id as its partition key, as on Kafka, and the
shard's starting hash key as its ExplicitHashKey, so one profile still feeds one shard. Kinesis
stamps each record with its arrival time (ApproximateArrivalTimestamp); a producer cannot set
it, so the event time is only in the payload.

Records go out in PutRecords calls of at most 500 records and 5 MiB (data and partition keys:
Kinesis's limits per call). A call answers per record; the records it reports failed
(FailedRecordCount: throttled, or an internal error) are sent again, with backoff, until every
one is stored or the attempts run out, which fails the run naming the stream. A retried record
lands after the ones of its call that did not fail: arrival order is then not send order, as
with any Kinesis producer; the event time in the payload is what the persist job orders by.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tidemark.kinesis_access import KinesisAccess

MAX_RECORDS_PER_CALL = 500
MAX_BYTES_PER_CALL = 5 * 1024 * 1024
# A call whose records keep failing is retried with backoff doubling from 50 ms to 2 s: about a
# minute in all before the run fails, longer than a throttled shard's usual second.
MAX_ATTEMPTS = 40
_FIRST_BACKOFF_S = 0.05
_MAX_BACKOFF_S = 2.0


class KinesisSinkError(Exception):
    """The stream does not exist or has too few shards, the endpoint does not answer, the
    credentials are refused, or records could not be stored. The message names the stream and
    where it was asked, and says what to do; the CLI prints it without a traceback."""


class KinesisSink:
    """Sends records to explicit shards of one stream, in PutRecords calls, retrying what fails."""

    def __init__(
        self,
        access: KinesisAccess,
        shards_needed: int,
        client=None,
        sleep: Callable[[float], None] = time.sleep,
        max_attempts: int = MAX_ATTEMPTS,
    ):
        """Check the stream first (KinesisSinkError if it is not ready), then take its open shards.

        ``client``: a boto3 Kinesis client (tests give their own); default: one built from
        ``access``. ``sleep`` is the backoff's clock."""
        self.access = access
        self.stream = access.stream
        self.where = (
            f"endpoint {access.endpoint} (region {access.region})" if access.endpoint else f"region {access.region}"
        )
        self._client = client if client is not None else _client(access)
        self._sleep = sleep
        self._max_attempts = max_attempts
        self._hash_keys = self._open_shard_hash_keys(shards_needed)
        self._batch: list[dict] = []
        self._batch_bytes = 0
        self.calls = 0
        self.retried_records = 0

    @property
    def shard_ids(self) -> tuple[str, ...]:
        """The open shards, in the order the generator's partitions map to them."""
        return tuple(shard_id for shard_id, _ in self._hash_keys)

    def send(self, partition: int, key: bytes, value: bytes, timestamp_ms: int) -> None:
        """Queue one record for the ``partition``-th open shard; a full call's worth goes out at once.

        ``timestamp_ms`` is not sent: Kinesis stamps the arrival time itself."""
        partition_key = key.decode("utf-8", errors="replace")[:256] or f"partition-{partition}"
        size = len(value) + len(partition_key.encode())
        if len(self._batch) >= MAX_RECORDS_PER_CALL or self._batch_bytes + size > MAX_BYTES_PER_CALL:
            self._flush()
        self._batch.append(
            {"Data": value, "PartitionKey": partition_key, "ExplicitHashKey": self._hash_keys[partition][1]}
        )
        self._batch_bytes += size

    def wait(self, seconds: float) -> None:
        """Send what is queued, then pause up to ``seconds`` (live mode's clock wait)."""
        started = time.monotonic()
        self._flush()
        remaining = seconds - (time.monotonic() - started)
        if remaining > 0:
            self._sleep(remaining)

    def close(self) -> None:
        """Send everything queued; raise KinesisSinkError if any record could not be stored."""
        self._flush()

    def _flush(self) -> None:
        pending, self._batch, self._batch_bytes = self._batch, [], 0
        backoff_s = _FIRST_BACKOFF_S
        for attempt in range(1, self._max_attempts + 1):
            if not pending:
                return
            failed, first_error = self._put(pending)
            if failed and attempt == self._max_attempts:
                raise KinesisSinkError(
                    f"{len(failed)} records could not be stored in Kinesis stream {self.stream!r} at {self.where} "
                    f"after {attempt} attempts; last error: {first_error}. If it is throttling "
                    f"(ProvisionedThroughputExceededException), lower --rate-scale or add shards"
                )
            if failed:
                self.retried_records += len(failed)
                self._sleep(backoff_s)
                backoff_s = min(backoff_s * 2, _MAX_BACKOFF_S)
            pending = failed

    def _put(self, entries: list[dict]) -> tuple[list[dict], str]:
        """One PutRecords call: the entries it reports failed, and the first failure's words."""
        from botocore.exceptions import ClientError

        self.calls += 1
        try:
            response = self._call("put_records", StreamName=self.stream, Records=entries)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code in _RETRIED_CALL_ERRORS:  # the whole call was throttled or failed inside Kinesis
                return entries, f"{code}: {error}"
            raise self._refused(error) from None
        if not response.get("FailedRecordCount"):
            return [], ""
        results = response["Records"]
        failed = [entry for entry, result in zip(entries, results) if result.get("ErrorCode")]
        first = next(result for result in results if result.get("ErrorCode"))
        return failed, f"{first['ErrorCode']}: {first.get('ErrorMessage', '')}"

    def _open_shard_hash_keys(self, shards_needed: int) -> list[tuple[str, str]]:
        """(shard id, starting hash key) of each open shard, by hash key; checks the stream first."""
        from botocore.exceptions import ClientError

        try:
            summary = self._call("describe_stream_summary", StreamName=self.stream)["StreamDescriptionSummary"]
        except ClientError as error:
            raise self._refused(error, shards_needed) from None
        if summary["StreamStatus"] not in ("ACTIVE", "UPDATING"):
            raise KinesisSinkError(
                f"Kinesis stream {self.stream!r} at {self.where} is {summary['StreamStatus']}, not ACTIVE: "
                f"wait until it is, then run again"
            )
        shards, token = [], None
        while True:
            page = self._call("list_shards", **({"NextToken": token} if token else {"StreamName": self.stream}))
            shards += [s for s in page["Shards"] if "EndingSequenceNumber" not in s["SequenceNumberRange"]]
            token = page.get("NextToken")
            if not token:
                break
        shards.sort(key=lambda shard: int(shard["HashKeyRange"]["StartingHashKey"]))
        if len(shards) < shards_needed:
            raise KinesisSinkError(
                f"Kinesis stream {self.stream!r} at {self.where} has {len(shards)} open shards but {shards_needed} are "
                f"needed (one per profile, and at least the stream's configured shards): split shards or recreate it "
                f"with `tidemark create-kinesis-stream {self.stream} --shards {shards_needed}` (loopback), or fix "
                f"source.shards in the stream configuration"
            )
        return [(shard["ShardId"], shard["HashKeyRange"]["StartingHashKey"]) for shard in shards]

    def _call(self, operation: str, **params):
        """A Kinesis API call; no answer or no credentials become a KinesisSinkError naming the stream."""
        from botocore.exceptions import BotoCoreError, NoCredentialsError, PartialCredentialsError

        try:
            return getattr(self._client, operation)(**params)
        except (NoCredentialsError, PartialCredentialsError):
            raise KinesisSinkError(
                f"no AWS credentials to write Kinesis stream {self.stream!r} at {self.where}: name an Airflow AWS "
                f"connection in source.aws_conn_id, or export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
            ) from None
        except BotoCoreError as error:
            hint = "start the loopback with `tidemark up kinesis`, " if self.access.endpoint else ""
            raise KinesisSinkError(
                f"Kinesis at {self.where} does not answer for stream {self.stream!r} ({type(error).__name__}): "
                f"{hint}or point --kinesis-endpoint or source.endpoint at a running one"
            ) from None

    def _refused(self, error, shards_needed: int | None = None) -> KinesisSinkError:
        code = error.response.get("Error", {}).get("Code", "")
        if code == "ResourceNotFoundException":
            create = f"`tidemark create-kinesis-stream {self.stream} --shards {shards_needed}`" if shards_needed else ""
            return KinesisSinkError(
                f"Kinesis stream {self.stream!r} does not exist at {self.where}"
                + (f": create it with {create} (loopback), or check source.stream and source.region" if create else "")
            )
        if code in _CREDENTIAL_ERRORS:
            return KinesisSinkError(
                f"Kinesis at {self.where} refused the credentials from {self.access.credentials_from} for stream "
                f"{self.stream!r} ({code}): check the AWS connection source.aws_conn_id names, or the environment's keys"
            )
        return KinesisSinkError(
            f"Kinesis refused a request for stream {self.stream!r} at {self.where}: {code}: {error}"
        )


_RETRIED_CALL_ERRORS = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "InternalFailure", "ServiceUnavailable"}
)
_CREDENTIAL_ERRORS = frozenset(
    {
        "UnrecognizedClientException",
        "InvalidSignatureException",
        "ExpiredTokenException",
        "AccessDeniedException",
        "IncompleteSignature",
        "MissingAuthenticationToken",
    }
)


def _client(access: KinesisAccess):
    """A boto3 Kinesis client failing fast when nothing answers (3 s to connect, 10 s to read);
    botocore retries what it retries (connection errors, throttled calls) twice."""
    import boto3
    from botocore.config import Config

    config = Config(connect_timeout=3, read_timeout=10, retries={"max_attempts": 2, "mode": "standard"})
    return boto3.session.Session().client("kinesis", config=config, **access.client_settings())
