"""The offline-device detector is deterministic: live in small slices while one partition is hours
behind, and two backfills of the same range at full speed, give the same table, row for row, and
it is the ground truth computed here in plain Python from the records produced.

Real broker, the persist job as its own process (it fills the lake: events, seals), the detector
in-process on the session's Spark. Records carry no key and go to partitions round-robin, so one
device's records are spread over all four; the log timestamps are not event times, so the persist
job reads by record count, not aligned, and the chaos switch freezes partition 3 for one run: the
other partitions race hours ahead of it, while G, held by partition 3, seals nothing further.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from harness.persist_job import OFFLINE_DEVICES, produce, run_persist, telemetry_value, write_stream_config

pytestmark = pytest.mark.integration

SECOND = 1000
MINUTE = 60_000
HOUR = 3_600_000
OFFLINE_AFTER = 30 * MINUTE
PARTITIONS = 4
# Yesterday (UTC): every event time of the test is in the past, well before the future guard.
DAY = (int(time.time() * 1000) // (24 * HOUR) - 1) * 24 * HOUR


def at(clock: str) -> int:
    """'17:30:15' or '19:29:59.999' on DAY, as ms since the epoch."""
    hours, minutes, seconds = clock.split(":")
    return DAY + int(hours) * HOUR + int(minutes) * MINUTE + round(float(seconds) * SECOND)


def every(step_ms: int, start: str, end: str) -> list[int]:
    return list(range(at(start), at(end), step_ms))


# Devices with known offline gaps (times of day; every device reports from 14:00 on).
DEVICES = {
    # The seed article's scooter: offline at 18:00:25, online at 18:00:32.
    "scooter-seed": every(5 * MINUTE, "14:00:00", "17:30:00")
    + [at("17:30:15"), at("17:30:20"), at("17:30:25"), at("18:00:32")]
    + every(5 * MINUTE, "18:05:00", "21:00:00"),
    # Two hours silent: offline 15:40, online 17:10 (after the first horizon, 17:00: open until then).
    "scooter-gap": every(4 * MINUTE, "14:00:00", "15:12:00") + every(4 * MINUTE, "17:10:00", "21:00:00"),
    # Gaps of exactly 30 minutes: never offline.
    "scooter-exact": every(30 * MINUTE, "14:00:00", "21:00:00"),
    # Gaps of 30 minutes and 1 ms: offline every time, for 1 ms.
    "scooter-flicker": every(30 * MINUTE + 1, "14:00:00", "21:00:00"),
    # Stops at 16:02 and never comes back: still offline (since 16:32) at the end.
    "scooter-gone": every(2 * MINUTE, "14:00:00", "16:04:00"),
    # Deadlines at the last horizon's edge (20:00): 19:59:59.999 is reached, 20:00:00.000 is not.
    "scooter-edge-in": every(10 * MINUTE, "14:00:00", "19:30:00") + [at("19:29:59.999"), at("20:45:00")],
    "scooter-edge-out": every(10 * MINUTE, "14:00:00", "19:30:00") + [at("19:30:00"), at("20:45:00")],
    # Silent across the hours partition 3 is frozen over, and across slice ends.
    "scooter-night": every(3 * MINUTE, "14:00:00", "17:44:00") + every(3 * MINUTE, "19:01:00", "21:00:00"),
}
# Steady reporters around them, so that every slice has records of other devices.
DEVICES.update({f"scooter-busy-{n}": every(3 * MINUTE, f"14:00:{n:02d}", "21:00:00") for n in range(12)})


def records_by_event_time() -> list[tuple[str, int]]:
    return sorted(((device, t) for device, times in DEVICES.items() for t in times), key=lambda r: (r[1], r[0]))


def ground_truth(horizon_ms: int, report_from_ms: int | None = None) -> list[tuple[str, int, int | None]]:
    """Offline periods known once every record before ``horizon_ms`` is: for consecutive records
    t1 < t2 of a device with t2 - t1 > 30 min, (device, t1 + 30 min, t2), t2 left out (None) when
    it is not before the horizon; and for a device's last record t before the horizon with
    t + 30 min before the horizon, (device, t + 30 min, None). Written from the definition, with
    no tidemark code."""
    periods = []
    for device, times in DEVICES.items():
        known = sorted(t for t in set(times) if t < horizon_ms)
        for earlier, later in zip(known, known[1:] + [None]):
            offline_at = earlier + OFFLINE_AFTER
            if later is not None and later - earlier > OFFLINE_AFTER:
                periods.append((device, offline_at, later))
            elif later is None and offline_at < horizon_ms:
                periods.append((device, offline_at, None))
    return sorted(p for p in periods if report_from_ms is None or p[1] >= report_from_ms)


def produce_window(bootstrap: str, topic: str, start_ms: int, end_ms: int, log_time_ms: int) -> dict[int, list[int]]:
    """Produce the records with event time in [start_ms, end_ms), round-robin over the partitions
    in event-time order, all with the same log timestamp (not their event time). Returns the
    event times produced per partition."""
    window = [r for r in records_by_event_time() if start_ms <= r[1] < end_ms]
    placed = [(i % PARTITIONS, device, t) for i, (device, t) in enumerate(window)]
    produce(bootstrap, topic, [(partition, telemetry_value(device, t), log_time_ms) for partition, device, t in placed])
    return {p: [t for partition, _, t in placed if partition == p] for p in range(PARTITIONS)}


def test_live_in_small_slices_and_two_backfills_give_the_ground_truth_row_for_row(kafka_broker, spark, tmp_path):
    from connectors.offline_devices_horizon import look_before_detecting
    from spark_jobs.offline_devices.job import run_request
    from tidemark.offline_devices_request import OfflineDevicesRequest
    from tidemark.stream_config import load_stream

    topic = "offline_devices"
    kafka_broker.create_topic(topic, PARTITIONS)
    conf = _stream_config(tmp_path, kafka_broker.bootstrap, topic)
    stream = load_stream(conf, "telemetry")
    lake = tmp_path / "lake" / "telemetry"
    now_ms = int(time.time() * 1000)
    expected_seed = ("scooter-seed", at("18:00:25"), at("18:00:32"))
    assert expected_seed in ground_truth(at("20:00:00"))

    # Up to 17:30, all partitions persisted: G ≈ 17:29:30 seals up to hour 16 (16:00 + 1h + 10m).
    first = produce_window(kafka_broker.bootstrap, topic, at("14:00:00"), at("17:30:00"), now_ms)
    run_persist(conf, "--mode", "available_now", log=tmp_path / "persist-1.log")
    live_1 = run_request(spark, stream, OfflineDevicesRequest("live"))
    assert (live_1.read_until, live_1.horizon) == (_iso(at("17:00:00")), _iso(at("17:00:00")))
    assert _table(spark, lake / "offline_devices") == ground_truth(at("17:00:00"))

    # 17:30 to 21:00 with partition 3 frozen: partitions 0-2 race 3.5 hours ahead of it.
    second = produce_window(kafka_broker.bootstrap, topic, at("17:30:00"), at("21:00:00"), now_ms)
    run_persist(
        conf,
        "--mode",
        "available_now",
        log=tmp_path / "persist-2.log",
        environment={"TIDEMARK_CHAOS_FREEZE": "telemetry:3"},
    )
    # Partitions 0-2 were read to the end, partition 3 not past 17:30.
    assert _event_times(spark, lake) == sorted(
        t for p in range(PARTITIONS) for t in first[p] + (second[p] if p != 3 else [])
    )
    assert max(second[0] + second[1] + second[2]) - max(first[3]) > 3 * HOUR
    # The Spark-free look before a scheduled run agrees: no hour sealed since the last run.
    assert look_before_detecting(stream).nothing_new
    live_2 = run_request(spark, stream, OfflineDevicesRequest("live"))
    assert live_2.slices == 0, "nothing new is sealed while partition 3 holds G"
    # A run that read no slice says where the detector stands, not None.
    assert (live_2.read_until, live_2.horizon) == (_iso(at("17:00:00")), _iso(at("17:00:00")))
    # Nothing past the sealed horizon, though the lake holds records hours past it.
    assert _table(spark, lake / "offline_devices") == ground_truth(at("17:00:00"))

    # Partition 3 catches up: G ≈ 20:59:30 seals up to hour 19.
    run_persist(conf, "--mode", "available_now", log=tmp_path / "persist-3.log")
    assert _event_times(spark, lake) == sorted(t for p in range(PARTITIONS) for t in first[p] + second[p])
    assert spark.read.format("delta").load(str(lake / "late")).count() == 0
    live_3 = run_request(spark, stream, OfflineDevicesRequest("live"))
    assert (live_3.read_until, live_3.slices) == (_iso(at("20:00:00")), 6)  # 30-minute slices from 17:00
    assert look_before_detecting(stream).nothing_new, "the real checkpoint read Spark-free: nothing new"
    live = _table(spark, lake / "offline_devices")

    # The same range twice more, each a backfill at full speed (6-hour slices) with its own output.
    backfills = []
    for number in (1, 2):
        output = str(tmp_path / f"backfill-{number}")
        summary = run_request(spark, stream, OfflineDevicesRequest("backfill", at("14:00:00"), at("20:00:00"), output))
        assert (summary.slices, summary.cut_at_horizon) == (2, False)
        backfills.append(_table(spark, Path(output)))

    truth = ground_truth(at("20:00:00"))
    assert expected_seed in live
    assert live == truth
    assert backfills[0] == truth
    assert backfills[1] == truth

    # A backfill that starts mid-range warms up on the half hour before and agrees with live there.
    output = str(tmp_path / "backfill-mid")
    run_request(spark, stream, OfflineDevicesRequest("backfill", at("17:00:00"), at("20:00:00"), output))
    assert _table(spark, Path(output)) == ground_truth(at("20:00:00"), report_from_ms=at("17:00:00"))


def _stream_config(tmp_path: Path, bootstrap: str, topic: str) -> Path:
    conf = write_stream_config(tmp_path, bootstrap, topic, PARTITIONS, max_records_per_batch=2000)
    document = yaml.safe_load(conf.read_text())
    stream = document["streams"]["telemetry"]
    # Log timestamps are not event times: record-count slices, so nothing keeps partitions aligned.
    stream["source"]["log_timestamp_is_event_time"] = False
    stream["offline_devices"] = dict(OFFLINE_DEVICES)
    conf.write_text(yaml.safe_dump(document))
    return conf


def _table(spark, path: Path) -> list[tuple[str, int, int | None]]:
    rows = (
        spark.read.format("delta")
        .load(str(path))
        .selectExpr("device_id", "unix_millis(offline_at) AS offline_at", "unix_millis(online_at) AS online_at")
        .collect()
    )
    return sorted((r.device_id, r.offline_at, r.online_at) for r in rows)


def _event_times(spark, lake: Path) -> list[int]:
    return sorted(
        r[0]
        for r in spark.read.format("delta").load(str(lake / "events")).selectExpr("unix_millis(event_time)").collect()
    )


def _iso(epoch_ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch_ms // 1000)) + f".{epoch_ms % 1000:03d}Z"
