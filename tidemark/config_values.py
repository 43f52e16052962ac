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


# A duration of zero or more, written with a unit ('500ms', '30s', '10m', '2h', '7d'); held in ms.
Milliseconds = Annotated[int, msgspec.Meta(ge=0, extra=written_as(parse_duration_ms))]
# A duration longer than zero, written like Milliseconds; held in ms.
PositiveMilliseconds = Annotated[int, msgspec.Meta(ge=1, extra=written_as(positive_duration_ms))]
# Memory written JVM-style ('768m', '2g'); held in MiB.
MemoryMiB = Annotated[int, msgspec.Meta(ge=1, extra=written_as(memory_mib))]
# A cron expression or Airflow preset, checked by croniter; held as written.
CronExpression = Annotated[str, msgspec.Meta(min_length=1, extra=written_as(cron_expression))]
