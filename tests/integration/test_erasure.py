"""Erasure end to end on a real broker, Spark and Delta (issue 40): a device's records leave events,
late and quarantine (the raw bytes of a record that never decoded too), are listed in the erasures
table with who asked and why, and stay erased: a recovery of the whole partition, a re-drive of
their quarantine reason and a backfill compared with live (the daily reconciliation) write none
of them again, the quality run counts them as erased (its damage scan names the erasure's
DELETEs), every partition OK, and the offline-device detector forgets the device.

The lake: two partitions, five devices, three hours. A sixth of the records lack ``firmware``,
which the stream first requires (quarantined, missing_field) and then does not: a re-drive moves
them, so their quarantine row stays as history beside their events or late row. A few have a
firmware of the wrong type and stay quarantined (wrong_type): all of them the erased device's,
whose raw JSON is all that names it.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from harness.persist_job import (
    backfill_request_args,
    produce,
    run_backfill,
    run_erase,
    run_in_process,
    run_recover,
    run_redrive,
    write_stream_config,
)
from harness.quality_run import run_quality, statuses

pytestmark = pytest.mark.integration

HOUR_MS = 3_600_000
ERASED = "d-3"


def _firmware_required(conf: Path, required: bool) -> None:
    document = yaml.safe_load(conf.read_text())
    document["streams"]["telemetry"]["payload"]["event_time_format"] = "epoch_millis"
    document["streams"]["telemetry"]["payload"]["fields"]["firmware"] = {"type": "string", "required": required}
    conf.write_text(yaml.safe_dump(document))


def _rows(spark, lake: Path, table: str) -> dict[tuple[int, int], str | None]:
    """(partition, offset) → device_id (None in quarantine, where nothing was decoded)."""
    frame = spark.read.format("delta").load(str(lake / table))
    device = "device_id" if "device_id" in frame.columns else None
    return {
        (r.source_partition, r.source_offset): (r[device] if device else None)
        for r in frame.select("source_partition", "source_offset", *([device] if device else [])).collect()
    }


def _periods(spark, lake: Path) -> set[tuple]:
    """The live detector's periods: (device_id, offline_at, online_at)."""
    return {tuple(r) for r in spark.read.format("delta").load(str(lake / "offline_devices")).collect()}


