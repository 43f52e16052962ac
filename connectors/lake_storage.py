"""Where the lake is stored and how to reach it: the one place that turns the environment into
storage settings, for Spark (S3A) and for every Spark-free reader (delta-rs ``storage_options``).

A lake or checkpoint root ``s3a://BUCKET/prefix`` puts it on S3 (or on an S3-compatible store);
any other root is a local path. The settings come from the environment of the process:

    TIDEMARK_S3_ENDPOINT    an S3-compatible endpoint, e.g. http://127.0.0.1:19400 (the loopback
                            S3 of the embedded stack); unset means AWS's own endpoints
    AWS_REGION              the bucket's region (default us-east-1)
    AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN
                            credentials; unset means the AWS default chain (instance profile...)

Under Airflow the job operators fill these from an Airflow AWS connection
(``tidemark_airflow.aws_connection``) before they submit. Credentials never go into a Spark
setting, a config file or a log line: S3A and delta-rs read them from the environment of the
process that uses them, and ``S3Access`` keeps them out of its repr.

Every Spark session registers tidemark's LogStores (built from connectors/jvm/log-stores):
``S3PutIfAbsentLogStore`` for s3/s3a/s3n and ``LocalPutIfAbsentLogStore`` for file:, so every
driver that writes a table commits with put-if-absent: delta-spark's default stores for both
lose commits when two drivers write at the same moment.
delta-rs only ever reads these tables (it commits differently; mixing writers is unsafe).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

S3_SCHEMES = ("s3a", "s3", "s3n")
LOG_STORE = "dev.tidemark.delta.S3PutIfAbsentLogStore"
LOCAL_LOG_STORE = "dev.tidemark.delta.LocalPutIfAbsentLogStore"
DEFAULT_REGION = "us-east-1"
# Environment first, so what the operator or the shell exported wins; then the machine's role.
CREDENTIALS_PROVIDERS = (
    "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider",
    "org.apache.hadoop.fs.s3a.auth.IAMInstanceCredentialsProvider",
)


class LakeStorageError(RuntimeError):
    """The lake's storage cannot be used: the message names the bucket or endpoint and what to check."""


@dataclass(frozen=True)
class S3Access:
    """How to reach S3: endpoint (None: AWS), region, and credentials (None: the default chain)."""

    endpoint: str | None = None
    region: str = DEFAULT_REGION
    access_key_id: str | None = field(default=None, repr=False)
    secret_access_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> S3Access:
        """Read the variables above. Raises LakeStorageError when only one half of a key pair is set."""
        environ = os.environ if environ is None else environ
        key, secret = environ.get("AWS_ACCESS_KEY_ID") or None, environ.get("AWS_SECRET_ACCESS_KEY") or None
        if bool(key) != bool(secret):
            missing = "AWS_SECRET_ACCESS_KEY" if key else "AWS_ACCESS_KEY_ID"
            raise LakeStorageError(
                f"{missing} is not set while its pair is: set both, or neither to use the default AWS chain"
            )
        endpoint = (environ.get("TIDEMARK_S3_ENDPOINT") or "").strip().rstrip("/") or None
        if endpoint and urlsplit(endpoint).scheme not in ("http", "https"):
            raise LakeStorageError(f"TIDEMARK_S3_ENDPOINT={endpoint!r} is not an http:// or https:// URL")
        return cls(
            endpoint=endpoint,
            region=environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or DEFAULT_REGION,
            access_key_id=key,
            secret_access_key=secret,
            session_token=environ.get("AWS_SESSION_TOKEN") or None,
        )

    @property
    def where(self) -> str:
        """The endpoint as a person would look for it, for messages."""
        return self.endpoint or f"AWS S3 ({self.region})"


def is_s3(path: str) -> bool:
    """True for s3a://, s3:// and s3n:// paths."""
    return urlsplit(path).scheme in S3_SCHEMES


def bucket_of(path: str) -> str:
    """The bucket of an S3 path (``s3a://bucket/key`` → ``bucket``)."""
    return urlsplit(path).netloc


def spark_conf(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The settings every tidemark Spark session gets, whatever its paths: the S3 LogStore for
    every S3 scheme, Delta's commit idempotency check, and S3A's endpoint, region, path style and
    credentials providers (names only: the keys stay in the environment)."""
    access = S3Access.from_environment(environ)
    conf = {f"spark.delta.logStore.{scheme}.impl": LOG_STORE for scheme in S3_SCHEMES}
    # A lake on local disk is shared by drivers too (live, recovery, backfill on one machine):
    # Delta's default store there checks and renames in two steps, and loses commits.
    conf["spark.delta.logStore.file.impl"] = LOCAL_LOG_STORE
    # A conditional PUT whose response is lost (connection reset) is retried by the SDK and then
    # answered 412 by S3 although it was this writer's own commit; without the check Delta reads
    # that as a lost race and commits the same data again at the next version.
    conf["spark.databricks.delta.commit.idempotencyCheck.enabled"] = "true"
    conf["spark.hadoop.fs.s3a.endpoint.region"] = access.region
    conf["spark.hadoop.fs.s3a.aws.credentials.provider"] = ",".join(CREDENTIALS_PROVIDERS)
    if access.endpoint:
        conf["spark.hadoop.fs.s3a.endpoint"] = access.endpoint
        # S3-compatible stores serve buckets as paths, not as host names.
        conf["spark.hadoop.fs.s3a.path.style.access"] = "true"
        conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(access.endpoint.startswith("https://")).lower()
    return conf


def delta_rs_uri(path: str) -> str:
    """The path as delta-rs names it: Hadoop's s3a:// and s3n:// are s3:// there."""
    scheme = urlsplit(path).scheme
    return "s3://" + path[len(scheme) + 3 :] if scheme in ("s3a", "s3n") else path


def storage_options(path: str, environ: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """delta-rs ``storage_options`` for reading the table at ``path``; None for a local path."""
    if not is_s3(path):
        return None
    access = S3Access.from_environment(environ)
    options = {"AWS_REGION": access.region}
    if access.endpoint:
        options["AWS_ENDPOINT_URL"] = access.endpoint
        options["AWS_ALLOW_HTTP"] = str(access.endpoint.startswith("http://")).lower()
        options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false"
    if access.access_key_id:
        options["AWS_ACCESS_KEY_ID"] = access.access_key_id
        options["AWS_SECRET_ACCESS_KEY"] = access.secret_access_key or ""
    if access.session_token:
        options["AWS_SESSION_TOKEN"] = access.session_token
    return options


def open_delta_table(path: str, version: int | None = None, environ: Mapping[str, str] | None = None):
    """``deltalake.DeltaTable`` at ``path`` (local or S3; at ``version``, default the newest),
    read-only by contract. Raises deltalake's TableNotFoundError when there is no table there."""
    from deltalake import DeltaTable

    return DeltaTable(delta_rs_uri(path), version=version, storage_options=storage_options(path, environ))


def is_delta_table(path: str, environ: Mapping[str, str] | None = None) -> bool:
    """True when a Delta table exists at ``path`` (local or S3)."""
    from deltalake import DeltaTable

    return DeltaTable.is_deltatable(delta_rs_uri(path), storage_options=storage_options(path, environ))
