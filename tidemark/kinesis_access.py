"""How a process reaches a Kinesis stream: the stream's region and endpoint, and credentials.

Credentials never come from the stream configuration. A process finds them in its environment:

    TIDEMARK_KINESIS_ACCESS_KEY_ID, TIDEMARK_KINESIS_SECRET_ACCESS_KEY, TIDEMARK_KINESIS_SESSION_TOKEN
        written by tidemark_airflow.aws_connection from the Airflow AWS connection a stream's
        ``aws_conn_id`` names (or exported by hand). They have their own names, not AWS_*, so a
        lake on S3 under one account and a stream in another each keep their own keys.
    TIDEMARK_KINESIS_CONNECTION_ENDPOINT
        the connection's endpoint_url, used when the stream configuration names no endpoint.

Without them the client takes boto3's default chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
AWS_SESSION_TOKEN, ~/.aws, an instance or task role). This module imports no AWS library: the
readers (the generator, the Kinesis source) hand ``client_settings()`` to ``boto3.client``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

ACCESS_KEY_ID = "TIDEMARK_KINESIS_ACCESS_KEY_ID"
SECRET_ACCESS_KEY = "TIDEMARK_KINESIS_SECRET_ACCESS_KEY"
SESSION_TOKEN = "TIDEMARK_KINESIS_SESSION_TOKEN"
CONNECTION_ENDPOINT = "TIDEMARK_KINESIS_CONNECTION_ENDPOINT"
CREDENTIAL_VARIABLES = (ACCESS_KEY_ID, SECRET_ACCESS_KEY, SESSION_TOKEN)


class KinesisSourceSettings(Protocol):
    """What this module reads of a stream's source (tidemark.stream_config.KinesisSource)."""

    stream: str
    region: str
    endpoint: str | None


class KinesisAccessError(ValueError):
    """The environment holds half a key pair; the message names the variable that is missing."""


@dataclass(frozen=True)
class KinesisAccess:
    """Where a stream is and the keys to read it with; keys None: boto3's default chain.

    The keys never appear in ``repr`` (a log line or a traceback that shows this value shows none).
    """

    stream: str
    region: str
    endpoint: str | None
    access_key_id: str | None = field(default=None, repr=False)
    secret_access_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)

    @classmethod
    def from_source(cls, source: KinesisSourceSettings, environ: Mapping[str, str] | None = None) -> KinesisAccess:
        """The stream of ``source`` with the keys of ``environ`` (default ``os.environ``).

        The stream configuration's endpoint wins over the connection's. Raises KinesisAccessError
        when one of the key id and the secret is set without the other."""
        environ = os.environ if environ is None else environ
        key, secret = environ.get(ACCESS_KEY_ID) or None, environ.get(SECRET_ACCESS_KEY) or None
        if bool(key) != bool(secret):
            missing = SECRET_ACCESS_KEY if key else ACCESS_KEY_ID
            raise KinesisAccessError(
                f"{missing} is not set but its pair is: set both, or neither to use boto3's default chain"
            )
        return cls(
            stream=source.stream,
            region=source.region,
            endpoint=source.endpoint or (environ.get(CONNECTION_ENDPOINT) or "").strip().rstrip("/") or None,
            access_key_id=key,
            secret_access_key=secret,
            session_token=(environ.get(SESSION_TOKEN) or None) if key else None,
        )

    @property
    def credentials_from(self) -> str:
        """Where the keys come from, for messages (never the keys)."""
        return "the stream's AWS connection" if self.access_key_id else "boto3's default chain"

    def client_settings(self) -> dict[str, str]:
        """Keyword arguments for ``boto3.client("kinesis", **settings)``: only what is set."""
        settings = {
            "region_name": self.region,
            "endpoint_url": self.endpoint,
            "aws_access_key_id": self.access_key_id,
            "aws_secret_access_key": self.secret_access_key,
            "aws_session_token": self.session_token,
        }
        return {name: value for name, value in settings.items() if value}
