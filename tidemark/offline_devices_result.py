"""What one run of the offline-device detector did: the file ``spark_jobs/offline_devices/job.py
--result PATH`` writes, OfflineDevicesOperator reads and returns as its XCom (also when its
Spark-free look decides the run has nothing to do), and the CLI's demo prints. One Struct on
every side, so nobody reads it by string keys.

Times are ISO-8601 UTC text with milliseconds (tidemark.event_time_text). Event time is read in
slices [from, until) of sealed hours only; every optional field says what None means.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import msgspec

from tidemark.typed_file import encode_indented, write_typed_file


class OfflineDevicesResultError(ValueError):
    """A detector result could not be read; the message names where it came from and why."""


class OfflineDevicesResult(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One ``mode`` run ("live" from the stream's checkpoint, or a "backfill" of a range into its
    own table) over ``stream``'s sealed events, writing offline periods to ``output``.

    ``batches`` micro-batches read ``slices`` event-time slices holding ``records`` records, and
    opened ``periods_opened`` and closed ``periods_closed`` offline periods.

    ``query_id``: Spark's streaming query id; None when no Spark job ran (the operator's look
    found the sealed horizon already read). ``read_until``: the end (exclusive) of the last slice
    the detector has read, in this run or before it; None while it has read nothing (no hour
    sealed yet). ``horizon``: the end of the last sealed hour when the run looked; None while no
    hour is sealed. ``watermark``: the detector's event-time watermark (``read_until`` − 1 ms);
    None with ``read_until``. ``cut_at_horizon``: a backfill whose end lies past the sealed
    horizon stopped there; run it again once the rest is sealed.
    """

    stream: str
    mode: Literal["live", "backfill"]
    query_id: str | None
    output: str
    batches: int
    slices: int
    records: int
    periods_opened: int
    periods_closed: int
    read_until: str | None
    horizon: str | None
    watermark: str | None
    cut_at_horizon: bool = False
    # A live run that found erasures its periods were not built from started over from the lake
    # as it is now (spark_jobs.offline_devices.erasure_rebuild): the erased records are forgotten.
    rebuilt_after_erasure: bool = False

    def describe(self) -> str:
        """One sentence for a log line or a person, saying what None means rather than "None"."""
        read = (
            f"read up to {self.read_until}"
            if self.read_until is not None
            else "read; the detector has read nothing yet"
        )
        horizon = f"horizon {self.horizon}" if self.horizon is not None else "no hour sealed yet"
        return (
            f"{self.slices} slices, {self.records} records {read} ({horizon}); {self.periods_opened} periods opened, "
            f"{self.periods_closed} closed; output {self.output}"
        )

    def to_json(self) -> dict:
        """The JSON-able mapping: the detector task's XCom."""
        return msgspec.json.decode(msgspec.json.encode(self))

    def encode(self) -> bytes:
        """The result file's bytes."""
        return encode_indented(self)

    def write(self, path: str | Path) -> None:
        """Write the result to ``path``, creating its folder."""
        write_typed_file(path, self)

    @classmethod
    def read(cls, path: str | Path) -> OfflineDevicesResult:
        """The result in the file at ``path``; OfflineDevicesResultError naming it when it cannot
        be read or is not one."""
        try:
            data = Path(path).read_bytes()
        except OSError as error:
            raise OfflineDevicesResultError(
                f"{path}: cannot read the offline-device detector's result ({error.strerror or error})"
            ) from None
        try:
            return msgspec.json.decode(data, type=cls)
        except msgspec.DecodeError as error:
            raise OfflineDevicesResultError(_unreadable(str(path), error)) from None

    @classmethod
    def of(cls, document: Any, source: str) -> OfflineDevicesResult:
        """The result in ``document`` (decoded JSON, e.g. the detector task's XCom), or the value
        if it already is one; OfflineDevicesResultError naming ``source`` when it is not one."""
        if isinstance(document, cls):
            return document
        try:
            return msgspec.convert(document, cls)
        except msgspec.ValidationError as error:
            raise OfflineDevicesResultError(_unreadable(source, error)) from None


def _unreadable(source: str, error: Exception) -> str:
    return f"{source} is not an offline-device detector result tidemark can read ({error})"
