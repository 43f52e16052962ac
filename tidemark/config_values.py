"""The values people write in conf/streams.yaml that are more than a string or a number, and the
error a configuration rule raises.

Each value type is an ``Annotated`` field type of the configuration contract
(tidemark.stream_config): the type the contract holds (a plain int or str, so the contract
encodes and decodes as JSON like any msgspec value) and, in its metadata, ``from_config``: how
the file writes it. tidemark.config_document calls ``from_config`` on the file's value before
msgspec checks the contract; it returns the held value or raises ValueError saying what was
wrong, showing the value and an example.

The contract's rules that relate several fields raise ConfigRuleError naming the key relative to
the section that owns the rule. tidemark.config_document turns both into a StreamConfigError
naming the full key path.
"""

from __future__ import annotations

import functools
import re
from typing import Annotated

import msgspec
from croniter import CroniterBadCronError, croniter

from tidemark.duration import parse_duration_ms


class ConfigRuleError(ValueError):
    """A rule across fields failed. ``key``: where, relative to the section whose validator raised
    it ("" for the section itself, "persist.max_records_per_batch" from the stream); ``reason``: what
    is wrong and what to do."""

    def __init__(self, key: str, reason: str):
        super().__init__(f"{key}: {reason}" if key else reason)
        self.key = key
        self.reason = reason


def written_as(from_config) -> dict:
    """The metadata that says how the file writes a field: ``from_config(raw) -> held value``."""
    return {"from_config": from_config}


def positive_duration_ms(raw: object) -> int:
    """A duration longer than zero (a timeout, a window), in ms."""
    ms = parse_duration_ms(raw)
    if ms == 0:
        raise ValueError(f"must be greater than zero, got {raw!r}")
    return ms


_AMOUNT = re.compile(r"\s*(\d+)\s*([mMgG])\s*")


def memory_mib(raw: object) -> int:
    """An amount of memory written JVM-style ('768m', '2g'), in MiB."""
    match = _AMOUNT.fullmatch(str(raw))
    if not match or int(match.group(1)) == 0:
        raise ValueError(f"expected an amount of memory like 768m or 2g, got {raw!r}")
    return int(match.group(1)) * (1024 if match.group(2).lower() == "g" else 1)


def cron_expression(raw: object) -> str:
    """When an Airflow DAG runs (UTC): five cron fields or an Airflow preset like '@daily'.

    Parsed by croniter, which Airflow's timetables parse it with, so what loads here schedules
    there. croniter also reads a sixth field (seconds) that Airflow's timetables do not
    describe, so it is refused: Airflow schedules by the minute.
    """
    if not isinstance(raw, str) or not raw:
        raise ValueError(f"expected a cron expression like '*/10 * * * *', got {raw!r}")
    return _checked_cron(raw)


@functools.lru_cache(maxsize=1024)
def _checked_cron(raw: str) -> str:
    """``raw`` once croniter read it (see cron_expression). Remembered: streams share a few
    schedules, and croniter's parse was half of reading a file of 200 streams (0.2 of 0.4 s)."""
    try:
        fields = len(croniter(raw).expanded)
    except (CroniterBadCronError, ValueError) as error:
        raise ValueError(
            f"{raw!r} is not a cron expression ({error}); write minute hour day-of-month month "
            f"day-of-week, e.g. '*/10 * * * *', or an Airflow preset like '@daily'"
        ) from None
    if fields > 5:
        raise ValueError(f"{raw!r} has more than five fields; Airflow schedules by the minute, e.g. '*/10 * * * *'")
    return raw


_AWS_REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-\d{1,2}")
_KINESIS_STREAM_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
_ENDPOINT = re.compile(r"(?P<scheme>https?)://(?P<authority>[^/?#\s]+)(?P<path>/[^?#\s]*)?")
_HOST_PORT = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(?P<port>\d{1,5}))?")


def aws_region(raw: object) -> str:
    """An AWS region's code ('us-east-1', 'eu-west-2', 'us-gov-west-1'), held as written."""
    if not isinstance(raw, str) or not _AWS_REGION.fullmatch(raw):
        raise ValueError(f"expected an AWS region code like us-east-1 or eu-west-2, got {raw!r}")
    return raw


def kinesis_stream_name(raw: object) -> str:
    """A Kinesis stream's name as AWS allows it: 1 to 128 of letters, digits, '_', '.', '-'."""
    text = str(raw)
    if not _KINESIS_STREAM_NAME.fullmatch(text):
        raise ValueError(
            f"a Kinesis stream name is 1 to 128 letters, digits, '_', '.' or '-', got {raw!r}; e.g. telemetry-events"
        )
    return text


def endpoint_url(raw: object) -> str:
    """An http(s) URL of a service (``http://127.0.0.1:19450``), held without a trailing '/'.

    A URL with a user or password in it is refused without being shown: credentials never sit in
    the configuration, and a message that repeated it would put them in a log."""
    text = str(raw)
    match = _ENDPOINT.fullmatch(text)
    if match and "@" in match.group("authority"):
        raise ValueError(
            "the URL holds a user name or password ('user:secret@host'); write only scheme, host and port: "
            "credentials come from the AWS connection (aws_conn_id) or the environment, never from this file"
        )
    host = _HOST_PORT.fullmatch(match.group("authority")) if match else None
    if host is None or (host.group("port") and not 1 <= int(host.group("port")) <= 65535):
        raise ValueError(f"expected an http(s) URL like http://127.0.0.1:19450, got {raw!r}")
    return text.rstrip("/")


# A duration of zero or more, written with a unit ('500ms', '30s', '10m', '2h', '7d'); held in ms.
Milliseconds = Annotated[int, msgspec.Meta(ge=0, extra=written_as(parse_duration_ms))]
# A duration longer than zero, written like Milliseconds; held in ms.
PositiveMilliseconds = Annotated[int, msgspec.Meta(ge=1, extra=written_as(positive_duration_ms))]
# Memory written JVM-style ('768m', '2g'); held in MiB.
MemoryMiB = Annotated[int, msgspec.Meta(ge=1, extra=written_as(memory_mib))]
# A cron expression or Airflow preset, checked by croniter; held as written.
CronExpression = Annotated[str, msgspec.Meta(min_length=1, extra=written_as(cron_expression))]
# An AWS region code ('us-east-1'); held as written.
AwsRegion = Annotated[str, msgspec.Meta(min_length=1, extra=written_as(aws_region))]
# A Kinesis stream name (AWS's rules); held as written.
KinesisStreamName = Annotated[str, msgspec.Meta(min_length=1, extra=written_as(kinesis_stream_name))]
# An http(s) URL without credentials in it; held without a trailing '/'.
EndpointUrl = Annotated[str, msgspec.Meta(min_length=1, extra=written_as(endpoint_url))]
