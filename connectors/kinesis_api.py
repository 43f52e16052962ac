"""Kinesis's API as tidemark calls it: the boto3 client, the per-shard call rate, throttling
backed off and counted, and every failure turned into an error that names the stream, the shard
and the endpoint.

Limits respected: GetRecords at most ``max_calls_per_second`` per shard (Kinesis allows 5 per
shard, shared by every consumer), at most 10,000 records a call; throttling backs off (full
jitter) and is counted, never raised. boto3 is imported inside the functions so the driver, the
DAG files and the unit tests import this module cheaply; credentials are the stream's AWS
connection's keys when the process environment holds them (TIDEMARK_KINESIS_*,
tidemark.kinesis_access), else boto3's default chain, and are never logged.
"""

from __future__ import annotations

import logging
import random
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from tidemark.kinesis_access import KinesisAccess

log = logging.getLogger(__name__)

# Throttling backoff: full jitter over an exponential, capped (AWS's architecture-blog advice).
_BACKOFF_BASE_S = 0.1
_BACKOFF_CAP_S = 5.0
# A fill gives a throttled shard this many retries, then leaves it for the next fill: one hot
# shard must not hold up planning the other 1,799. read_range (a Spark task) keeps retrying.
FILL_THROTTLE_RETRIES = 4
# An empty page with MillisBehindLatest > 0 is followed; lost_to_retention looks this far for
# the trim horizon's first record.
HORIZON_PAGES = 50

_THROTTLED = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "LimitExceededException",
        "ThrottlingException",
        "KMSThrottlingException",
    }
)
_REFUSED = frozenset(
    {
        "UnrecognizedClientException",
        "InvalidSignatureException",
        "ExpiredTokenException",
        "ExpiredToken",
        "AccessDenied",
        "AccessDeniedException",
        "IncompleteSignature",
        "InvalidClientTokenId",
        "MissingAuthenticationToken",
        "SignatureDoesNotMatch",
        "KMSAccessDeniedException",
    }
)


class KinesisUnavailableError(RuntimeError):
    """Kinesis could not be read. The message names the stream, the shard when there is one, and
    the endpoint or region, and says what to check. ``stream``, ``shard_id`` and ``where`` hold
    the same for code."""

    def __init__(self, message: str, *, stream: str, where: str, shard_id: str | None = None, code: str = ""):
        super().__init__(message)
        self.code = code  # the API's error code, when Kinesis answered with one
        self.stream = stream
        self.where = where
        self.shard_id = shard_id


class KinesisStreamNotFoundError(KinesisUnavailableError):
    """The stream does not exist in that account and region (or endpoint)."""


class KinesisEndpointError(KinesisUnavailableError):
    """The endpoint or region did not answer (connection refused, connect or read timeout)."""


class KinesisCredentialsError(KinesisUnavailableError):
    """Kinesis refused the credentials (unknown key, bad signature, expired token, access denied)."""


class KinesisShardGoneError(KinesisUnavailableError):
    """A shard the job was reading is no longer listed: it expired (retention) or the stream was
    deleted and recreated under the same name."""


@dataclass(frozen=True)
class KinesisRecord:
    """One data record: its sequence number, ApproximateArrivalTimestamp (ms, UTC), bytes and key."""

    sequence: int
    arrival_ms: int
    data: bytes
    partition_key: str

    # As a tidemark.partitioned_log.LogRecord: the sequence is the position, the arrival the log
    # timestamp, the partition key the key.
    @property
    def position(self) -> int:
        return self.sequence

    @property
    def timestamp_ms(self) -> int:
        return self.arrival_ms

    @property
    def key(self) -> bytes:
        return self.partition_key.encode()

    @property
    def value(self) -> bytes:
        return self.data

    @property
    def headers(self) -> None:
        """Kinesis records carry no headers."""
        return None


def kinesis_client(
    region: str, endpoint: str | None = None, max_workers: int = 16, *, environ: Mapping[str, str] | None = None
):
    """A boto3 Kinesis client for ``region`` and ``endpoint``, failing fast when the endpoint does
    not answer (3 s to connect, 10 s to read, no botocore retries: tidemark's own loop retries a
    connection once and backs off throttling itself, so throttles are counted).

    Its keys are the stream's AWS connection's when ``environ`` (default ``os.environ``) holds
    TIDEMARK_KINESIS_ACCESS_KEY_ID and _SECRET_ACCESS_KEY (and _SESSION_TOKEN, if set), else
    boto3's default chain; region and endpoint are always the caller's. Raises
    tidemark.kinesis_access.KinesisAccessError when only one of the pair is set. A fresh session
    per client: boto3 sessions are not thread-safe, clients are."""
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=3,
        read_timeout=10,
        retries={"total_max_attempts": 1},
        max_pool_connections=max(10, max_workers + 2),
    )
    settings = KinesisAccess.from_source(_Reached(region, endpoint), environ).client_settings()
    keys = {name: value for name, value in settings.items() if name not in ("region_name", "endpoint_url")}
    return boto3.session.Session().client("kinesis", region_name=region, endpoint_url=endpoint, config=config, **keys)