def test_an_erased_device_leaves_every_table_and_no_job_writes_it_again(kafka_broker, spark, tmp_path):
    from spark_jobs.offline_devices.job import run_request
    from spark_jobs.persist.job import main as persist
    from tidemark.offline_devices_request import OfflineDevicesRequest
    from tidemark.stream_config import load_stream

    topic = "erasure"
    kafka_broker.create_topic(topic, 2)
    now = int(time.time() * 1000)
    base = now - now % HOUR_MS - 3 * HOUR_MS
    records, device_of, offsets = [], {}, Counter()
    for i in range(160):
        at, partition, device = base + i * 60_000, i % 2, f"d-{i % 5}"
        if device == ERASED and 40 <= i < 90:
            continue  # silent for 50 minutes: the offline-device detector reports it offline
        document = {"device_id": device, "event_time": at, "lat": 52.0, "lon": 4.9, "battery": 50}
        if i % 6 != 1:
            document["firmware"] = 7 if i % 20 == 3 else "1.0"
        device_of[(partition, offsets[partition])] = device
        offsets[partition] += 1
        records.append((partition, json.dumps(document).encode(), at))
    produce(kafka_broker.bootstrap, topic, records)
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, 2)
    _firmware_required(conf, True)
    argv = ["--stream", "telemetry", "--conf", str(conf), "--mode", "available_now"]
    assert run_in_process(persist, argv, tmp_path / "persist.log") == 0, (tmp_path / "persist.log").read_text()[-3000:]
    _firmware_required(conf, False)
    code, moved = run_redrive(conf, tmp_path, "before", reason="missing_field")
    assert code == 0 and moved["moved_to_events"] + moved["moved_to_late"] > 0, moved

    lake = tmp_path / "lake" / "telemetry"
    before = {table: _rows(spark, lake, table) for table in ("events", "late", "quarantine")}
    held = {
        key: ",".join(table for table in ("events", "late", "quarantine") if key in before[table])
        for key, device in device_of.items()
        if device == ERASED
    }
    assert {"quarantine", "events,quarantine"} <= set(held.values()) or {"quarantine", "late,quarantine"} <= set(
        held.values()
    ), held

    # A quality run first: the next one reads the Delta log from the versions this one checked.
    assert statuses(run_quality(conf, tmp_path / "home", tmp_path, "before_erasure")) == {0: "OK", 1: "OK"}
    stream = load_stream(conf, "telemetry")
    detected = run_request(spark, stream, OfflineDevicesRequest("live"))
    periods = _periods(spark, lake)
    assert ERASED in {device for device, _, _ in periods} and not detected.rebuilt_after_erasure, periods
    code, erased = run_erase(conf, tmp_path, "first", where=f"device_id = '{ERASED}'", requested_by="ana", reason="T-1")
    assert code == 0, (tmp_path / "erase-first.log").read_text()[-3000:]

    # The exact rows: each of the device's records once in the erasures table, where it was, who
    # asked and why; the DELETEs' own counts; no row of the device left anywhere.
    listed = spark.read.format("delta").load(str(lake / "erasures")).collect()
    assert {(r.source_partition, r.source_offset): r.found_in for r in listed} == held
    assert {(r.predicate, r.requested_by, r.reason, r.erasure_id) for r in listed} == {
        (f"device_id = '{ERASED}'", "ana", "T-1", erased["erasure_id"])
    }
    assert erased["records"] == len(held) and erased["deleted"] == {
        table: sum(1 for key in held if key in before[table]) for table in ("events", "late", "quarantine")
    }, erased
    after = {table: _rows(spark, lake, table) for table in ("events", "late", "quarantine")}
    for table, rows in after.items():
        assert not set(rows) & set(held), table
        assert {key: rows[key] for key in rows} == {key: d for key, d in before[table].items() if key not in held}

    # The quality run: every partition OK, the erased records counted as held, the DELETEs named.
    result = run_quality(conf, tmp_path / "home", tmp_path, "after_erasure")
    assert statuses(result) == {0: "OK", 1: "OK"}, result["partitions"]
    assert {d["kind"] for d in result["damage"]} == {"erasure"}, result["damage"]
    assert all(h["persisted"] == h["data_records"] for h in result["hours_checked"]), result["hours_checked"]

    # No job writes them again: a recovery of the whole of partition 0 and a re-drive of the reason
    # its records were quarantined for insert nothing; a backfill into a shadow set equals live.
    code = run_recover(conf, 0, f"0-{offsets[0]}", log=tmp_path / "recover.log", result=tmp_path / "recover.json")
    assert code == 0, (tmp_path / "recover.log").read_text()[-3000:]
    assert json.loads((tmp_path / "recover.json").read_text())["inserted"] == 0
    code, again = run_redrive(conf, tmp_path, "after", reason="wrong_type")
    assert code == 0 and again["moved_to_events"] == again["moved_to_late"] == 0
    assert again["candidates"] == 0, "every wrong_type record was the erased device's"
    window = [time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime(ms / 1000)) for ms in (base, base + 3 * HOUR_MS)]
    code = run_backfill(
        conf,
        *backfill_request_args(conf, *window, target="shadow", shadow_name="after_erasure", compare=True),
        log=tmp_path / "backfill.log",
    )
    assert code == 0, (tmp_path / "backfill.log").read_text()[-4000:]
    for table, rows in after.items():
        assert _rows(spark, lake, table) == rows, f"{table} unchanged by the jobs that re-read the log"

    # The offline-device detector forgets the device: its next live run starts over from the lake
    # as it is now, and reports what it reported, without the device.
    detected = run_request(spark, stream, OfflineDevicesRequest("live"))
    assert detected.rebuilt_after_erasure, detected
    assert _periods(spark, lake) == {p for p in periods if p[0] != ERASED}
    from connectors.offline_devices_horizon import erasure_versions

    version, built_from = erasure_versions(stream)
    assert version == built_from is not None, "rebuilt once: the periods say which erasures they were built from"
