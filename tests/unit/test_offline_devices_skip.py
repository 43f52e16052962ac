"""The offline-device detector's Spark-free look: the decision (tidemark.offline_devices_progress)
and its reader (connectors.offline_devices_horizon) against real files — a seals table written
with deltalake and checkpoint files in the layout Spark 4 writes (copied from a real run of the
detector: offsets/<id> = "v1", the batch metadata, the SealedEventsSource offset; commits/<id>)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from connectors.offline_devices_horizon import (
    CheckpointUnreadable,
    look_before_detecting,
    read_detector_progress,
    read_sealed_horizon_ms,
)
from tidemark.offline_devices_progress import DetectorProgress, look_for_sealed_hours

REPO = Path(__file__).resolve().parents[2]
HOUR = 3_600_000
T = 1_795_564_800_000  # 2026-11-25T00:00:00Z


def progress(read_until=T + 4 * HOUR, watermark=T + 4 * HOUR - 1, committed=True, batch=16):
    return DetectorProgress(batch, committed, read_until, watermark)


# -- the decision ----------------------------------------------------------------------------


def test_nothing_new_when_the_last_committed_batch_read_the_horizon_and_fired_its_timers():
    look = look_for_sealed_hours(T + 4 * HOUR, progress())
    assert look.nothing_new
    assert look.reason == (
        "sealed horizon 2026-11-25T04:00:00.000Z already read by the detector's last run "
        "(batch 16, read up to 2026-11-25T04:00:00.000Z, its timers fired)"
    )
    assert (look.sealed_horizon_ms, look.read_until_ms) == (T + 4 * HOUR, T + 4 * HOUR)


def test_a_newly_sealed_hour_runs_the_job():
    look = look_for_sealed_hours(T + 5 * HOUR, progress())
    assert not look.nothing_new
    assert (
        look.reason
        == "hours are sealed up to 2026-11-25T05:00:00.000Z, the detector read up to 2026-11-25T04:00:00.000Z"
    )


@pytest.mark.parametrize(
    ("horizon", "state", "reason"),
    [
        (T + HOUR, None, "the detector's checkpoint holds no batch yet: its first run starts the stream"),
        (
            T + 4 * HOUR,
            progress(committed=False),
            "the detector's batch 16 is planned, not committed: the job replays it",
        ),
        (T + 4 * HOUR, progress(read_until=None, watermark=None), "the detector's batch 16 read no slice yet"),
        # The last slice's batch committed, the batch that fires its timers not run yet (a run
        # stopped between them): the next run opens periods, so it must run.
        (
            T + 4 * HOUR,
            progress(watermark=T + 4 * HOUR - 15 * 60_000 - 1),
            "the detector read up to 2026-11-25T04:00:00.000Z but its watermark is 2026-11-25T03:44:59.999Z: "
            "the timers of the last slice have not fired",
        ),
        (
            T + 4 * HOUR,
            progress(watermark=None),
            "the detector read up to 2026-11-25T04:00:00.000Z but its watermark is none: the timers of the last slice have not fired",
        ),
        (
            None,
            progress(),
            "the seals table holds no sealed hour, yet the detector read up to 2026-11-25T04:00:00.000Z",
        ),
    ],
)
def test_what_it_cannot_be_sure_of_runs_the_job(horizon, state, reason):
    look = look_for_sealed_hours(horizon, state)
    assert (look.nothing_new, look.reason) == (False, reason)


# -- the reader ------------------------------------------------------------------------------


@pytest.fixture
def stream(tmp_path, monkeypatch):
    from tidemark.stream_config import load_stream

    monkeypatch.setenv("TIDEMARK_LAKE_ROOT", str(tmp_path / "lake"))
    monkeypatch.setenv("TIDEMARK_CHECKPOINT_ROOT", str(tmp_path / "checkpoints"))
    return load_stream(str(REPO / "conf" / "streams.yaml"), "telemetry")


def seal(stream, *hours_ms):
    import pyarrow as pa
    from deltalake import write_deltalake

    stamps = pa.array([datetime.fromtimestamp(h / 1000, UTC) for h in hours_ms], pa.timestamp("us", tz="UTC"))
    table = pa.table(
        {
            "stream": [stream.name] * len(hours_ms),
            "hour": stamps,
            "sealed_at": stamps,
            "global_watermark": stamps,
            "micro_batch_id": pa.array([0] * len(hours_ms), pa.int64()),
        }
    )
    write_deltalake(stream.table_path("seals"), table, mode="append")


def write_batch(checkpoint: Path, batch: int, until_ms: int | None, watermark_ms: int, committed: bool = True):
    """A micro-batch as Spark 4 records it for the detector's query (metadata trimmed to the field read)."""
    (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
    (checkpoint / "commits").mkdir(parents=True, exist_ok=True)
    metadata = {"batchWatermarkMs": watermark_ms, "batchTimestampMs": 1795678656074, "conf": {}}
    offset = {"from_ms": None if until_ms is None else until_ms - 900_000, "until_ms": until_ms, "horizon_ms": until_ms}
    (checkpoint / "offsets" / str(batch)).write_text(f"v1\n{json.dumps(metadata)}\n{json.dumps(offset)}")
    (checkpoint / "offsets" / f".{batch}.crc").write_bytes(b"crc")
    if committed:
        (checkpoint / "commits" / str(batch)).write_text(f'v1\n{{"nextBatchWatermarkMs":{watermark_ms}}}')


def test_the_sealed_horizon_is_the_end_of_the_last_sealed_hour(stream):
    seal(stream, T, T + 2 * HOUR, T + HOUR)
    assert read_sealed_horizon_ms(stream) == T + 3 * HOUR


def test_the_checkpoints_last_batch_is_read_by_number_not_by_name(stream):
    checkpoint = Path(stream.checkpoint_path("offline_devices"))
    for batch in range(12):  # "9" sorts after "11" as text
        write_batch(checkpoint, batch, T + (batch + 1) * 900_000, T + batch * 900_000 - 1)
    write_batch(checkpoint, 12, T + 12 * 900_000, T + 12 * 900_000 - 1, committed=False)
    assert read_detector_progress(str(checkpoint)) == DetectorProgress(12, False, T + 3 * HOUR, T + 3 * HOUR - 1)


def test_a_checkpoint_that_does_not_exist_has_no_progress(stream):
    assert read_detector_progress(stream.checkpoint_path("offline_devices")) is None


def test_the_look_says_nothing_new_once_the_horizon_is_read_and_something_after_a_new_seal(stream):
    seal(stream, T, T + HOUR)
    checkpoint = Path(stream.checkpoint_path("offline_devices"))
    write_batch(checkpoint, 7, T + 2 * HOUR, T + 2 * HOUR - 900_001)
    write_batch(checkpoint, 8, T + 2 * HOUR, T + 2 * HOUR - 1)  # the timer batch
    assert look_before_detecting(stream).nothing_new
    seal(stream, T + 2 * HOUR)
    look = look_before_detecting(stream)
    assert (look.nothing_new, look.sealed_horizon_ms) == (False, None)
    assert look.reason.startswith("hours are sealed up to 2026-11-25T03:00:00.000Z")


def test_a_seals_table_that_cannot_be_read_runs_the_job_and_says_why(stream):
    seal(stream, T)
    log = Path(stream.table_path("seals")) / "_delta_log"
    for commit in log.glob("*.json"):
        commit.write_text("not a delta commit")
    look = look_before_detecting(stream)
    assert not look.nothing_new
    assert look.reason.startswith(f"could not read the seals table at {stream.table_path('seals')} (")
    assert "\n" not in look.reason and "\x1b" not in look.reason  # one log line


def test_an_error_is_told_in_one_short_line():
    from connectors.error_line import one_line

    refused = OSError("Kernel error -> lacked privileges\n  \x1b[31m↳\x1b[0m 403 Forbidden\n  <StringToSign>...")
    assert one_line(refused) == "OSError: Kernel error -> lacked privileges"
    assert one_line(ValueError("x" * 400)) == "ValueError: " + "x" * 287 + "…"
    assert one_line(TimeoutError()) == "TimeoutError"


def test_a_missing_seals_table_runs_the_job(stream):
    write_batch(Path(stream.checkpoint_path("offline_devices")), 0, T + HOUR, T + HOUR - 1)
    look = look_before_detecting(stream)
    assert not look.nothing_new
    assert look.reason == "the seals table holds no sealed hour, yet the detector read up to 2026-11-25T01:00:00.000Z"


@pytest.mark.parametrize(
    "text",
    ["v2\n{}\n{}", "v1\n{}", 'v1\n{}\n{"partitions": {}}', "v1\nnot json\n{}", "\x00\xff garbage"],
)
def test_a_checkpoint_file_spark_would_not_write_runs_the_job_naming_it(stream, text):
    seal(stream, T)
    checkpoint = Path(stream.checkpoint_path("offline_devices"))
    write_batch(checkpoint, 3, T + HOUR, T + HOUR - 1)
    (checkpoint / "offsets" / "3").write_text(text)
    with pytest.raises(CheckpointUnreadable, match=f"{checkpoint}/offsets/3: "):
        read_detector_progress(str(checkpoint))
    look = look_before_detecting(stream)
    assert not look.nothing_new
    assert look.reason.startswith(
        f"could not read the detector's checkpoint at {checkpoint} (CheckpointUnreadable: {checkpoint}/offsets/3: "
    )


def test_the_detector_is_rebuilt_once_per_erasure_it_was_not_built_from():
    from tidemark.offline_devices_progress import erasures_to_forget

    assert not erasures_to_forget(None, None), "no erasure ever"
    assert erasures_to_forget(0, None), "the first erasure: the periods were built before it"
    assert erasures_to_forget(3, 1) and not erasures_to_forget(3, 3)