class InjectedThrottling:
    """A Kinesis client that refuses a fraction of GetRecords calls with Kinesis's throttling
    error before asking the real one: the chaos switch of the throttling tests (a loopback
    Kinesis never throttles). Everything else goes to ``client`` unchanged."""

    def __init__(self, client, fraction: float, seed: int = 27):
        self._client = client
        self._fraction = fraction
        self._random = random.Random(seed)
        self.refused = 0

    def get_records(self, **params):
        if self._random.random() < self._fraction:
            from botocore.exceptions import ClientError

            self.refused += 1
            raise ClientError(
                {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "Rate exceeded (injected)"}},
                "GetRecords",
            )
        return self._client.get_records(**params)

    def __getattr__(self, name):
        return getattr(self._client, name)


def kinesis_client_for(connection, max_workers: int = 16):
    """The boto3 client this process reads ``connection`` (a tidemark.log_connection.KinesisConnection)
    with, credentials from the environment, wrapped in the injected throttling when it asks for it."""
    client = kinesis_client(connection.region, connection.endpoint, max_workers)
    return InjectedThrottling(client, connection.injected_throttling) if connection.injected_throttling else client


@dataclass(frozen=True)
class _Reached:
    """Where kinesis_client goes, as KinesisAccess reads a stream's source; the keys it finds do
    not depend on the stream's name."""

    region: str
    endpoint: str | None
    stream: str = ""


def where_of(region: str, endpoint: str | None) -> str:
    return f"endpoint {endpoint} (region {region})" if endpoint else f"region {region}"


EXPIRED = object()  # GetRecords said ExpiredIteratorException: ask for a new iterator, not an error


class _CallRate:
    """At most ``per_second`` calls per shard in any second; a caller over it sleeps."""

    def __init__(self, per_second: float, clock, sleep):
        self._window = max(1, int(per_second))
        self._span_s = self._window / per_second
        self._clock = clock
        self._sleep = sleep
        self._calls: dict[str, deque] = {}
        self._lock = threading.Lock()

    def wait(self, shard_id: str) -> None:
        with self._lock:
            calls = self._calls.setdefault(shard_id, deque(maxlen=self._window))
        # One thread per shard at a time (fill hands each shard to one worker): no lock needed here.
        if len(calls) == self._window:
            wait_s = calls[0] + self._span_s - self._clock()
            if wait_s > 0:
                self._sleep(wait_s)
        calls.append(self._clock())


