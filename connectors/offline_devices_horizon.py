"""What a live run of the offline-device detector would find, read without Spark: the stream's
sealed horizon (its seals table, read with ``deltalake`` as connectors.lake_reader reads it) and
where the detector's last run got to (its streaming checkpoint's last micro-batch).

Spark writes a micro-batch to ``<checkpoint>/offsets/<batch id>`` before it runs it: a version
line ("v1"), the batch's metadata (``batchWatermarkMs``: the watermark the batch runs under), and
the source's offset (spark_jobs.offline_devices.sealed_events_source.SliceOffset: ``until_ms``,
the end of the slice read). ``<checkpoint>/commits/<batch id>`` appears once the batch is written.
Checkpoints on S3 (``s3a://``) are read with the storage settings of connectors.lake_storage.

``look_before_detecting`` never raises for the lake's sake: a table or checkpoint it cannot read
becomes a look that runs the job, naming what could not be read and why.
"""

from __future__ import annotations

import json

from connectors.error_line import one_line
from tidemark.offline_devices_progress import (
    ERASURES_BUILT_FROM,
    DetectorProgress,
    SealedHoursLook,
    erasures_to_forget,
    look_for_sealed_hours,
)
from tidemark.stream_config import StreamConfig

HOUR_MS = 3_600_000


class CheckpointUnreadable(ValueError):
    """A checkpoint file is not what Spark writes for this query: the message names the file."""


def look_before_detecting(stream: StreamConfig) -> SealedHoursLook:
    """Whether a live run of ``stream``'s detector has nothing to do, from its seals table and its
    live checkpoint (``stream.checkpoint_path("offline_devices")``)."""
    try:
        horizon_ms = read_sealed_horizon_ms(stream)
    except Exception as error:  # any failure of the lake's storage: the job decides, not a guess
        return SealedHoursLook(
            False, f"could not read the seals table at {stream.table_path('seals')} ({one_line(error)})"
        )
    checkpoint = stream.checkpoint_path("offline_devices")
    try:
        progress = read_detector_progress(checkpoint)
    except Exception as error:
        return SealedHoursLook(False, f"could not read the detector's checkpoint at {checkpoint} ({one_line(error)})")
    look = look_for_sealed_hours(horizon_ms, progress)
    if look.nothing_new and erasures_to_forget(*erasure_versions(stream)):
        return SealedHoursLook(False, "the lake has erasures the detector has not forgotten yet (it is rebuilt)")
    return look


def erasure_versions(stream: StreamConfig) -> tuple[int | None, int | None]:
    """The stream's erasures table's version (None: no erasure yet) and the one the detector's
    periods table says it was built from (None: none), read from the Delta logs."""
    from connectors.lake_storage import is_delta_table, open_delta_table

    erasures = stream.table_path("erasures")
    version = open_delta_table(erasures).version() if is_delta_table(erasures) else None
    periods = stream.table_path("offline_devices")
    built = (
        open_delta_table(periods).metadata().configuration.get(ERASURES_BUILT_FROM) if is_delta_table(periods) else None
    )
    return version, None if built is None else int(built)


def read_sealed_horizon_ms(stream: StreamConfig) -> int | None:
    """The end of the stream's last sealed hour (ms since the epoch, UTC); None when the seals
    table holds no hour or does not exist."""
    from connectors.lake_reader import last_sealed_hour_ms

    last = last_sealed_hour_ms(stream)
    return None if last is None else last + HOUR_MS


def read_detector_progress(checkpoint: str) -> DetectorProgress | None:
    """The last micro-batch the query checkpointed at ``checkpoint`` planned; None when it planned
    none (no checkpoint yet). Raises CheckpointUnreadable for a file Spark would not have written,
    OSError when the storage does not answer."""
    fs, root = _file_system(checkpoint)
    planned = _batch_ids(fs, f"{root}/offsets")
    if not planned:
        return None
    batch = max(planned)
    path = f"{root}/offsets/{batch}"
    with fs.open_input_stream(path) as stream:
        text = stream.read().decode("utf-8")
    lines = text.splitlines()
    try:
        if len(lines) != 3 or lines[0] != "v1":
            raise ValueError("not a version line, a metadata line and one source's offset")
        metadata, offset = json.loads(lines[1]), json.loads(lines[2])
        if not isinstance(metadata, dict) or not isinstance(offset, dict) or "until_ms" not in offset:
            raise ValueError("no batchWatermarkMs metadata or no until_ms offset")
    except ValueError as error:
        raise CheckpointUnreadable(f"{path}: {error}") from None
    watermark = metadata.get("batchWatermarkMs")
    # Spark writes 0 before any watermark exists; the epoch is never a sealed horizon's read end.
    return DetectorProgress(
        batch_id=batch,
        committed=batch in _batch_ids(fs, f"{root}/commits"),
        read_until_ms=offset["until_ms"],
        watermark_ms=watermark if watermark else None,
    )


def _batch_ids(fs, folder: str) -> list[int]:
    """Batch ids of a checkpoint log folder: its files named by a number (Spark also keeps hidden
    checksum and temporary files there); none when the folder does not exist."""
    from pyarrow.fs import FileSelector

    infos = fs.get_file_info(FileSelector(folder, allow_not_found=True))
    return [int(info.base_name) for info in infos if info.base_name.isdigit()]


def _file_system(path: str):
    """A pyarrow file system and the path on it: local, or S3 with lake_storage's settings."""
    from urllib.parse import urlsplit

    from pyarrow.fs import LocalFileSystem, S3FileSystem

    from connectors.lake_storage import S3Access, is_s3

    if not is_s3(path):
        return LocalFileSystem(), path.removeprefix("file://").rstrip("/")
    access = S3Access.from_environment()
    endpoint = urlsplit(access.endpoint) if access.endpoint else None
    fs = S3FileSystem(
        access_key=access.access_key_id,
        secret_key=access.secret_access_key,
        session_token=access.session_token,
        region=access.region,
        endpoint_override=endpoint.netloc if endpoint else None,
        scheme=endpoint.scheme if endpoint else "https",
        force_virtual_addressing=False,
    )
    url = urlsplit(path)
    return fs, f"{url.netloc}{url.path}".rstrip("/")
