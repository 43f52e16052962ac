"""The lake's files as a pyarrow file system, local or S3, for the Spark-free readers that read
files Delta names (the Delta log's commit files, the Parquet files of a table's snapshot).

The S3 settings are connectors.lake_storage's (``S3Access`` from the environment): the same
endpoint, region and credentials Spark and delta-rs use, never read from anywhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from connectors.lake_storage import S3Access, is_s3


def lake_filesystem(path: str, environ: Mapping[str, str] | None = None):
    """``(pyarrow.fs.FileSystem, path within it)`` for a lake path: ``s3a://bucket/key`` (or s3://,
    s3n://) → an S3 file system and ``bucket/key``; anything else → the local file system."""
    from pyarrow import fs

    if not is_s3(path):
        local = path[len("file://") :] if path.startswith("file://") else path
        return fs.LocalFileSystem(), local.rstrip("/")
    access = S3Access.from_environment(environ)
    options = {"region": access.region}
    if access.endpoint:
        endpoint = urlsplit(access.endpoint)
        options["endpoint_override"] = endpoint.netloc
        options["scheme"] = endpoint.scheme
        options["force_virtual_addressing"] = False
    if access.access_key_id:
        options["access_key"] = access.access_key_id
        options["secret_key"] = access.secret_access_key or ""
        if access.session_token:
            options["session_token"] = access.session_token
    parts = urlsplit(path)
    return fs.S3FileSystem(**options), f"{parts.netloc}{parts.path}".rstrip("/")
