"""What one run of the offline-device detector does: live, or a backfill of [start, end).

The detector's DAG takes these as params (a person fills them in Airflow's form) and the job as
arguments; both go through ``parse_offline_devices_request`` once, which fails naming the param.
Empty start and end mean live: the detector continues from its checkpoint up to the sealed
horizon. Times are ISO-8601 with an explicit UTC offset; held as ms since the epoch.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tidemark.event_time_text import parse_event_time
from tidemark.param_error import ParamError

LIVE = "live"
BACKFILL = "backfill"


class OfflineDevicesRequestError(ParamError):
    """A offline-devices param is missing or wrong; the message starts with "param '<name>': "."""


@dataclass(frozen=True)
class OfflineDevicesRequest:
    """A live run (no range), or a backfill of [start_ms, end_ms) into ``output`` (None: the
    stream's default backfill table for that range, see ``backfill_table``)."""

    mode: str
    start_ms: int | None = None
    end_ms: int | None = None
    output: str | None = None

    def to_json(self) -> dict:
        return {"mode": self.mode, "start_ms": self.start_ms, "end_ms": self.end_ms, "output": self.output}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> OfflineDevicesRequest:
        return cls(data["mode"], data.get("start_ms"), data.get("end_ms"), data.get("output"))


def parse_offline_devices_request(params: Mapping[str, Any]) -> OfflineDevicesRequest:
    """Validate {start, end, output} (all optional) into a request; OfflineDevicesRequestError otherwise."""
    start = _time_param(params, "start")
    end = _time_param(params, "end")
    output = params.get("output")
    if output is not None and not isinstance(output, str):
        raise OfflineDevicesRequestError("output", f"expected a path, got {output!r}")
    output = (output or "").strip() or None
    if start is None and end is None:
        if output is not None:
            raise OfflineDevicesRequestError(
                "output", "only a backfill takes an output path; the live run writes the stream's table"
            )
        return OfflineDevicesRequest(LIVE)
    if start is None:
        raise OfflineDevicesRequestError(
            "start", "a backfill needs both start and end; leave both empty for a live run"
        )
    if end is None:
        raise OfflineDevicesRequestError("end", "a backfill needs both start and end; leave both empty for a live run")
    if end <= start:
        raise OfflineDevicesRequestError("end", "must be after start")
    return OfflineDevicesRequest(BACKFILL, start, end, output)


def backfill_table(start_ms: int, end_ms: int) -> str:
    """The name (under the stream's lake folder) of the default output table of a backfill of
    [start_ms, end_ms): ``offline_devices_backfill/20261121T1400Z_20261121T2000Z``."""
    return f"offline_devices_backfill/{_compact(start_ms)}_{_compact(end_ms)}"


def _compact(epoch_ms: int) -> str:
    text = time.strftime("%Y%m%dT%H%M%S", time.gmtime(epoch_ms // 1000))
    text = text[:-2] if text.endswith("00") else text
    return f"{text}{'' if epoch_ms % 1000 == 0 else f'.{epoch_ms % 1000:03d}'}Z"


def _time_param(params: Mapping[str, Any], name: str) -> int | None:
    value = params.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise OfflineDevicesRequestError(
            name, f"expected an ISO-8601 UTC time like 2026-11-22T09:00:00Z, got {value!r}"
        )
    try:
        return parse_event_time(value.strip())
    except ValueError as error:
        raise OfflineDevicesRequestError(name, str(error)) from None