class KinesisApi:
    """Kinesis calls for one stream: rate-limited GetRecords, throttling backed off and counted,
    ExpiredIteratorException turned into ``EXPIRED``, every other failure a KinesisUnavailableError
    naming the stream, shard and endpoint."""

    def __init__(self, client, stream: str, where: str, clock, sleep, max_calls_per_second: float):
        self.client = client
        self.stream = stream
        self.where = where
        self._clock = clock
        self._sleep = sleep
        self._rate = _CallRate(max_calls_per_second, clock, sleep)
        self._lock = threading.Lock()
        self.calls = 0
        self.throttled_calls = 0

    def call(self, operation: str, shard_id: str | None = None, throttle_retries: int | None = None, **params):
        """The API's answer; None when still throttled after ``throttle_retries`` retries
        (None: retry for ever)."""
        from botocore.exceptions import (
            ClientError,
            ConnectionClosedError,
            ConnectTimeoutError,
            EndpointConnectionError,
            NoCredentialsError,
            ReadTimeoutError,
        )

        throttled = 0
        connection_failures = 0
        while True:
            if operation == "get_records" and shard_id is not None:
                self._rate.wait(shard_id)
            with self._lock:
                self.calls += 1
            try:
                return getattr(self.client, operation)(**params)
            except ClientError as error:
                code = error.response.get("Error", {}).get("Code", "")
                if code == "ExpiredIteratorException":
                    return EXPIRED
                if code not in _THROTTLED:
                    raise self._refused(error, code, operation, shard_id) from None
                with self._lock:
                    self.throttled_calls += 1
                throttled += 1
                if throttle_retries is not None and throttled > throttle_retries:
                    log.info("kinesis throttled", extra={"stream": self.stream, "shard": shard_id, "code": code})
                    return None
                self._sleep(random.uniform(0.5, 1.0) * min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2**throttled))
            except (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError, ConnectionClosedError) as error:
                connection_failures += 1
                if connection_failures > 1:
                    raise KinesisEndpointError(
                        f"Kinesis at {self.where} did not answer {_api_name(operation)} for stream {self.stream!r}"
                        f"{_of_shard(shard_id)}: {error}. Check that the endpoint or region is right and reachable "
                        "from this machine (network, proxy, VPC endpoint)",
                        stream=self.stream,
                        where=self.where,
                        shard_id=shard_id,
                    ) from None
                self._sleep(0.2)
            except NoCredentialsError:
                raise KinesisCredentialsError(
                    f"no AWS credentials found to read Kinesis stream {self.stream!r} at {self.where}: set them in "
                    "the environment (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE) or the stream's Airflow "
                    "AWS connection",
                    stream=self.stream,
                    where=self.where,
                    shard_id=shard_id,
                ) from None

    def _refused(self, error, code: str, operation: str, shard_id: str | None) -> KinesisUnavailableError:
        message = error.response.get("Error", {}).get("Message", "") or str(error)
        asked = f"{_api_name(operation)} for stream {self.stream!r}{_of_shard(shard_id)} at {self.where}"
        details = dict(stream=self.stream, where=self.where, shard_id=shard_id, code=code)
        if code == "403" and error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 403:
            # A 403 whose body botocore could not parse (a proxy's, an endpoint policy's, moto's
            # XML): the code is the status and the message the raw body, but a refusal all the same.
            code, message = "HTTP 403", message.split("<Message>")[-1].split("</Message>")[0][:300]
            details["code"] = code
        if code in _REFUSED or code == "HTTP 403":
            return KinesisCredentialsError(
                f"Kinesis refused the credentials ({code}) on {asked}: {message}. Check the access key, secret and "
                "session token in the environment or the stream's Airflow AWS connection, that they are not expired, "
                "and that their policy allows kinesis:ListShards, GetShardIterator, GetRecords and "
                "DescribeStreamSummary on this stream",
                **details,
            )
        if code == "ResourceNotFoundException" and (shard_id is None or "shard" not in message.lower()):
            return KinesisStreamNotFoundError(
                f"Kinesis stream {self.stream!r} does not exist at {self.where} ({asked}: {message}). Check "
                "source.stream, source.region and source.endpoint in conf/streams.yaml, and the AWS account of the "
                "credentials",
                **details,
            )
        if code == "ResourceNotFoundException":
            return KinesisShardGoneError(
                f"shard {shard_id} of Kinesis stream {self.stream!r} is no longer there ({asked}: {message}): it "
                "expired (RetentionPeriodHours) or the stream was recreated. lost_to_retention reports what the lake "
                "had not read of it",
                **details,
            )
        return KinesisUnavailableError(f"Kinesis failed {asked}: {code}: {message}", **details)

    def iterator(self, shard_id: str, position: int, starting_sequence: int | None) -> str | None:
        """An iterator at the first record with sequence >= ``position``; None while throttled.

        A shard's starting position is TRIM_HORIZON (everything retained). Otherwise
        AFTER_SEQUENCE_NUMBER(position − 1): exact for integers, and position − 1 is the last
        record read when the position came from reading. A position that is a record's own
        sequence (a time-index answer) makes position − 1 a number Kinesis may refuse as not its
        own (InvalidArgumentException): then AT_SEQUENCE_NUMBER(position), and as a last resort
        TRIM_HORIZON, whose records below the position the reader drops.
        """
        if starting_sequence is not None and position <= starting_sequence:
            asks = [("TRIM_HORIZON", None)]
        else:
            asks = [("AFTER_SEQUENCE_NUMBER", position - 1), ("AT_SEQUENCE_NUMBER", position), ("TRIM_HORIZON", None)]
        for kind, sequence in asks:
            params = {"StreamName": self.stream, "ShardId": shard_id, "ShardIteratorType": kind}
            if sequence is not None:
                params["StartingSequenceNumber"] = str(sequence)
            try:
                answer = self.call("get_shard_iterator", shard_id, FILL_THROTTLE_RETRIES, **params)
            except KinesisUnavailableError as error:
                if error.code == "InvalidArgumentException":
                    continue
                raise
            return None if answer is None else answer["ShardIterator"]
        raise KinesisUnavailableError(
            f"Kinesis refused every iterator for shard {shard_id} of stream {self.stream!r} at {self.where} from "
            f"sequence {position}",
            stream=self.stream,
            where=self.where,
            shard_id=shard_id,
        )


def _api_name(operation: str) -> str:
    return "".join(part.capitalize() for part in operation.split("_"))


def _of_shard(shard_id: str | None) -> str:
    return f", shard {shard_id}" if shard_id else ""


def record_of(raw: Mapping) -> KinesisRecord:
    arrival = raw["ApproximateArrivalTimestamp"]
    arrival_ms = int(arrival.timestamp() * 1000) if hasattr(arrival, "timestamp") else int(float(arrival) * 1000)
    return KinesisRecord(int(raw["SequenceNumber"]), arrival_ms, bytes(raw["Data"]), raw.get("PartitionKey", ""))
