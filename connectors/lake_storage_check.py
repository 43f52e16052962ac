"""The start-up check of a job's storage: before Spark starts, every S3 bucket a stream's lake
and checkpoints live in must exist and accept the credentials, at an endpoint that answers.

A job that starts Spark against a bucket it cannot use fails minutes later, deep in a Hadoop
stack trace, after it may have read from the log; this check fails it in about a second with a
message that names the bucket or the endpoint and what to check, before anything is read or
written (so nothing is lost, and the next run resumes from its checkpoint).

It asks with pyarrow's S3 filesystem (HeadBucket), which the project already has: no boto3.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from connectors.lake_storage import LakeStorageError, S3Access, bucket_of, is_s3


def check_lake_storage(stream, environ: Mapping[str, str] | None = None, timeout_s: float = 5.0) -> None:
    """Raise LakeStorageError unless every S3 bucket under ``stream``'s lake root and checkpoint
    root can be used; local roots need no check. Takes at most about ``timeout_s`` seconds per
    bucket when the endpoint does not answer."""
    check_s3_paths([stream.lake.root, stream.lake.checkpoint_root], environ, timeout_s)


def check_s3_paths(paths: Iterable[str], environ: Mapping[str, str] | None = None, timeout_s: float = 5.0) -> None:
    """The check of ``check_lake_storage`` for any paths (non-S3 paths are skipped)."""
    buckets = sorted({bucket_of(path) for path in paths if is_s3(path)})
    if not buckets:
        return
    access = S3Access.from_environment(environ)
    filesystem = _filesystem(access, timeout_s)
    for bucket in buckets:
        _check_bucket(filesystem, access, bucket)


def _check_bucket(filesystem, access: S3Access, bucket: str) -> None:
    from pyarrow.fs import FileType

    try:
        info = filesystem.get_file_info(bucket)
    except OSError as error:
        raise LakeStorageError(_explain(str(error), access, bucket)) from None
    if info.type == FileType.NotFound:
        raise LakeStorageError(
            f"bucket {bucket!r} does not exist at {access.where}: create it, or correct lake.root / "
            "lake.checkpoint_root (TIDEMARK_LAKE_ROOT, TIDEMARK_CHECKPOINT_ROOT) or TIDEMARK_S3_ENDPOINT"
        )


def _explain(error: str, access: S3Access, bucket: str) -> str:
    if "ACCESS_DENIED" in error or "INVALID_ACCESS_KEY" in error or "SIGNATURE" in error.upper():
        return (
            f"{access.where} refused the credentials for bucket {bucket!r}: check AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY (or the Airflow AWS connection) and that they may read and write the bucket"
        )
    if "NETWORK_CONNECTION" in error or "curlCode" in error or "timed out" in error.lower():
        return (
            f"the S3 endpoint {access.where} does not answer (bucket {bucket!r}): check TIDEMARK_S3_ENDPOINT and "
            "that the store runs (embedded: `tidemark up s3`)"
        )
    return f"bucket {bucket!r} at {access.where} cannot be used: {error}"


def _filesystem(access: S3Access, timeout_s: float):
    from pyarrow import fs

    options = {
        "region": access.region,
        "connect_timeout": timeout_s,
        "request_timeout": timeout_s,
        # One attempt: this is a question, not a job; a down endpoint must fail it in seconds.
        "retry_strategy": fs.AwsStandardS3RetryStrategy(max_attempts=1),
    }
    if access.endpoint:
        options["endpoint_override"] = access.endpoint
        options["scheme"] = "https" if access.endpoint.startswith("https://") else "http"
    if access.access_key_id:
        options.update(
            access_key=access.access_key_id, secret_key=access.secret_access_key, session_token=access.session_token
        )
    return fs.S3FileSystem(**options)
